import { Injectable } from '@nestjs/common';
import {
  listCountSql,
  listFirstSearchSql,
  listPageSql,
  listSearchSql,
  ListSpec,
  listWalkPageSql,
  SEARCH_TOTAL_CAP,
  SearchPlan,
  searchPlan,
  SMALL_SCOPE_ROWS,
  walkCap,
} from './list-query';
import { CounterSql, ListTotals } from './list-totals';
import { PreparedQueries } from './prepared-queries';
import { SqlParams } from './sql-params';

/** One search of a list, as the list's repository describes it to ListSearch. */
export interface ListSearchQuery {
  spec: ListSpec;
  /** What the search's count is kept under: the list, the scope, every filter, the fragment. */
  key: string;
  search: string;
  /** The counters of the caller's scope (ListTotals.studies or .patients). */
  counters: (p: SqlParams) => CounterSql;
  /**
   * The list's conditions without the fragment: the scope (listScopeSql, `throughTerms` when the
   * statement reads the search terms too) and any filter.
   */
  conditions: (p: SqlParams, throughTerms?: boolean) => string;
  /** The clinics whose search terms the scope reads (scopeTenantsSql). */
  tenants: (p: SqlParams) => string;
}

/** What a first search's statement adds to each row (searchFirstSql). */
interface FirstSearchColumns {
  _total: string;
  _version: string;
}

/** A row of a page, not the one row of sizes a first search with no page row answers. */
const hasId = (row: object): boolean => (row as { id?: unknown }).id != null;

/** A searched page: its total is exact up to SEARCH_TOTAL_CAP, else the cap (`exact` false). */
export interface SearchPage<Row> {
  rows: Row[];
  total: number;
  exact: boolean;
}

/** The scope's version, the rows a walk of it goes through, and whether the fragment has index terms. */
export function searchMetaSql(query: ListSearchQuery, p: SqlParams): string {
  const counters = query.counters(p);
  return `SELECT ${counters.version} AS version, ${counters.walked} AS walked, search_terms(${p.add(query.search)}) IS NOT NULL AS indexed`;
}

/**
 * A first search (no count kept at the scope's version): its matches counted up to one past the
 * cap and, when they are no more, its page sorted from them, in one statement (listFirstSearchSql).
 */
export function searchFirstSql(query: ListSearchQuery, p: SqlParams, offset: number, limit: number, indexed: boolean): string {
  const where = `${query.conditions(p, indexed)} AND ${listSearchSql(query.spec, query.search, p, indexed ? query.tenants(p) : undefined)}`;
  return listFirstSearchSql(query.spec, where, `, ${query.counters(p).version} AS _version`, p, offset, limit);
}

/**
 * The planner's estimate of the fragment's matches in the scope, without the index terms: the
 * folded text's histogram estimates a LIKE well, while a common prefix term ('000':*) is guessed at
 * a few hundred rows.
 */
export function searchEstimateSql(query: ListSearchQuery, p: SqlParams): string {
  return `EXPLAIN (FORMAT JSON) SELECT 1 FROM ${query.spec.from} WHERE ${query.conditions(p)} AND ${listSearchSql(query.spec, query.search, p)}`;
}

/**
 * A first search expected to match at least this share of the scope's rows counts without the
 * index terms: the planner then walks the list order, which meets 1,001 matches within 20,000
 * rows, instead of gathering every candidate of the terms (200,000 rows of the largest clinic for
 * "000": 180 ms, against 0.7 ms walked).
 */
const DENSE_SHARE = 0.05;

/** A page of the search by `plan`; `cap`: the rows a walk may read; `indexed`: see listSearchSql. */
export function searchPageSql(
  query: ListSearchQuery,
  plan: SearchPlan,
  p: SqlParams,
  offset: number,
  limit: number,
  cap: number,
  indexed = false,
): string {
  const { spec } = query;
  if (plan === 'walk') {
    return listWalkPageSql(spec, query.conditions(p), listSearchSql(spec, query.search, p), p, offset, limit, cap);
  }
  return listPageSql(
    spec,
    `${query.conditions(p, indexed)} AND ${listSearchSql(spec, query.search, p, indexed ? query.tenants(p) : undefined)}`,
    '',
    p,
    offset,
    limit,
    true,
  );
}

/**
 * A page of a searched list, for every list (studies, patients). The matches are counted up to one
 * past SEARCH_TOTAL_CAP, once per scope version (ListTotals), and that count picks the page's plan
 * (searchPlan): a few matches are collected through the search index and sorted (by a first
 * search, in the statement that counts them); many are met soon by a walk in list order. A walk that comes back short (the matches sit together far down
 * the list order) leaves the page to collecting, and the kept count remembers it. Pages stop at
 * the cap: past a thousand matches the user types more.
 */
@Injectable()
export class ListSearch {
  constructor(
    private readonly totals: ListTotals,
    private readonly prepared: PreparedQueries,
  ) {}

  /**
   * The exact total of a list filtered without a search (a report status, a unit's patients): the
   * same version and kept count as a search's, counted in full.
   */
  async exactTotal(query: Omit<ListSearchQuery, 'search' | 'tenants'>): Promise<number> {
    const p = new SqlParams();
    const [meta] = await this.prepared.query<{ version: string }>(`SELECT ${query.counters(p).version} AS version`, p.values);
    const kept = await this.totals.cached(query.key, meta.version, async () => {
      const q = new SqlParams();
      const [row] = await this.prepared.query<{ total: string; version: string }>(
        `SELECT ${listCountSql(query.spec, query.conditions(q))} AS total, ${query.counters(q).version} AS version`,
        q.values,
      );
      return { total: Number(row.total), version: row.version };
    });
    return kept.total;
  }

  async page<Row>(query: ListSearchQuery, offset: number, limit: number): Promise<SearchPage<Row>> {
    const p = new SqlParams();
    const [meta] = await this.prepared.query<{ version: string; walked: string; indexed: boolean }>(
      searchMetaSql(query, p),
      p.values,
    );
    let kept = this.totals.kept(query.key, meta.version);
    if (!kept) {
      const walked = Number(meta.walked);
      const indexed = meta.indexed && walked > SMALL_SCOPE_ROWS && !(await this.dense(query, walked));
      const q = new SqlParams();
      const rows = await this.prepared.query<Row & FirstSearchColumns>(
        searchFirstSql(query, q, offset, limit, indexed),
        q.values,
      );
      kept = { total: Number(rows[0]._total) };
      this.totals.keep(query.key, rows[0]._version, kept);
      if (kept.total <= SEARCH_TOTAL_CAP) return { rows: rows.filter(hasId), total: kept.total, exact: true };
    }
    const total = Math.min(kept.total, SEARCH_TOTAL_CAP);
    const exact = kept.total <= SEARCH_TOTAL_CAP;
    const wanted = Math.min(limit, total - offset);
    if (wanted <= 0) return { rows: [], total, exact };

    if (searchPlan(kept.total, kept.bunched === true, Number(meta.walked)) === 'walk') {
      const q = new SqlParams();
      const cap = walkCap(kept.total, Number(meta.walked), offset, wanted);
      const rows = await this.prepared.query<Row>(searchPageSql(query, 'walk', q, offset, wanted, cap), q.values);
      if (rows.length >= wanted) return { rows, total, exact };
      kept.bunched = true;
    }
    const q = new SqlParams();
    const rows = await this.prepared.query<Row>(searchPageSql(query, 'collect', q, offset, wanted, 0, meta.indexed), q.values);
    return { rows, total, exact };
  }

  /** Whether the planner expects the fragment in at least DENSE_SHARE of the `walked` rows of the scope. */
  private async dense(query: ListSearchQuery, walked: number): Promise<boolean> {
    const p = new SqlParams();
    const [row] = await this.prepared.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
      searchEstimateSql(query, p),
      p.values,
    );
    return row['QUERY PLAN'][0].Plan['Plan Rows'] >= DENSE_SHARE * walked;
  }
}
