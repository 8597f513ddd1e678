import { Injectable } from '@nestjs/common';
import { TtlCache } from '../common/cache/ttl-cache';
import { AccountsRepository, AccountState } from './accounts.repository';

export type { AccountState } from './accounts.repository';

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
  /** null: no such user (cached too). */
  private readonly cache = new TtlCache<AccountState | null>(MAX_ENTRIES);
  private readonly clinics = new TtlCache<boolean>(MAX_ENTRIES);

  constructor(private readonly accounts: AccountsRepository) {}

  /** The cached state while it is fresh (null: no such user), else undefined: ask `get`. */
  peek(userId: string): AccountState | null | undefined {
    return this.cache.get(userId);
  }

  async get(userId: string): Promise<AccountState | null> {
    const cached = this.peek(userId);
    if (cached !== undefined) return cached;
    const now = Date.now();
    const state = await this.accounts.findById(userId);
    this.cache.set(userId, state, now + CACHE_MS);
    return state;
  }

  /**
   * Whether a clinic is active, cached as briefly as accounts: a share's viewer tokens read a study
   * of that clinic whoever created the share (a super admin's account carries no clinic's state).
   */
  clinicActive(tenantId: string): Promise<boolean> {
    return this.clinics.load(tenantId, async () => {
      const now = Date.now();
      const active = await this.accounts.clinicActive(tenantId);
      this.clinics.set(tenantId, active, now + CACHE_MS);
      return active;
    });
  }

  /** Called after a write that changes users or tenants. */
  forgetAll(): void {
    this.cache.clear();
    this.clinics.clear();
  }
}
