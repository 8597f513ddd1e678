import { Injectable } from '@nestjs/common';
import { TenantsRepository } from '../../clinics';
import type { AuthUser } from '../../common/auth/auth-user';
import { Errors } from '../../common/errors/api-errors';
import { SettingsDto } from './settings.dto';

/** The caller's own clinic: name and logo. A caller without a clinic (a super admin) gets 404. */
@Injectable()
export class SettingsService {
  constructor(private readonly tenants: TenantsRepository) {}

  async get(user: AuthUser): Promise<SettingsDto> {
    const tenant = user.tenant_id ? await this.tenants.settings(user.tenant_id) : null;
    if (!tenant) throw Errors.notFound('Tenant');
    return { id: tenant.id, name: tenant.name, logo: tenant.logo };
  }

  async setLogo(user: AuthUser, logo: string | null): Promise<SettingsDto> {
    if (!user.tenant_id) throw Errors.notFound('Tenant');
    const tenant = await this.tenants.setLogo(user.tenant_id, logo);
    if (!tenant) throw Errors.notFound('Tenant');
    return { id: tenant.id, name: tenant.name, logo: tenant.logo };
  }
}
