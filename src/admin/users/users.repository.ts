import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import { Tenant, Unit, User } from '../../database/entities';
import { rawPage, TenantUnitPageFilter } from '../../database/raw-page';
import type { AdminUserRow } from './users.dto';

export const USER_EMAIL_INDEX = 'users_email_lower_key';

export interface NewUser {
  tenant_id: string;
  unit_id: string;
  name: string;
  email: string;
  crm: string | null;
  signature: string | null;
  is_tenant_admin: boolean;
  is_active: boolean;
}

export type UserChanges = Partial<
  Pick<User, 'tenant_id' | 'unit_id' | 'name' | 'email' | 'crm' | 'signature' | 'is_tenant_admin' | 'is_active'>
>;

@Injectable()
export class UsersRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** Explicit columns: the password, remember_token and signature are never read here. */
  private rows(): SelectQueryBuilder<User> {
    return this.dataSource
      .getRepository(User)
      .createQueryBuilder('u')
      .leftJoin(Tenant, 't', 't.id = u.tenant_id')
      .leftJoin(Unit, 'un', 'un.id = u.unit_id')
      .select([
        'u.id AS id',
        'u.email AS email',
        'u.name AS name',
        'u.tenant_id AS tenant_id',
        'u.unit_id AS unit_id',
        'u.is_super_admin AS is_super_admin',
        'u.is_tenant_admin AS is_tenant_admin',
        'u.is_active AS is_active',
        'u.crm AS crm',
        'u.has_signature AS has_signature',
        'u.created_at AS created_at',
        'u.updated_at AS updated_at',
        't.name AS tenant_name',
        'un.name AS unit_name',
      ]);
  }

  page(filter: TenantUnitPageFilter): Promise<[AdminUserRow[], number]> {
    return rawPage(this.rows(), 'u', ['name', 'email'], filter);
  }

  async findRow(id: string): Promise<AdminUserRow | null> {
    return (await this.rows().where('u.id = :id', { id }).getRawOne<AdminUserRow>()) ?? null;
  }

  async emailTaken(email: string, exceptId?: string): Promise<boolean> {
    const [row]: Array<{ taken: boolean }> = await this.dataSource.query(
      `SELECT EXISTS (
         SELECT 1 FROM users WHERE lower(email) = lower($1) AND ($2::uuid IS NULL OR id <> $2::uuid)
       ) AS taken`,
      [email, exceptId ?? null],
    );
    return row.taken;
  }

  /**
   * Claims the email first and hashes the password only then, in one transaction: a concurrent
   * insert of the same email waits on the uncommitted row and is skipped by ON CONFLICT, so losers
   * of a race never pay for a bcrypt hash, no query fails (nothing is logged), and nobody ever sees
   * the row without its hash. Null when the email is taken. is_super_admin is always false: the
   * API can never create a super admin.
   */
  insert(values: NewUser, hashPassword: () => Promise<string>): Promise<string | null> {
    return this.dataSource.transaction(async (manager) => {
      const rows: Array<{ id: string }> = await manager.query(
        `INSERT INTO users (tenant_id, unit_id, name, email, password, crm, signature, is_tenant_admin, is_active, is_super_admin)
         VALUES ($1, $2, $3, $4, '', $5, $6, $7, $8, false)
         ON CONFLICT DO NOTHING RETURNING id`,
        [
          values.tenant_id,
          values.unit_id,
          values.name,
          values.email,
          values.crm,
          values.signature,
          values.is_tenant_admin,
          values.is_active,
        ],
      );
      if (!rows[0]) return null;
      await manager.query(`UPDATE users SET password = $2 WHERE id = $1`, [rows[0].id, await hashPassword()]);
      return rows[0].id;
    });
  }

  /**
   * Throws the driver's unique violation when the new email is taken meanwhile. The email goes in
   * its own statement so that a failed (and logged) query carries nothing but the email and id.
   */
  update(id: string, changes: UserChanges): Promise<void> {
    const { email, ...rest } = changes;
    return this.dataSource.transaction(async (manager) => {
      if (email !== undefined) {
        await manager.query(`UPDATE users SET email = $2 WHERE id = $1`, [id, email]);
      }
      await manager
        .getRepository(User)
        .createQueryBuilder()
        .update()
        .set({ ...rest, updated_at: () => 'now()' })
        .where('id = :id', { id })
        .execute();
    });
  }
}
