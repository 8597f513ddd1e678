import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { Identity, identityOf } from '../common/auth/auth-user';

/** An account as sign-in and every authenticated request see it. */
export interface AccountState extends Identity {
  /** The user's own flag and, when linked, the tenant's flag: both must be true. */
  usable: boolean;
}

type AccountRow = Identity & { user_active: boolean; tenant_active: boolean | null };

/**
 * The user and the state of its tenant, in one read (users LEFT JOIN tenants); `extra` adds
 * columns (the password hash, for sign-in only).
 */
const accountSelect = (extra = '') => `
  SELECT u.id, u.email, u.name, u.tenant_id, u.unit_id, u.is_super_admin, u.is_tenant_admin,
         u.is_active AS user_active, t.is_active AS tenant_active${extra}
    FROM users u LEFT JOIN tenants t ON t.id = u.tenant_id`;
const ACCOUNT_BY_ID = `${accountSelect()} WHERE u.id = $1`;
const SIGN_IN_BY_EMAIL = `${accountSelect(', u.password')} WHERE lower(u.email) = lower($1)`;

/**
 * Every read of a user together with its tenant (sign-in, the per-request account check, `me`), and
 * the first super admin's insert (`npm run cli -- create-super-admin`).
 */
@Injectable()
export class AccountsRepository {
  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  async findById(userId: string): Promise<AccountState | null> {
    const rows: AccountRow[] = await this.dataSource.query(ACCOUNT_BY_ID, [userId]);
    return rows[0] ? accountState(rows[0]) : null;
  }

  /** Whether the clinic exists and is active. */
  async clinicActive(tenantId: string): Promise<boolean> {
    const rows: Array<{ is_active: boolean }> = await this.dataSource.query(`SELECT is_active FROM tenants WHERE id = $1`, [
      tenantId,
    ]);
    return rows[0]?.is_active === true;
  }

  /** The account and its password hash, by email (case-insensitive), for sign-in only. */
  async findForSignIn(email: string): Promise<(AccountState & { password: string }) | null> {
    const rows: Array<AccountRow & { password: string }> = await this.dataSource.query(SIGN_IN_BY_EMAIL, [email]);
    return rows[0] ? { ...accountState(rows[0]), password: rows[0].password } : null;
  }

  /** The names of the user's tenant and unit (null where unlinked or gone). */
  async namesOf(userId: string): Promise<{ tenant_name: string | null; unit_name: string | null }> {
    const rows: Array<{ tenant_name: string | null; unit_name: string | null }> = await this.dataSource.query(
      `SELECT t.name AS tenant_name, un.name AS unit_name
         FROM users u
         LEFT JOIN tenants t ON t.id = u.tenant_id
         LEFT JOIN units un ON un.id = u.unit_id
        WHERE u.id = $1`,
      [userId],
    );
    return rows[0] ?? { tenant_name: null, unit_name: null };
  }

  /** A new active super admin (no tenant); null when the email (case-insensitive) is taken. */
  async insertSuperAdmin(name: string, email: string, passwordHash: string): Promise<string | null> {
    const rows: Array<{ id: string }> = await this.dataSource.query(
      `INSERT INTO users (name, email, password, is_super_admin, is_tenant_admin, is_active)
       VALUES ($1, $2, $3, true, false, true)
       ON CONFLICT ((lower(email))) DO NOTHING
       RETURNING id`,
      [name, email, passwordHash],
    );
    return rows[0]?.id ?? null;
  }
}

function accountState(row: AccountRow): AccountState {
  return { ...identityOf(row), usable: row.user_active && (row.tenant_id === null || row.tenant_active === true) };
}
