import { DataScope, scopeCondition, ScopeColumns, scopeTenantId } from '../../common/auth/data-scope';
import { SqlParams } from './sql-params';

/**
 * What a paginated list reads, for the one copy of the list SQL below: the studies list and the
 * patients list are each one of these.
 */
export interface ListSpec {
  /** e.g. `studies s` */
  from: string;
  /** The id column, for the deferred join of deep pages: `s.id`. */
  id: string;
  /** The select list, as the API returns the rows. */
  columns: string;
  /** The list order, ending with the id (pages never overlap); an index provides it per scope. */
  order: string;
  /** The same order through an expression no index provides: the page of collected matches. */
  unindexedOrder: string;
  /** The columns the caller's scope filters on. */
  scope: ScopeColumns;
  /**
   * For records that belong to a tenant only: what a unit scope adds (a patient is seen by a unit
   * user only through a study of that unit). Receives the unit scope's condition on studies `s`.
   */
  unitScope?: (studiesInUnit: string) => string;
  /** The folded text a fragment is matched in (`search_text`, docs/search.md). */
  searchText: string;
  /**
   * What a walk reads of each row (the id, the order's columns, `searchText`): all in the scope's
   * order index, so a walk never leaves it.
   */
  walkColumns: string;
  /**
   * Where a walk may start when only the rows from a given row on are wanted: the order's leading
   * column compared with that row's value of it (`field` of a page's row). It skips rows before the
   * given row's leading value and none after it.
   */
  walkFrom: { field: string; condition: (value: string) => string };
}

/** A search's total is exact up to this many matches (docs/search.md). */
export const SEARCH_TOTAL_CAP = 1000;

// Up to this offset one ordered scan reads the page directly; deeper, finding the page's ids first
// (deferred join) spares a heap visit per skipped row.
const DIRECT_OFFSET_MAX = 300;

/**
 * The rows whose ids `select` gives (a page's, at most a few hundred), as a condition. An array
 * (computed once, then read through the primary key) rather than `IN (subquery)`: a semi-join makes
 * the planner weigh join orders and merge joins, which read the id's histogram and the primary key's
 * ends, on every statement: a quarter of a searched page's planning (0.42 against 0.31 ms, 32 connections).
 */
const idsIn = (spec: ListSpec, select: string): string => `${spec.id} = ANY(ARRAY(${select}))`;

/** The alias of the spec's table: `s` for `studies s`. */
const tableAlias = (spec: ListSpec): string => spec.from.split(' ')[1];

/**
 * The caller's scope on the list's rows, as SQL with positional parameters in `p`. `throughTerms`:
 * the statement also reads the search terms of the scope's clinics (listSearchSql with `tenants`),
 * which carry the clinic already; the clinic is then compared as text, a form no btree index
 * serves, so that the planner does not intersect the terms' candidates with a bitmap of every row
 * of the clinic ('tonio' in the largest clinic at 1,000,000 studies: 5,600 candidates in 2 ms, then
 * 200,000 rows of its btree in 14 ms).
 */
export function listScopeSql(spec: ListSpec, scope: DataScope, p: SqlParams, throughTerms = false): string {
  const columns = throughTerms ? { ...spec.scope, tenant: `${spec.scope.tenant}::text` } : spec.scope;
  const own = p.bind(scopeCondition(scope, columns));
  if (scope.kind !== 'unit' || !spec.unitScope) return own;
  return `${own} AND ${spec.unitScope(p.bind(scopeCondition(scope, { tenant: 's.tenant_id', unit: 's.unit_id' })))}`;
}

/**
 * The clinics whose search terms a scope reads (search_query's `tenants`): its own, or every one.
 * Every clinic's come as a value read when the statement runs: given to the planner, it built and
 * costed a query per clinic while planning (a kept page's 1.75 against 1.24 ms).
 */
export function scopeTenantsSql(scope: DataScope, p: SqlParams): string {
  const tenant = scopeTenantId(scope);
  return tenant !== null ? `ARRAY[${p.add(tenant)}::uuid]` : '(SELECT array_agg(t.id) FROM tenants t)';
}

/**
 * A search fragment (any part of a name, id or accession number, in any case, with or without
 * accents; `%`, `_` and `\` literal) as a condition on the list's rows. `tenants` (scopeTenantsSql;
 * only when the fragment has index terms: search_terms is not NULL for it) adds its terms in those
 * clinics, which the search index serves; the LIKE decides. The pattern and the terms are immutable
 * functions of parameters: planned for their values, they are constants the index and the column's
 * statistics see.
 */
export function listSearchSql(spec: ListSpec, search: string, p: SqlParams, tenants?: string): string {
  const fragment = p.add(search);
  const match = `${spec.searchText} LIKE search_pattern(${fragment})`;
  return tenants === undefined
    ? match
    : `${match} AND search_lexemes(${spec.scope.tenant}, ${spec.searchText}) @@ ANY(search_query(${tenants}, ${fragment}))`;
}

/** The number of the spec's rows meeting `where`, as a scalar SQL expression. */
export function listCountSql(spec: ListSpec, where: string): string {
  return `(SELECT count(*) FROM ${spec.from} WHERE ${where})`;
}

/**
 * One page in list order, with `extra` (scalar subqueries: a total) on every row. Shallow pages are
 * one scan in list order; deeper ones find the page's ids first (an index-only scan of the scope's
 * order index) and read only those rows whole. `collect`: sorted by the order no index provides,
 * which leaves the planner the search index and a sort of the matches; the ids come first then,
 * so that only the page's rows are made whole.
 */
export function listPageSql(
  spec: ListSpec,
  where: string,
  extra: string,
  p: SqlParams,
  offset: number,
  limit: number,
  collect = false,
): string {
  const page = `ORDER BY ${collect ? spec.unindexedOrder : spec.order} LIMIT ${p.add(limit)} OFFSET ${p.add(offset)}`;
  if (offset <= DIRECT_OFFSET_MAX && !collect) {
    return `SELECT ${spec.columns}${extra} FROM ${spec.from} WHERE ${where} ${page}`;
  }
  return `SELECT ${spec.columns}${extra} FROM ${spec.from}
           WHERE ${idsIn(spec, `SELECT ${spec.id} FROM ${spec.from} WHERE ${where} ${page}`)} ORDER BY ${spec.order}`;
}

/**
 * A first search's statement: its matches collected once, up to one past SEARCH_TOTAL_CAP (`where`:
 * the list's conditions with the fragment), with each of the page's rows the count of those
 * matches (`_total`) and `extra`, and on one row the ids of the first SEARCH_TOTAL_CAP matches in
 * list order (`_ids`: 16 bytes each, uuid_send), which the search's later pages read by id
 * (listIdsPageSql). Those are known up to the cap, or past it when `order` (the list order, which
 * the scope's order index provides) has the first 1,001 read; otherwise past the cap one row of
 * `_total` and `extra` with NULL columns comes back, and the page is read by a walk. Counted and
 * collected apart, every match cost two searches of the index.
 */
export function listFirstSearchSql(
  spec: ListSpec,
  where: string,
  extra: string,
  p: SqlParams,
  offset: number,
  limit: number,
  order?: string,
): string {
  const alias = tableAlias(spec);
  // The page's rows come out under the table's alias, so that the list order reads them as it is written.
  // The cap's test inside the ids' subqueries is a one-time filter: past it, unordered, none is sorted.
  const known = order ? 'TRUE' : `c._total <= ${SEARCH_TOTAL_CAP}`;
  const pageIds = `SELECT ${spec.id} FROM _matches ${alias} WHERE ${known}
                    ORDER BY ${spec.order} LIMIT ${p.add(Math.max(0, Math.min(limit, SEARCH_TOTAL_CAP - offset)))} OFFSET ${p.add(offset)}`;
  // All 1,001 when read in list order (one sort): the caller keeps the first SEARCH_TOTAL_CAP.
  const firstIds = `SELECT string_agg(uuid_send(${spec.id}), ''::bytea ORDER BY ${spec.order}) FROM _matches ${alias} WHERE ${known}`;
  const matches = `SELECT ${spec.walkColumns} FROM ${spec.from} WHERE ${where} ${order ? `ORDER BY ${order} ` : ''}LIMIT ${SEARCH_TOTAL_CAP + 1}`;
  return `WITH _matches AS MATERIALIZED (${matches}),
               _counted AS (SELECT count(*) AS _total FROM _matches)
          SELECT ${alias}.*, c._total, CASE WHEN row_number() OVER () = 1 THEN (${firstIds}) END AS _ids${extra}
            FROM _counted c
            LEFT JOIN LATERAL (SELECT ${spec.columns} FROM ${spec.from} WHERE ${idsIn(spec, pageIds)}) ${alias} ON TRUE
           ORDER BY ${spec.order}`;
}

/**
 * The rows of a page whose ids are known (`ids`: a kept search's, in list order), with `where`
 * (the list's conditions and the fragment, which they met when counted) and `extra` on each.
 */
export function listIdsPageSql(spec: ListSpec, where: string, extra: string, p: SqlParams, ids: string[]): string {
  return `SELECT ${spec.columns}${extra} FROM ${spec.from}
           WHERE ${spec.id} = ANY(${p.add(ids)}::uuid[]) AND ${where} ORDER BY ${spec.order}`;
}

/**
 * One page of a walk: the scope's rows (`scope`: the list's conditions without the fragment) in
 * list order, at most `cap` of them, tested against `match`; the page's ids first, then those rows
 * whole, with `extra` (scalar subqueries) on each. The cap is a LIMIT the planner cannot look through, so the walk is the order index read
 * in order; it stops at the page's last match, or at the cap (the caller then collects instead).
 */
export function listWalkPageSql(
  spec: ListSpec,
  scope: string,
  match: string,
  extra: string,
  p: SqlParams,
  offset: number,
  limit: number,
  cap: number,
): string {
  const walked = `SELECT ${spec.walkColumns} FROM ${spec.from} WHERE ${scope} ORDER BY ${spec.order} LIMIT ${p.add(cap)}`;
  return `SELECT ${spec.columns}${extra} FROM ${spec.from}
           WHERE ${idsIn(
             spec,
             `SELECT ${spec.id} FROM (${walked}) ${tableAlias(spec)} WHERE ${match}
               ORDER BY ${spec.order} LIMIT ${p.add(limit)} OFFSET ${p.add(offset)}`,
           )}
           ORDER BY ${spec.order}`;
}

/**
 * A scope of at most this many rows is searched by reading it whole in list order (its order
 * index alone: about 2 ms at most), not through the search index: a common prefix's candidates
 * are gathered over every clinic before the scope narrows them ("res" in a unit of 3,453 studies:
 * 19 ms collected, 164 matches).
 */
export const SMALL_SCOPE_ROWS = 10_000;

/**
 * How many rows a walk may read: four times what matches spread evenly over the `walked` rows of
 * the scope need for the page, at least WALK_CAP_MIN. `matches` is a lower bound (the count is
 * capped), so the cap is generous. (A small scope's search is walked whole when counted, and its
 * pages read by id.)
 */
export function walkCap(matches: number, walked: number, offset: number, limit: number): number {
  return Math.max(WALK_CAP_MIN, Math.ceil((4 * (offset + limit) * walked) / Math.max(1, matches)));
}

const WALK_CAP_MIN = 2_000;
