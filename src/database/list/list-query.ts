import { DataScope, scopeCondition, ScopeColumns } from '../../common/auth/data-scope';
import { likePattern } from '../../common/pagination';
import { SqlParams } from './sql-params';

/**
 * What a paginated list reads, for the one copy of the list SQL below: the studies list, the
 * patients list and the QIDO-RS study search are each one of these.
 */
export interface ListSpec {
  /** e.g. `studies s` */
  from: string;
  /** The id column, for the deferred join of deep pages: `s.id`. */
  id: string;
  /** The select list, as the API returns the rows. */
  columns: string;
  /** The list order, ending with the id (pages never overlap); an index provides it. */
  order: string;
  /** The same order through an expression no index provides (see pageSql). */
  unindexedOrder: string;
  /** The columns the caller's scope filters on. */
  scope: ScopeColumns;
  /**
   * For records that belong to a tenant only: what a unit scope adds (a patient is seen by a unit
   * user only through a study of that unit). Receives the unit scope's condition on studies `s`.
   */
  unitScope?: (studiesInUnit: string) => string;
  /** The columns a search fragment is matched in (any of them). */
  search: string[];
}

// Up to this offset (20 pages) one ordered scan reads the page directly; below it, skipping rows
// costs a heap visit each and finding the ids first (deferred join) is cheaper.
export const DIRECT_OFFSET_MAX = 300;

/** The caller's scope on the list's rows, as SQL with positional parameters in `p`. */
export function listScopeSql(spec: ListSpec, scope: DataScope, p: SqlParams): string {
  const own = p.bind(scopeCondition(scope, spec.scope));
  if (scope.kind !== 'unit' || !spec.unitScope) return own;
  const studies = p.bind(scopeCondition(scope, { tenant: 's.tenant_id', unit: 's.unit_id' }));
  return `${own} AND ${spec.unitScope(studies)}`;
}

/**
 * A search fragment as a SQL condition on the list's rows. `opaque` wraps the match in coalesce():
 * the planner then neither uses the trigram indexes nor trusts pg_trgm's estimate for it (an opaque
 * expression counts as matching half the rows), so it walks the list-order index.
 */
export function listSearchSql(spec: ListSpec, search: string, p: SqlParams, opaque = false): string {
  const pattern = p.add(likePattern(search));
  const match = spec.search.map((column) => `${column} ILIKE ${pattern}`).join(' OR ');
  return opaque ? `coalesce(${match}, false)` : `(${match})`;
}

/**
 * One page in list order, with `extra` (scalar subqueries: a total, counters) on every row. Shallow
 * pages are one scan in list order; deeper ones find the page's ids first (an index-only scan of the
 * scope's order index, however deep) and read only those rows whole. `unindexedOrder` sorts by an
 * expression no index provides, which leaves the planner the search indexes and a sort of the matches.
 */
export function listPageSql(
  spec: ListSpec,
  where: string,
  extra: string,
  p: SqlParams,
  offset: number,
  limit: number,
  unindexedOrder = false,
): string {
  const order = unindexedOrder ? spec.unindexedOrder : spec.order;
  const page = `ORDER BY ${order} LIMIT ${p.add(limit)} OFFSET ${p.add(offset)}`;
  if (offset <= DIRECT_OFFSET_MAX) return `SELECT ${spec.columns}, ${extra} FROM ${spec.from} WHERE ${where} ${page}`;
  return `SELECT ${spec.columns}, ${extra} FROM ${spec.from}
           WHERE ${spec.id} IN (SELECT ${spec.id} FROM ${spec.from} WHERE ${where} ${page}) ORDER BY ${spec.order}`;
}
