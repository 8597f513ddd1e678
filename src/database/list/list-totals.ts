import { Injectable } from '@nestjs/common';
import { DataScope, scopeCondition } from '../../common/auth/data-scope';
import { TtlCache } from '../../common/cache/ttl-cache';
import { SqlParams } from './sql-params';

/** The last known sizes of a search: enough to choose its page's plan before knowing the version. */
export interface SearchSizes {
  matches: number;
  /** The rows a walk in list order goes through (see searchPlan). */
  walked: number;
  /** Whether the search index can serve the fragment. */
  indexed: boolean;
  /** A walk of it reached its cap: its matches sit together in the list order (see walkCap). */
  bunched?: boolean;
  /**
   * Rows a walk had to go through per row of the page it filled, when that was more than the
   * matches' spread promised (their first ones sit deeper in the list order: see widerWalkCap).
   */
  reach?: number;
}

/** SQL expressions (scalar subqueries) over the counters of a scope, to put in a list's statement. */
export interface CounterSql {
  /** The unfiltered total, or null when no counter holds it (a unit user's patients). */
  total: string | null;
  /** Changes with every committed change that could alter any count in the scope. */
  version: string;
  /** Rows of the tenant (or tenants) the scope is part of: what a unit's patients list walks. */
  tenant: string;
}

/** A searched page's ids, as read at a scope version (ListTotals.keepPage). */
export interface KeptPage {
  version: string;
  /** The ids in list order, as a PostgreSQL array literal. */
  ids: string;
  count: number;
}

/** Where a searched page is kept: the search's key, the page's offset and its size. */
const pageKey = (key: string, offset: number, limit: number): string => `${key}#${offset}#${limit}`;

// Enough for every scope x search a busy clinic network keeps warm; the oldest entries go first.
// A kept page is its ids as text, about 600 bytes for 15 rows: 6 MB at most.
const MAX_CACHED = 10_000;

/**
 * Exact list totals without counting the whole scope on every page (see the ListCounters
 * migration). An unfiltered total is the sum of the scope's counter rows (one per unit). A filtered
 * total (a search, a unit's patients) is counted once and kept under (what was counted, version of
 * the scope): every change in the scope changes the version, so a kept total is never stale, only
 * unused. The version is read in the same statement as the count, so a total is stored under the
 * version it is exact for. The cache is per process: several API processes each count a version
 * once, and no process can serve another's stale total.
 */
@Injectable()
export class ListTotals {
  /** Totals under `key@version`: never stale, so kept until the bound pushes them out. */
  private readonly totals = new TtlCache<number>(MAX_CACHED);
  private readonly lastSeen = new TtlCache<SearchSizes>(MAX_CACHED);
  private readonly pages = new TtlCache<KeptPage>(MAX_CACHED);

  /**
   * Counters of the studies a scope sees (study_counts, one row per unit). Each expression binds its
   * parameters when it is read, so a statement carries only the parameters it uses.
   */
  studies(scope: DataScope, p: SqlParams): CounterSql {
    const rows = () => p.bind(scopeCondition(scope, { tenant: 'c.tenant_id', unit: 'c.unit_id' }));
    const tenantRows = () => p.bind(scopeCondition(scope, { tenant: 'c.tenant_id' }));
    return {
      get total() {
        return `(SELECT coalesce(sum(c.studies), 0) FROM study_counts c WHERE ${rows()})`;
      },
      get version() {
        return `(SELECT coalesce(sum(c.version), 0)::text || '.' || count(*)::text FROM study_counts c WHERE ${rows()})`;
      },
      get tenant() {
        return `(SELECT coalesce(sum(c.studies), 0) FROM study_counts c WHERE ${tenantRows()})`;
      },
    };
  }

  /**
   * Counters of the patients a scope sees (patient_counts, per tenant). A unit scope sees a tenant's
   * patient only through a study of that unit, which no counter holds: no total, and a version that
   * also covers the unit's studies.
   */
  patients(scope: DataScope, p: SqlParams): CounterSql {
    const rows = () => p.bind(scopeCondition(scope, { tenant: 'c.tenant_id' }));
    const tenant = () => `(SELECT coalesce(sum(c.patients), 0) FROM patient_counts c WHERE ${rows()})`;
    const studies = this.studies(scope, p);
    return {
      get total() {
        return scope.kind === 'unit' ? null : tenant();
      },
      get version() {
        const own = `(SELECT coalesce(sum(c.version), 0)::text || '.' || count(*)::text FROM patient_counts c WHERE ${rows()})`;
        return scope.kind === 'unit' ? `(${own} || '/' || ${studies.version})` : own;
      },
      get tenant() {
        return tenant();
      },
    };
  }

  /**
   * The sizes last seen for a search (any version): a repeated search picks its plan from them and
   * reads its page and the scope's version in one statement; the total then comes from `cached`.
   */
  lastSizes(key: string): SearchSizes | undefined {
    return this.lastSeen.get(key);
  }

  rememberSizes(key: string, sizes: SearchSizes): void {
    this.lastSeen.set(key, sizes);
  }

  /**
   * The ids of a searched page (`key`, offset, limit) kept at a scope version, if any. The version
   * moves with every change of a record's match, scope or place in the list (ListCounters,
   * ListOrderVersions), so while it stands the page holds the same rows in the same order; reading
   * them by id is then the whole search.
   */
  keptPage(key: string, offset: number, limit: number): KeptPage | undefined {
    return this.pages.get(pageKey(key, offset, limit));
  }

  /**
   * Keeps a page's ids under `version`, which must have been read before or with the page: a page
   * read later than its version can only be newer, and the version read then is no longer current.
   */
  keepPage(key: string, offset: number, limit: number, version: string, ids: string[]): void {
    if (ids.length === 0) return;
    this.pages.set(pageKey(key, offset, limit), { version, ids: `{${ids.join(',')}}`, count: ids.length });
  }

  /** Keeps a total counted in the same statement as the scope's version `version`. */
  keep(key: string, version: string, total: number): void {
    this.totals.set(`${key}@${version}`, total);
  }

  /**
   * The total kept under `key` at scope version `version`, else `count()`'s, which returns the
   * count and the version read in its own statement and is kept under that version. Concurrent
   * misses of one key and version share one count.
   */
  async cached(key: string, version: string, count: () => Promise<{ total: number; version: string }>): Promise<number> {
    return this.totals.load(`${key}@${version}`, async () => {
      const { total, version: countedAt } = await count();
      this.keep(key, countedAt, total);
      return total;
    });
  }
}
