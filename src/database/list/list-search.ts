import { Injectable } from '@nestjs/common';
import { DataScope, scopeTenantId } from '../../common/auth/data-scope';
import {
  collectsFirstPage,
  COVERED_WALK_ROWS_PER_MATCH,
  idColumn,
  listCountSql,
  listFirstPageSql,
  listKeptPageSql,
  listMatchesCountSql,
  ListSpec,
  listPageByIdsSql,
  listPageSql,
  listSearchSql,
  listWalkPageSql,
  plannedOnce,
  reachOf,
  searchCountByPlanSql,
  searchCountPlan,
  searchIndexedSql,
  SearchPlan,
  searchPlan,
  walkCap,
  WalkConditions,
  widerWalkCap,
} from './list-query';
import { CounterSql, KeptPage, ListTotals, SearchSizes } from './list-totals';
import { PreparedQueries } from './prepared-queries';
import { SqlParams } from './sql-params';

/** One search of a list, as the list's repository describes it to ListSearch. */
export interface ListSearchQuery {
  spec: ListSpec;
  /** What the search's total and sizes are kept under: the list, the scope, every filter, the fragment. */
  key: string;
  search: string;
  /** The caller's scope, as the repository's conditions and counters see it. */
  scope: DataScope;
  /** The counters of the caller's scope (ListTotals.studies or .patients). */
  counters: (p: SqlParams) => CounterSql;
  /**
   * Which counter gives the rows a walk goes through: the scope's own (`total`), or the tenant's
   * (`tenant`: a unit user's patients are walked in the tenant's name order).
   */
  walkedBy: 'total' | 'tenant';
  /** The list's conditions without the fragment: the scope (listScopeSql, `onRows`) and any filter. */
  conditions: (p: SqlParams, onRows: boolean) => string;
  /**
   * The exact total, as a scalar SQL expression, from `counted`: the matches counted over the
   * conditions with the fragment (listCountSql), or as a first search collected them
   * (listMatchesCountSql), or a first search's choice between such counts by its plan
   * (searchCountByPlanSql). A list with piece counts takes them where they hold (listSearchCountSql).
   */
  count: (counted: string, p: SqlParams) => string;
  /**
   * The tenant whose kept first pages (ListSpec.piecePages) the search's first page may come from:
   * set when the conditions are that whole tenant and nothing else, as the pages are kept.
   */
  piecePagesTenant?: string;
}

/** A page row with the scope's version and size, read with a repeated search's page. */
interface SearchMeta {
  _version: string;
  _walked: string;
}

/** A first search's sizes (ListSearch.first), on its one row or on every row of its page. */
interface FirstSizes extends SearchMeta {
  _indexed: boolean;
  _total: string;
  _kept: boolean;
}

/** The columns ListSearch adds to a page's rows: whoever maps rows to responses leaves them out. */
export const LIST_SEARCH_COLUMNS = ['_version', '_walked', '_indexed', '_total', '_kept'] as const;

/**
 * The list's conditions with the fragment, for a plan. Through the search index, a tenant's or a
 * unit user's search reads the tenant's own terms (TenantSearchTerms: a prefix expands over the
 * tenant's words only, every candidate is the tenant's, and a unit's studies are narrowed by the
 * unit's term in the same index, UnitSearchTerms), the tenant tested on the rows (listScopeSql
 * `onRows`); the super admin's reads the SearchWords index.
 */
function searchWhere(query: ListSearchQuery, p: SqlParams, plan: SearchPlan): string {
  const tenantTerms = plan === 'index' ? scopeTenantId(query.scope) : null;
  return `${query.conditions(p, tenantTerms !== null)} AND ${listSearchSql(query.spec, query.search, p, plan, tenantTerms)}`;
}

/** What a walk of the search tests: the list's conditions, and the fragment matched row by row. */
const walkConditions = (query: ListSearchQuery, p: SqlParams): WalkConditions => ({
  scope: query.conditions(p, false),
  match: listSearchSql(query.spec, query.search, p, 'walk'),
});

/** The search's exact total (ListSearchQuery.count) when its matches are counted over `where`. */
const countOver = (query: ListSearchQuery, where: string, p: SqlParams): string =>
  query.count(listCountSql(query.spec, where), p);

/**
 * Whether a walk's page (listWalkPageSql) is planned once, its cap and bounds parameters: its plan
 * is the scope's order index read in order up to the cap, then the page's rows by id, whatever
 * their values. Planned for each execution, a walk spent 0.37-0.46 ms planning for 0.66-0.84 ms of
 * execution in the first-search stream, and planned once the plans were the same for the tenant
 * admin's, the unit user's and the super admin's studies and patients, 0.16-0.25 ms sooner
 * (bench/README.md, "Tenth round"). A unit user's patients (walked in the tenant's name order,
 * `walkedBy` tenant, through the unit's studies) keep their plan per execution: planned once, the
 * join is a hash semi join of the whole tenant, faster than the custom plan in one round (7.2
 * against 29.7 ms) and slower in another (16.7 against 13 ms).
 */
const walkPlannedOnce = (query: ListSearchQuery): boolean => !(query.scope.kind === 'unit' && query.walkedBy === 'tenant');

/** A page row's id (the list's id column), or null on a row of sizes alone (listFirstPageSql). */
const idOf = (query: ListSearchQuery, row: object): unknown => (row as Record<string, unknown>)[idColumn(query.spec)] ?? null;

/** The plan of a search's page from its sizes; every list walks inside its order indexes. */
const planOf = (sizes: SearchSizes, offset: number, limit: number): SearchPlan =>
  searchPlan(
    sizes.matches,
    sizes.walked,
    offset,
    limit,
    sizes.indexed,
    sizes.bunched,
    COVERED_WALK_ROWS_PER_MATCH,
    sizes.reach,
  );

/**
 * A page of a searched list and its exact total, for every list (studies, patients). A common name
 * fragment matches tens of thousands of rows that only a heap visit each can confirm, so its total
 * is counted once per scope version and kept (ListTotals), and that exact count then picks the plan
 * of the page (searchPlan): no matches, no page query. A search seen before takes its plan from the
 * sizes last seen and reads its page together with the scope's version, so when nothing changed
 * since, it is one statement. A walk that comes back short of what the total promises reached its
 * cap (walkCap): it is tried again wider while that costs less than collecting the matches
 * (widerWalkCap), the width that filled the page kept as the search's `reach`; past that, the
 * matches are bunched (remembered) and the page is read by the plan searchPlan gives such a search.
 * Every page read is kept by id under the scope version read before or with it (ListTotals.keepPage):
 * the same page asked again (a refresh, paging back, the next doctor typing the same name) is read
 * by its ids with the scope's version, and used while the version stands, else searched again.
 */
@Injectable()
export class ListSearch {
  constructor(
    private readonly totals: ListTotals,
    private readonly prepared: PreparedQueries,
  ) {}

  async page<Row extends object>(
    query: ListSearchQuery,
    offset: number,
    limit: number,
  ): Promise<{ rows: Row[]; total: number }> {
    // Every statement of this page waits for its turn as of now (PreparedQueries.query).
    const since = performance.now();
    const seen = this.totals.lastSizes(query.key);
    if (seen && seen.matches > offset) {
      const kept = this.totals.keptPage(query.key, offset, limit);
      if (kept) {
        const rows = await this.readKept<Row>(query, kept, since);
        if (rows) {
          const sizes = await this.sizes(query, rows[0], seen.indexed, since);
          return { rows, total: sizes.matches };
        }
      }
      const q = new SqlParams();
      const plan = planOf(seen, offset, limit);
      const rows = await this.read<Row & SearchMeta>(query, q, plan, seen, this.metaColumns(query, q), offset, limit, since);
      if (rows.length > 0) {
        const sizes = await this.sizes(query, rows[0], seen.indexed, since);
        const page = await this.complete(query, plan, sizes, rows, offset, limit, since);
        this.keepPage(query, offset, limit, rows[0]._version, page);
        return { rows: page, total: sizes.matches };
      }
    }
    const { sizes, version, collected, walked } = await this.first<Row>(query, offset, limit, !seen, since);
    if (sizes.matches <= offset) return { rows: [], total: sizes.matches };
    let page = collected;
    if (!page) {
      const plan = planOf(sizes, offset, limit);
      const rows =
        plan === 'walk' && walked
          ? walked
          : await this.read<Row>(query, new SqlParams(), plan, sizes, 'NULL AS _total', offset, limit, since);
      page = await this.complete(query, plan, sizes, rows, offset, limit, since);
    }
    this.keepPage(query, offset, limit, version, page);
    return { rows: page, total: sizes.matches };
  }

  /** The scope's version and the rows a walk goes through, as columns of a page's rows (SearchMeta). */
  private metaColumns(query: ListSearchQuery, p: SqlParams): string {
    const counters = query.counters(p);
    return `${counters.version} AS _version, ${counters[query.walkedBy]} AS _walked`;
  }

  /**
   * A kept page read again by id, with the scope's version: its rows, or null when the version has
   * moved since (or a row is gone, which moves it too), and the search must run.
   */
  private async readKept<Row>(query: ListSearchQuery, kept: KeptPage, since: number): Promise<Array<Row & SearchMeta> | null> {
    const p = new SqlParams();
    const meta = this.metaColumns(query, p);
    // Planned once: no LIMIT, and its plan (the page's rows by primary key) holds for any ids.
    const rows = await this.prepared.query<Row & SearchMeta>(
      listPageByIdsSql(query.spec, query.conditions(p, false), meta, p, kept.ids),
      p.values,
      'generic',
      since,
    );
    return rows.length === kept.count && rows[0]._version === kept.version ? rows : null;
  }

  /** Keeps the page's ids under `version`, read before or with the page (ListTotals.keepPage). */
  private keepPage(query: ListSearchQuery, offset: number, limit: number, version: string, page: object[]): void {
    this.totals.keepPage(
      query.key,
      offset,
      limit,
      version,
      page.map((row) => String(idOf(query, row))),
    );
  }

  /** One page of the search by `plan`, with `extra` (scalar subqueries) on every row. */
  private read<Row>(
    query: ListSearchQuery,
    p: SqlParams,
    plan: SearchPlan,
    sizes: SearchSizes,
    extra: string,
    offset: number,
    limit: number,
    since: number,
  ): Promise<Row[]> {
    const { spec } = query;
    if (plan === 'index') {
      const once = plannedOnce(offset);
      return this.prepared.query(
        listPageSql(spec, searchWhere(query, p, 'index'), extra, p, offset, limit, true, once),
        p.values,
        once ? 'generic' : 'custom',
        since,
      );
    }
    const { scope, match } = walkConditions(query, p);
    const cap = walkCap(sizes.matches, sizes.walked, offset, limit, sizes.bunched, sizes.reach);
    return this.prepared.query(
      listWalkPageSql(spec, scope, match, extra, p, offset, limit, cap),
      p.values,
      walkPlannedOnce(query) ? 'generic' : 'custom',
      since,
    );
  }

  /**
   * `rows`, read by `plan`, unless a walk came back short of what the exact total promises: it
   * reached its cap, so it is read again wider (remembered as the search's reach) while a walk that
   * wide costs less than collecting the matches, and else as bunched matches (remembered).
   */
  private async complete<Row>(
    query: ListSearchQuery,
    plan: SearchPlan,
    sizes: SearchSizes,
    rows: Row[],
    offset: number,
    limit: number,
    since: number,
  ): Promise<Row[]> {
    const wanted = Math.min(limit, sizes.matches - offset);
    if (plan === 'index' || rows.length >= wanted) return rows;
    let cap = walkCap(sizes.matches, sizes.walked, offset, limit, sizes.bunched, sizes.reach);
    for (;;) {
      const wider = widerWalkCap(cap, sizes.matches, sizes.walked, COVERED_WALK_ROWS_PER_MATCH);
      if (wider === null) break;
      const reached: SearchSizes = { ...sizes, reach: reachOf(wider, offset, limit) };
      const again = await this.read<Row>(query, new SqlParams(), 'walk', reached, 'NULL AS _total', offset, limit, since);
      if (again.length >= wanted) {
        this.totals.rememberSizes(query.key, reached);
        return again;
      }
      cap = wider;
    }
    const bunched: SearchSizes = { ...sizes, bunched: true, reach: undefined };
    this.totals.rememberSizes(query.key, bunched);
    return this.read(query, new SqlParams(), planOf(bunched, offset, limit), bunched, 'NULL AS _total', offset, limit, since);
  }

  /**
   * A search not seen before (or whose last page came up empty): the scope's version and size, and
   * the exact total, in one statement. The count's plan depends on the size and on whether the index
   * serves the fragment (searchCountPlan), both read in the same statement, so both counts are in its
   * text and the CASE runs one. As two statements (the sizes, then the count they choose), a first
   * search paid for a second round trip and a second plan. Planned once (PlanMode `generic`): it has
   * no LIMIT, and its custom plan cost more to make than to run (bench/README.md "Seventh round").
   * A shallow page whose matches the plan would collect (collectsFirstPage: three first searches in
   * four at 1,000,000 studies) comes in the same statement (listFirstPageSql): `collected`. For a
   * search `fresh` (nothing learnt of its walks), a shallow page the plan walks comes in it too:
   * `walked`, its rows as a walk of walkCap's rows gives them (a walk that came back short has fewer:
   * ListSearch.complete goes on from there). Read by a statement of its own, the walk's page waited
   * for a connection a second time: walked first searches were a fifth of the typed stream's and
   * about half of its slowest one in a hundred (bench/README.md, "Fourteenth round"). A tenant's
   * search (`piecePagesTenant`) of a fragment that is one piece with enough matches reads the page
   * kept for it instead (listKeptPageSql, SearchPiecePages): as `collected`, where it would collect
   * or walk. Else both are null and the page is read by its plan.
   */
  private async first<Row>(
    query: ListSearchQuery,
    offset: number,
    limit: number,
    fresh: boolean,
    since: number,
  ): Promise<{ sizes: SearchSizes; version: string; collected: Row[] | null; walked: Row[] | null }> {
    const p = new SqlParams();
    const counters = query.counters(p);
    const once = plannedOnce(offset);
    const indexWhere = searchWhere(query, p, 'index');
    // With a page that may come, the matches the index finds are collected once, for both.
    const byIndex = once ? listMatchesCountSql : listCountSql(query.spec, indexWhere);
    const byWalk = listCountSql(query.spec, searchWhere(query, p, 'walk'));
    // The piece counts around the plan's choice, not inside each branch: once in the plan, whose
    // every node the executor starts at each bind, run or not.
    const total = query.count(searchCountByPlanSql('m._walked', 'm._indexed', byIndex, byWalk), p);
    // OFFSET 0 keeps the sizes a subquery of their own: flattened, each would be read twice.
    const sizesSql = `SELECT m._version, m._walked, m._indexed, ${total} AS _total
         FROM (SELECT ${counters.version} AS _version, ${counters[query.walkedBy]} AS _walked,
                      ${searchIndexedSql(query.search, p)} AS _indexed OFFSET 0) m`;
    // The walk's statement is planned once too (walkPlannedOnce), and its page is shallow here.
    const walk = once && fresh && walkPlannedOnce(query) ? walkConditions(query, p) : undefined;
    const tenant = query.piecePagesTenant;
    const kept =
      once && tenant
        ? listKeptPageSql(query.spec, tenant, query.search, (q) => query.conditions(q, false), p, offset, limit)
        : null;
    const rows: Array<Row & FirstSizes> = await this.prepared.query(
      once ? listFirstPageSql(query.spec, sizesSql, indexWhere, offset, limit, walk, kept) : sizesSql,
      p.values,
      'generic',
      since,
    );
    const [row] = rows;
    const matches = Number(row._total);
    const walked = Number(row._walked);
    this.totals.keep(query.key, row._version, matches);
    const sizes = this.remember(query.key, matches, walked, row._indexed);
    if (row._kept === true) {
      // A kept page is its piece's first studies; one that did not come whole (none should: a row
      // gone, or outside the conditions) is read by the plan instead.
      const whole = rows.length === Math.min(limit, matches - offset) && rows.every((r) => idOf(query, r) !== null);
      return { sizes, version: row._version, collected: whole ? rows : null, walked: null };
    }
    // The rule is the SQL's too; a page that did not come (no id) is read by its plan instead.
    const collects = collectsFirstPage(matches, walked, row._indexed, offset, limit);
    const collected = collects && idOf(query, row) ? rows : null;
    // The walk ran when the page is there to read and not collected: its rows, none when it found none.
    const walkedRows = walk && !collects && matches > offset ? rows.filter((r) => idOf(query, r) !== null) : null;
    return { sizes, version: row._version, collected, walked: walkedRows };
  }

  /** The exact total at the version in `meta` (kept, or counted now), as the search's sizes, remembered. */
  private async sizes(query: ListSearchQuery, meta: SearchMeta, indexed: boolean, since: number): Promise<SearchSizes> {
    const total = await this.totals.cached(query.key, meta._version, async () => {
      const q = new SqlParams();
      const where = searchWhere(query, q, searchCountPlan(Number(meta._walked), indexed));
      const [row] = await this.prepared.query<{ total: string; version: string }>(
        `SELECT ${countOver(query, where, q)} AS total, ${query.counters(q).version} AS version`,
        q.values,
        'generic',
        since,
      );
      return { total: Number(row.total), version: row.version };
    });
    return this.remember(query.key, total, Number(meta._walked), indexed);
  }

  /** The search's sizes now, with what its walks taught (bunched, reach), remembered. */
  private remember(key: string, matches: number, walked: number, indexed: boolean): SearchSizes {
    const seen = this.totals.lastSizes(key);
    const sizes: SearchSizes = { matches, walked, indexed, bunched: seen?.bunched, reach: seen?.reach };
    this.totals.rememberSizes(key, sizes);
    return sizes;
  }
}
