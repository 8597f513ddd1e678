import { Injectable } from '@nestjs/common';
import { StudiesRepository } from '../studies';
import { TtlCache } from '../common/cache/ttl-cache';

// A study's tenant only changes when a quarantined study is re-sent after its device is registered:
// a minute of delay is acceptable there, and it keeps PostgreSQL off the viewer's request path.
export const KNOWN_UID_TTL_MS = 60_000;
// Unknown UIDs are remembered briefly, so that a burst of requests for one does not reach PostgreSQL,
// while a study that is being ingested right now becomes viewable within seconds.
export const UNKNOWN_UID_TTL_MS = 5_000;
const MAX_ENTRIES = 50_000;

/** Study instance UID -> the tenants holding it (empty: unknown), cached in-process. */
@Injectable()
export class StudyTenantsCache {
  private readonly cache = new TtlCache<readonly string[]>(MAX_ENTRIES);
  private readonly inFlight = new Map<string, Promise<Map<string, string[]>>>();

  constructor(private readonly studies: StudiesRepository) {}

  /**
   * The tenants of each UID; one database round trip for all the UIDs not cached. `hit` tells
   * whether the answer came from the cache alone.
   */
  async tenantsOf(uids: string[]): Promise<{ tenants: Map<string, readonly string[]>; hit: boolean }> {
    const tenants = new Map<string, readonly string[]>();
    const missing: string[] = [];
    for (const uid of uids) {
      const cached = this.cache.get(uid);
      if (cached) tenants.set(uid, cached);
      else missing.push(uid);
    }
    if (missing.length === 0) return { tenants, hit: true };
    const loaded = await this.load(missing);
    for (const uid of missing) tenants.set(uid, loaded.get(uid) ?? []);
    return { tenants, hit: false };
  }

  /** The tenants of each UID when every one is cached, else undefined (then `tenantsOf`). */
  peek(uids: string[]): Map<string, readonly string[]> | undefined {
    const tenants = new Map<string, readonly string[]>();
    for (const uid of uids) {
      const cached = this.cache.get(uid);
      if (!cached) return undefined;
      tenants.set(uid, cached);
    }
    return tenants;
  }

  /** Seeds the cache (a token was just issued for this UID: its first validation should not miss). */
  remember(uid: string, tenants: string[]): void {
    this.cache.set(uid, tenants, Date.now() + (tenants.length ? KNOWN_UID_TTL_MS : UNKNOWN_UID_TTL_MS));
  }

  clear(): void {
    this.cache.clear();
  }

  /** A viewer opening a study fires many requests at once: they share one query per UID set. */
  private load(uids: string[]): Promise<Map<string, string[]>> {
    const key = uids.join('|');
    const pending = this.inFlight.get(key);
    if (pending) return pending;
    const query = this.studies
      .tenantsOfStudyUids(uids)
      .then((found) => {
        for (const uid of uids) this.remember(uid, found.get(uid) ?? []);
        return found;
      })
      .finally(() => this.inFlight.delete(key));
    this.inFlight.set(key, query);
    return query;
  }
}
