import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import type { AuthUser } from '../../common/auth/auth-user';
import { Errors } from '../../common/errors/api-errors';
import { Tenant } from '../../database/entities';
import { SettingsDto } from './settings.dto';

/** The caller's own clinic: name and logo. A caller without a clinic (a super admin) gets 404. */
@Injectable()
export class SettingsService {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async get(user: AuthUser): Promise<SettingsDto> {
    const tenant = user.tenant_id
      ? await this.dataSource.getRepository(Tenant).findOne({
          select: { id: true, name: true, logo: true },
          where: { id: user.tenant_id },
        })
      : null;
    if (!tenant) throw Errors.notFound('Tenant');
    return { id: tenant.id, name: tenant.name, logo: tenant.logo };
  }

  async setLogo(user: AuthUser, logo: string | null): Promise<SettingsDto> {
    if (!user.tenant_id) throw Errors.notFound('Tenant');
    const [rows]: [SettingsDto[], number] = await this.dataSource.query(
      `UPDATE tenants SET logo = $2, updated_at = now() WHERE id = $1 RETURNING id, name, logo`,
      [user.tenant_id, logo],
    );
    if (!rows[0]) throw Errors.notFound('Tenant');
    return { id: rows[0].id, name: rows[0].name, logo: rows[0].logo };
  }
}
