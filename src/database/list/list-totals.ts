import { Injectable } from '@nestjs/common';
import { DataScope, scopeCondition } from '../../common/auth/data-scope';
import { TtlCache } from '../../common/cache/ttl-cache';
import { SqlParams } from './sql-params';

/** SQL expressions (scalar subqueries) over the counters of a scope, to put in a list's statement. */
export interface CounterSql {
  /** The unfiltered total, or null when no counter holds it (a unit user's patients). */
  total: string | null;
  /** Changes with every committed change that could alter any count in the scope. */
  version: string;
  /** Rows a walk of the scope's list order goes through: the scope's, or its tenant's (a unit's patients). */
  walked: string;
  /** Rows of the clinics whose search terms the scope reads (a unit's studies: its clinic's): where the terms' candidates come from. */
  clinic: string;
}

/** A count kept under a scope version (an exact total of a filtered list). */
export interface KeptCount {
  total: number;
}

/** A search's count (up to one past the cap), the scope's version it was read at, and what its search taught (ListSearch). */
export interface KeptSearch extends KeptCount {
  version: string;
  /** The rows a walk of the scope went through when it was counted. */
  walked: number;
  /** A walk of this search came back short: its matches sit together far down the list order. */
  bunched?: boolean;
  /**
   * Of a bunched search, the leading order value of its first match (ListSpec.walkFrom), from the
   * first page it collected: its pages walk from there. Null when such a walk came back short too
   * (its matches spread far after the first): its pages are collected.
   */
  walkFrom?: string | null;
  /**
   * The ids of its first matches in list order, 16 bytes each, up to SEARCH_TOTAL_CAP (16 KB): all
   * of them up to the cap when its first search knew them (listFirstSearchSql), else those its
   * walked and collected pages met from the start on. Its pages within them read those rows by id.
   */
  ids?: Uint8Array;
}

// Enough for every scope x count a busy clinic network keeps warm; the oldest entries go first.
const MAX_CACHED = 10_000;
// Searches seen in the last minutes (a user paging, refreshing, typing a name again); with their
// matches' ids, at most 32 MB.
const MAX_SEARCHES = 2_000;

/**
 * Exact list totals without counting the whole scope on every page (see the InitialSchema
 * migration). An unfiltered total is the sum of the scope's counter rows. A filtered count (a
 * search, a report status, a unit's patients) is counted once and kept under (what was counted,
 * version of the scope): every change in the scope moves the version, so a kept count is never
 * stale, only unused. The version is read in the same statement as the count. The cache is per
 * process: no process can serve another's stale count.
 */
@Injectable()
export class ListTotals {
  private readonly counts = new TtlCache<KeptCount>(MAX_CACHED);
  private readonly searches = new TtlCache<KeptSearch>(MAX_SEARCHES);

  /** Counters of the studies a scope sees (study_counts, one row per unit). */
  studies(scope: DataScope, p: SqlParams): CounterSql {
    const rows = () => p.bind(scopeCondition(scope, { tenant: 'c.tenant_id', unit: 'c.unit_id' }));
    const total = () => `(SELECT coalesce(sum(c.studies), 0) FROM study_counts c WHERE ${rows()})`;
    return {
      get total() {
        return total();
      },
      get version() {
        return `(SELECT coalesce(sum(c.version), 0)::text || '.' || count(*)::text FROM study_counts c WHERE ${rows()})`;
      },
      get walked() {
        return total();
      },
      get clinic() {
        return scope.kind === 'unit'
          ? `(SELECT coalesce(sum(c.studies), 0) FROM study_counts c WHERE ${p.bind(scopeCondition(scope, { tenant: 'c.tenant_id' }))})`
          : total();
      },
    };
  }

  /**
   * Counters of the patients a scope sees (patient_counts, per tenant). A unit scope sees a tenant's
   * patient only through a study of that unit, which no counter holds: no total, a version that
   * also covers the unit's studies, and its walks go through the tenant's patients.
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
      get walked() {
        return tenant();
      },
      get clinic() {
        return tenant();
      },
    };
  }

  /** The search's count kept last, whatever scope version it was read at (ListSearch checks it). */
  latest(key: string): KeptSearch | undefined {
    return this.searches.get(key);
  }

  /** Keeps a search's count, in place of any kept before. */
  keepLatest(key: string, count: KeptSearch): void {
    this.searches.set(key, count);
  }

  /**
   * The count kept under `key` at `version`, else `count()`'s, which returns a count and the version
   * read in its own statement, kept under that version. Concurrent misses share one count.
   */
  cached(key: string, version: string, count: () => Promise<{ total: number; version: string }>): Promise<KeptCount> {
    return this.counts.load(`${key}@${version}`, async () => {
      const counted = await count();
      const entry: KeptCount = { total: counted.total };
      this.counts.set(`${key}@${counted.version}`, entry);
      return entry;
    });
  }
}
