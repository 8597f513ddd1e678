import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, SelectQueryBuilder } from 'typeorm';
import { DataScope, scopeCondition } from '../common/auth/data-scope';

/** A SQL expression with TypeORM named parameters (the names scopeCondition uses). */
interface Fragment {
  sql: string;
  params: Record<string, string>;
}

// Enough for every scope x search a busy clinic network keeps warm; the oldest entries go first.
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
  private readonly cache = new Map<string, number>();
  private readonly pending = new Map<string, Promise<number>>();

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /** Version of every study count of the scope: sum of the counter rows' versions, and their number. */
  studyVersion(scope: DataScope): Fragment {
    const rows = this.counterRows(scope, true);
    return {
      sql: `(SELECT coalesce(sum(c.version), 0)::text || '.' || count(*)::text FROM study_counts c WHERE ${rows.sql})`,
      params: rows.params,
    };
  }

  /** Version of every patient count of the scope (a unit scope also depends on the unit's studies). */
  patientVersion(scope: DataScope): Fragment {
    const patients = this.counterRows(scope, false);
    const own = `(SELECT coalesce(sum(c.version), 0)::text || '.' || count(*)::text FROM patient_counts c WHERE ${patients.sql})`;
    if (scope.kind !== 'unit') return { sql: own, params: patients.params };
    const studies = this.studyVersion(scope);
    return { sql: `(${own} || '/' || ${studies.sql})`, params: { ...patients.params, ...studies.params } };
  }

  /** Unfiltered number of studies in the scope, and their version. */
  async studies(scope: DataScope): Promise<{ total: number; version: string }> {
    const rows = this.counterRows(scope, true);
    const row = await this.select(`coalesce(sum(c.studies), 0)::bigint`, this.studyVersion(scope), 'study_counts', rows);
    return { total: Number(row.total), version: row.version };
  }

  /**
   * Unfiltered number of patients the scope sees, and their version. A unit scope sees a tenant's
   * patient only through a study of that unit, which no counter holds: its total is null.
   */
  async patients(scope: DataScope): Promise<{ total: number | null; version: string }> {
    const rows = this.counterRows(scope, false);
    const row = await this.select(`coalesce(sum(c.patients), 0)::bigint`, this.patientVersion(scope), 'patient_counts', rows);
    return { total: scope.kind === 'unit' ? null : Number(row.total), version: row.version };
  }

  /**
   * The count of `query` (a query builder of the rows to count) under `key`, at the scope version
   * `version` just read; counted on a miss, together with `versionOf` in the same statement, and
   * kept under the version it was counted at. Concurrent misses of one key and version share one count.
   */
  async cached(key: string, version: string, query: SelectQueryBuilder<object>, versionOf: Fragment): Promise<number> {
    const at = `${key}@${version}`;
    const hit = this.cache.get(at);
    if (hit !== undefined) return hit;
    const inFlight = this.pending.get(at);
    if (inFlight) return inFlight;
    const run = query
      .select('COUNT(*)::bigint', 'total')
      .addSelect(versionOf.sql, 'version')
      .setParameters(versionOf.params)
      .getRawOne<{ total: string; version: string }>()
      .then((row) => {
        const total = Number(row?.total ?? 0);
        if (this.cache.size >= MAX_CACHED) this.cache.delete(this.cache.keys().next().value as string);
        this.cache.set(`${key}@${row?.version}`, total);
        return total;
      })
      .finally(() => this.pending.delete(at));
    this.pending.set(at, run);
    return run;
  }

  /** The counter rows of a scope (alias `c`); a caller without scope has none. */
  private counterRows(scope: DataScope, perUnit: boolean): Fragment {
    return scopeCondition(scope, { tenant: 'c.tenant_id', unit: perUnit ? 'c.unit_id' : undefined });
  }

  private async select(
    total: string,
    version: Fragment,
    table: 'study_counts' | 'patient_counts',
    rows: Fragment,
  ): Promise<{ total: string; version: string }> {
    const row = await this.db
      .createQueryBuilder()
      .select(total, 'total')
      .addSelect(version.sql, 'version')
      .from(table, 'c')
      .where(rows.sql, rows.params)
      .setParameters(version.params)
      .getRawOne<{ total: string; version: string }>();
    return row ?? { total: '0', version: '' };
  }
}
