import { Injectable } from '@nestjs/common';
import { TtlCache } from '../common/cache/ttl-cache';
import { AccountsRepository, AccountState } from './accounts.repository';

export type { AccountState } from './accounts.repository';

// A deactivation takes effect within this many milliseconds on every API process;
// the process that made the change forgets its cache at once.
const CACHE_MS = 3000;
const MAX_ENTRIES = 10_000;

/**
 * `read()` kept CACHE_MS from when it was asked (concurrent misses share one read): a change made
 * during the read is seen within CACHE_MS.
 */
function fresh<V>(cache: TtlCache<V>, key: string, read: () => Promise<V>): Promise<V> {
  return cache.load(key, async () => {
    const asked = Date.now();
    const value = await read();
    cache.set(key, value, asked + CACHE_MS);
    return value;
  });
}

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

  get(userId: string): Promise<AccountState | null> {
    return fresh(this.cache, userId, () => this.accounts.findById(userId));
  }

  /**
   * Whether a clinic is active, cached as briefly as accounts: a share's viewer tokens read a study
   * of that clinic whoever created the share (a super admin's account carries no clinic's state).
   */
  clinicActive(tenantId: string): Promise<boolean> {
    return fresh(this.clinics, tenantId, () => this.accounts.clinicActive(tenantId));
  }

  /** Called after a write that changes users or tenants. */
  forgetAll(): void {
    this.cache.clear();
    this.clinics.clear();
  }
}
