import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';

export interface AccountState {
  id: string;
  email: string;
  name: string;
  tenant_id: string | null;
  unit_id: string | null;
  is_super_admin: boolean;
  is_tenant_admin: boolean;
  /** The user's own flag and, when linked, the tenant's flag: both must be true. */
  usable: boolean;
}

// A deactivation takes effect within this many milliseconds on every API process;
// the process that made the change forgets its cache at once.
const CACHE_MS = 3000;
const MAX_ENTRIES = 10_000;

/**
 * The account's current state, read on every authenticated request through a short cache, so a
 * deactivated user or tenant loses access at once and a moved user gets their new scope.
 */
@Injectable()
export class AccountStatusService {
  private readonly cache = new Map<string, { state: AccountState | null; until: number }>();

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {}

  /** The cached state while it is fresh (null: no such user), else undefined: ask `get`. */
  peek(userId: string): AccountState | null | undefined {
    const hit = this.cache.get(userId);
    return hit && hit.until > Date.now() ? hit.state : undefined;
  }

  async get(userId: string): Promise<AccountState | null> {
    const cached = this.peek(userId);
    if (cached !== undefined) return cached;
    const now = Date.now();
    const rows: Array<AccountState & { user_active: boolean; tenant_active: boolean | null }> =
      await this.dataSource.query(
        `SELECT u.id, u.email, u.name, u.tenant_id, u.unit_id, u.is_super_admin, u.is_tenant_admin,
                u.is_active AS user_active, t.is_active AS tenant_active
           FROM users u LEFT JOIN tenants t ON t.id = u.tenant_id
          WHERE u.id = $1`,
        [userId],
      );
    const row = rows[0];
    const state: AccountState | null = row
      ? {
          id: row.id,
          email: row.email,
          name: row.name,
          tenant_id: row.tenant_id,
          unit_id: row.unit_id,
          is_super_admin: row.is_super_admin,
          is_tenant_admin: row.is_tenant_admin,
          usable: row.user_active && (row.tenant_id === null || row.tenant_active === true),
        }
      : null;
    if (this.cache.size >= MAX_ENTRIES) this.cache.clear();
    this.cache.set(userId, { state, until: now + CACHE_MS });
    return state;
  }

  /** Called after a write that changes users or tenants. */
  forgetAll(): void {
    this.cache.clear();
  }
}
