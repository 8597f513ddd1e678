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
  /**
   * The id and the columns of `order`: what a first search keeps of each match it collects
   * (listFirstPageSql), to count them and sort them without reading them twice.
   */
  orderColumns: string;
  /** The columns the caller's scope filters on. */
  scope: ScopeColumns;
  /**
   * For records that belong to a tenant only: what a unit scope adds (a patient is seen by a unit
   * user only through a study of that unit). Receives the unit scope's condition on studies `s`.
   */
  unitScope?: (studiesInUnit: string) => string;
  /**
   * The folded text a search fragment is matched in (a `search_text` column: see the SearchWords
   * migration), e.g. `s.search_text`; its index terms are `search_lexemes(<it>)`.
   */
  searchText: string;
  /**
   * The tables of exact match counts per search piece (SearchPieceCounts, SearchTenantPieces), their
   * count column and whether the first's rows are per unit: `{ table: 'study_piece_counts',
   * tenantTable: 'study_tenant_piece_counts', count: 'studies', perUnit: true }`. The tenant table's
   * rows are per tenant. A scope the rows cannot express (a unit's patients; a unit's studies, for a
   * tenant piece) counts through the index.
   */
  pieceCounts: { table: string; tenantTable: string; count: string; perUnit: boolean };
  /**
   * For lists whose search walks go through listWalkPageSql: what a walk reads of each row to test
   * it and keep the list order (the id, the order's columns and `searchText`). Held by the scope's
   * order index, a walk never leaves it. The patients list walks its name order directly.
   */
  walkColumns?: string;
  /**
   * A list's kept first pages of one-piece fragments per tenant (SearchPiecePages), which a tenant's
   * first search of such a fragment reads instead of finding its page (listFirstPageSql `kept`):
   * `ids(tenant, piece, limit, offset)` the SQL of a page's ids in list order, named as the id
   * column, for a tenant and a piece (SQL expressions); `rows` how many a page holds at least,
   * `minMatches` from how many matches in the tenant a piece has one.
   */
  piecePages?: {
    ids: (tenant: string, piece: string, limit: number, offset: number) => string;
    rows: number;
    minMatches: number;
  };
}

/** The name of the spec's id column in its rows: `id` for `s.id`. */
export const idColumn = (spec: ListSpec): string => spec.id.slice(spec.id.indexOf('.') + 1);

/** The alias of the spec's table: `s` for `studies s`. */
const tableAlias = (spec: ListSpec): string => spec.from.split(' ')[1];

/**
 * How a search reads a page: `walk` the scope's list-order index and keep the rows that match, or
 * collect the matches through the search index (`index`) and sort them.
 */
export type SearchPlan = 'walk' | 'index';

// Up to this offset (20 pages) one ordered scan reads the page directly; below it, skipping rows
// costs a heap visit each and finding the ids first (deferred join) is cheaper.
export const DIRECT_OFFSET_MAX = 300;

/**
 * Whether a page of a search's collected matches (plan `index`) is read by a statement planned
 * once, its LIMIT and OFFSET in its text (listPageSql `constantBounds`). Its plan is the same for
 * any values: the fragment's pattern and terms are scalar subqueries the planner cannot see into,
 * its order is one no index provides, so the search index and a sort of the matches are the only
 * way; planned per execution it cost 0.66-0.75 ms a page for an execution of 0.1-0.3 ms
 * (bench/README.md, "Ninth round"). Up to DIRECT_OFFSET_MAX, at most 21 texts per list and scope
 * shape; deeper pages keep their bounds as parameters.
 */
export const plannedOnce = (offset: number): boolean => offset <= DIRECT_OFFSET_MAX;

/** A LIMIT or OFFSET written into a statement's text: a count, or the statement is not built. */
function constantBound(n: number): string {
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`page bound ${n} is not a count`);
  return String(n);
}

/**
 * The caller's scope on the list's rows, as SQL with positional parameters in `p`. `onRows`: for a
 * search through a tenant's own index terms (ListSearch), whose candidates are all the tenant's:
 * the tenant as a condition no index can take, tested on each candidate's row, where naming it in
 * the scan would intersect a posting list as long as the tenant (the largest clinic's: about 70
 * index pages at 1,000,000 studies) for nothing. A unit's own column (studies) stays in the scan:
 * the index holds the unit as a term of its own (UnitSearchTerms), a posting list as long as the
 * unit, that leaves out the clinic's candidates of other units before any row is read.
 */
export function listScopeSql(spec: ListSpec, scope: DataScope, p: SqlParams, onRows = false): string {
  const unitOfRecord = (): string =>
    scope.kind === 'unit' && spec.unitScope
      ? ` AND ${spec.unitScope(p.bind(scopeCondition(scope, { tenant: 's.tenant_id', unit: 's.unit_id' })))}`
      : '';
  if (!onRows || scope.kind === 'all' || scope.kind === 'none') {
    return `${p.bind(scopeCondition(scope, spec.scope))}${unitOfRecord()}`;
  }
  const tenant = p.bind(scopeCondition({ kind: 'tenant', tenantId: scope.tenantId }, spec.scope));
  const onRowsSql = `(${tenant}${unitOfRecord()}) IS TRUE`;
  return scope.kind === 'unit' && spec.scope.unit ? `${onRowsSql} AND ${spec.scope.unit} = ${p.add(scope.unitId)}` : onRowsSql;
}

/**
 * A search fragment (any part of a name, id or accession number, in any case, with or without
 * accents; `%`, `_` and `\` literal) as a SQL condition on the list's rows, for a plan:
 * - `index`: the fragment's terms in the search index (search_query), then the exact match on the
 *   candidates. Only when `indexed` (search_query is not NULL for it: see searchIndexedSql).
 * - `walk`: the exact match alone, wrapped in coalesce(): the planner then neither uses the search
 *   index nor trusts an estimate for it (an opaque expression counts as matching half the rows), so
 *   it walks the list-order index until the page is full.
 * For a count, `index` when indexed, else the exact match over the scope. `tenantTerms`: the index
 * terms of that tenant (TenantSearchTerms, UnitSearchTerms), else the SearchWords index's.
 * The folded pattern and the terms are scalar subqueries, computed once per statement: these
 * statements are prepared, and in a generic plan `search_fold($1)` is a call per row tested (the
 * unaccent dictionary each time): walking a unit's 3,453 rows took 13.2 ms so, 1.6 ms with the
 * pattern computed once; collecting "eira ol" through the index 24.4 against 6.8 ms.
 */
export function listSearchSql(
  spec: ListSpec,
  search: string,
  p: SqlParams,
  plan: SearchPlan,
  tenantTerms: string | null = null,
): string {
  const match = `${spec.searchText} LIKE (SELECT search_fold(${p.add(likePattern(search))}))`;
  if (plan === 'walk') return `coalesce(${match}, false)`;
  if (tenantTerms === null) {
    return `${match} AND search_lexemes(${spec.searchText}) @@ (SELECT search_query(${p.add(search)}))`;
  }
  const tenant = p.add(tenantTerms);
  return `${match} AND search_tenant_lexemes(${spec.scope.tenant}, ${spec.searchText}) @@ (SELECT search_tenant_query(${tenant}::uuid, ${p.add(search)}))`;
}

/** A boolean SQL expression: whether the search index can serve the fragment (listSearchSql). */
export function searchIndexedSql(search: string, p: SqlParams): string {
  return `(search_query(${p.add(search)}) IS NOT NULL)`;
}

/** The number of the spec's rows meeting `where`, as a scalar SQL expression. */
export function listCountSql(spec: ListSpec, where: string): string {
  return `(SELECT count(*) FROM ${spec.from} WHERE ${where})`;
}

/**
 * The exact number of the scope's rows matching a search, as a scalar SQL expression; `counted` is
 * that number counted over the list conditions with the fragment (listCountSql of listSearchSql's
 * conditions, plan `index` when indexed, or a first search's collected matches: listMatchesCountSql).
 * A fragment that is one piece matches a row exactly when the row has it among its pieces, so its
 * count is the sum of the scope's rows of that piece in the piece counts: an index-only read of one
 * row per unit or tenant, where counting through the search index visits a heap block per match.
 * - search_piece (SearchPieceCounts, SearchEdgePieces): 3+ letters or digits without a break; or
 *   cut at a word's edge, "lva ", " oliv", "o s"; 5+ characters only without a digit. Per unit.
 * - search_tenant_piece (SearchPairPieces, SearchTenantPieces, SearchLongPairPieces,
 *   SearchParticlePieces): across one separator but for 1-2 characters on both sides ("a sil",
 *   "ilva s", "reira sant"), a whole word between separators (" silva "), a word's end, one
 *   separator, the next word whole and a separator ("a oliveira "), a separator, a word whole, one
 *   separator and the next one's start (" fernandes s"), across three words with 1-3 characters
 *   between ("a de fati", " maria da s"), or 5-6 letters and digits with a digit ("00020"). Per
 *   tenant: a unit's studies are `counted`.
 * Anything else is `counted`. Only the CASE branch taken runs (each is an InitPlan, run
 * when read).
 */
export function listSearchCountSql(spec: ListSpec, scope: DataScope, search: string, counted: string, p: SqlParams): string {
  const { table, tenantTable, count, perUnit } = spec.pieceCounts;
  if (scope.kind === 'unit' && !perUnit) return counted;
  const piece = p.add(search);
  const rows = p.bind(scopeCondition(scope, { tenant: 'c.tenant_id', unit: perUnit ? 'c.unit_id' : undefined }));
  // Outside a unit scope, `rows` names the tenant alone (or nothing): the tenant table's place.
  const perTenant =
    scope.kind === 'unit'
      ? ''
      : `
     WHEN search_tenant_piece(${piece}) IS NOT NULL
     THEN (SELECT coalesce(sum(c.${count}), 0) FROM ${tenantTable} c WHERE c.piece = search_tenant_piece(${piece}) AND ${rows})`;
  return `(CASE WHEN search_piece(${piece}) IS NOT NULL
     THEN (SELECT coalesce(sum(c.${count}), 0) FROM ${table} c WHERE c.piece = search_piece(${piece}) AND ${rows})${perTenant}
     ELSE ${counted} END)`;
}

/**
 * Which plan finds a page of a search fastest, from the exact number of matches in the scope:
 * walking the list order until the page is full visits about (offset + limit) x walked / matches
 * rows (`walked`: the rows the walk goes through, the scope's own or, for a unit's patients, the
 * tenant's); the search index visits each match once (its terms know the tenant and unit, so
 * nothing outside the scope is read) and sorts them. A fragment the index cannot serve is walked.
 * `bunched`: a walk of this search came back short (see walkCap), so its matches sit together in
 * the list order and the estimate does not hold for it: it is then walked only when going through
 * the whole scope costs less than visiting every match ("23010"'s 1,858 matches are collected,
 * "301"'s 11,144 cost 63 ms collected and are walked). `rowsPerMatch`: how many walked rows cost
 * what one collected match costs (COVERED_WALK_ROWS_PER_MATCH). A scope of at most
 * WALK_WHOLE_SCOPE rows is always walked (see searchCountPlan). `reach`: rows a walk of this search
 * needed per row of its page (SearchSizes.reach), when more than the spread promises.
 */
export function searchPlan(
  matches: number,
  walked: number,
  offset: number,
  limit: number,
  indexed: boolean,
  bunched = false,
  rowsPerMatch = 1,
  reach = 0,
): SearchPlan {
  if (!indexed || walked <= WALK_WHOLE_SCOPE) return 'walk';
  if (matches <= 0) return 'index';
  if (bunched) return matches * rowsPerMatch >= walked ? 'walk' : 'index';
  const walk = Math.max(((offset + limit) * walked) / matches, (offset + limit) * reach);
  return walk <= matches * rowsPerMatch ? 'walk' : 'index';
}

/**
 * `rowsPerMatch` for a list whose walks stay inside its order index (walkColumns, every list now):
 * collecting a match through the search index (a heap visit in random order, then the sort) costs
 * about what walking 8 index entries in order does, once both are in memory, as a busy archive's
 * are. Measured at 1,000,000 studies, warm: the super admin's "04017" collected (922 matches) in
 * 2.7 ms, 2.9 us each, "3000" (41,067) in 43 ms, 1.0 us each; the covering walk through 62,016
 * entries of the order index in 21.5 ms, 0.35 us each, the fragment's LIKE included; the patients'
 * "maria" collected (6,014) in 13 ms, walked (42,435 names) in 11 ms. The third round chose 20 from
 * a cold collection (5 us per match, "io sil"), and "04017" was walked for 17-27 ms where collecting
 * it takes 2.7 (bench/README.md, "Fifth round").
 */
export const COVERED_WALK_ROWS_PER_MATCH = 8;

/**
 * How many rows a walk may go through before giving up on the page: four times what matches spread
 * over the list order need, and 2,000 at least. Matches may instead sit together (a fragment of an
 * accession number or patient id, handed out in time order as the studies are listed: "23010" is
 * January 2023's accessions, and a walk from the newest went through 498,931 rows for its first
 * page, 263 ms); a walk that comes back short then leaves the page to the search index, or, for
 * so many matches that visiting them costs more, walks the whole scope (searchPlan, `bunched`).
 */
export function walkCap(matches: number, walked: number, offset: number, limit: number, bunched = false, reach = 0): number {
  if (bunched) return walked;
  const expected = Math.max(((offset + limit) * walked) / Math.max(1, matches), (offset + limit) * reach);
  // Less a millionth of a row: a reach read back (reachOf) gives its cap exactly, not one row more.
  const cap = Math.ceil(WALK_CAP_FACTOR * expected - 1e-6);
  return Math.max(WALK_CAP_MIN, walked <= WALK_WHOLE_SCOPE ? walked : 0, cap);
}

/**
 * walkCap in SQL, for a first search's walk (listFirstPageSql) on its own sizes (`matches`, `walked`:
 * SQL expressions), nothing yet learnt of the search: the same arithmetic, in the same order.
 */
export function walkCapSql(matches: string, walked: string, offset: number, limit: number): string {
  const expected = `((${offset + limit} * ${walked})::float8 / greatest(1, ${matches})::float8)`;
  return `greatest(${WALK_CAP_MIN}, CASE WHEN ${walked} <= ${WALK_WHOLE_SCOPE} THEN ${walked} ELSE 0 END,
                  ceil(${WALK_CAP_FACTOR} * ${expected} - 1e-6))::bigint`;
}

/**
 * The cap of the next walk when one of `cap` rows came back short, or null when the page is better
 * read as bunched matches (searchPlan). Matches spread unevenly through the list order: the super
 * admin's "3000" (41,067 matches in 1,000,000 studies: accession numbers of each month's 3,000th
 * study, and patient ids) has its 15th match at the 30,421st newest study, where its spread
 * promised 365. Collecting its matches through the search index took 79 ms; walking 30,421 entries
 * of the order index takes about 9. So a short walk is tried again WALK_WIDENING times wider while
 * that many rows cost less than collecting the matches (rowsPerMatch: COVERED_WALK_ROWS_PER_MATCH)
 * and fewer than the scope has; every walk stops at its page's last match, and the short ones cost
 * at most 1 / (WALK_WIDENING - 1) of the one that fills the page.
 */
export function widerWalkCap(cap: number, matches: number, walked: number, rowsPerMatch: number): number | null {
  const wider = cap * WALK_WIDENING;
  return wider < walked && wider <= matches * rowsPerMatch ? wider : null;
}

const WALK_WIDENING = 8;

/**
 * The reach (SearchSizes.reach) of a walk of `cap` rows that filled its page: walkCap gives that
 * cap again for this page, and scales it with the depth of another.
 */
export function reachOf(cap: number, offset: number, limit: number): number {
  return cap / (WALK_CAP_FACTOR * (offset + limit));
}

/**
 * How a search's total is counted when no piece count holds it: through the search index, or by
 * testing every row of the scope. The index's terms do not know the scope until after they are
 * read: a prefix term is expanded over the whole archive first ("00010":* is 49,980 studies at
 * 1,000,000, 17-35 ms before the scope narrows it to a unit's 54), where testing each of the
 * unit's 3,453 rows inside its order index took 1.1-1.9 ms. Up to WALK_WHOLE_SCOPE rows (a few ms
 * at most) the scope is tested row by row, and its pages are walked.
 */
export function searchCountPlan(walked: number, indexed: boolean): SearchPlan {
  return indexed && walked > WALK_WHOLE_SCOPE ? 'index' : 'walk';
}

/**
 * searchCountPlan in SQL, for a statement that reads the scope's size and counts the search at once:
 * the total counted through the index when `indexed` and more than WALK_WHOLE_SCOPE rows are
 * `walked` (SQL expressions), else row by row. Each count is a scalar subquery (an InitPlan), run
 * only when its CASE branch is taken.
 */
export function searchCountByPlanSql(walked: string, indexed: string, byIndex: string, byWalk: string): string {
  return `(CASE WHEN ${indexed} AND ${walked} > ${WALK_WHOLE_SCOPE} THEN ${byIndex} ELSE ${byWalk} END)`;
}

const WALK_WHOLE_SCOPE = 10_000;

/**
 * Whether a first search reads its page in the statement that counts it (listFirstPageSql): the
 * page is shallow (plannedOnce) and searchPlan, with nothing yet learnt of the search's walks,
 * collects its matches. In TypeScript, for ListSearch to tell whether the page came with the
 * count; collectsFirstPageSql is the same rule in SQL.
 */
export function collectsFirstPage(matches: number, walked: number, indexed: boolean, offset: number, limit: number): boolean {
  return (
    plannedOnce(offset) &&
    matches > offset &&
    searchPlan(matches, walked, offset, limit, indexed, false, COVERED_WALK_ROWS_PER_MATCH) === 'index'
  );
}

/**
 * collectsFirstPage in SQL, on a first search's sizes (`m._indexed`, `m._walked`, `m._total`):
 * searchPlan's test of a walk's length against the matches' cost, in integers.
 */
export function collectsFirstPageSql(m: string, offset: number, limit: number): string {
  if (!plannedOnce(offset)) return 'FALSE';
  return `(${m}._indexed AND ${m}._walked > ${WALK_WHOLE_SCOPE} AND ${m}._total > ${constantBound(offset)}
           AND ${constantBound(offset + limit)}::bigint * ${m}._walked > ${COVERED_WALK_ROWS_PER_MATCH} * ${m}._total::bigint * ${m}._total)`;
}

const WALK_CAP_FACTOR = 4;
const WALK_CAP_MIN = 2_000;

/**
 * The one piece a search fragment is, the first of the piece kinds listSearchCountSql reads, or
 * NULL: a SQL expression.
 */
export function searchPieceSql(search: string, p: SqlParams): string {
  const fragment = p.add(search);
  return `coalesce(search_piece(${fragment}), search_tenant_piece(${fragment}))`;
}

/** A kept first page, as listFirstPageSql reads it (listKeptPageSql). */
export interface KeptPageSql {
  /** A boolean SQL expression on a first search's total (`total`: SQL): whether the page is kept. */
  gate: (total: string) => string;
  /** The SQL of the page's ids, named as the id column. */
  ids: string;
  /** The list's conditions (the caller's scope above all), tested on each row the page names. */
  rows: string;
}

/**
 * A tenant's kept first page of a one-piece fragment (ListSpec.piecePages), for listFirstPageSql:
 * kept when the fragment is a piece with enough matches; its rows tested against `conditions` (the
 * list's, with the scope, added to `p`), so a page that named a row the caller may not see would come back short
 * and be read by the plan (ListSearch.first), never shown. Null when the list keeps no such pages or
 * the page asked is past their rows.
 */
export function listKeptPageSql(
  spec: ListSpec,
  tenantId: string,
  search: string,
  conditions: (p: SqlParams) => string,
  p: SqlParams,
  offset: number,
  limit: number,
): KeptPageSql | null {
  const pages = spec.piecePages;
  // Nothing is added to `p` when there is no kept page: the statement would not name it.
  if (!pages || offset + limit > pages.rows) return null;
  const piece = searchPieceSql(search, p);
  return {
    gate: (total) => `(${piece} IS NOT NULL AND ${total} >= ${pages.minMatches})`,
    ids: pages.ids(p.add(tenantId), piece, limit, offset),
    rows: conditions(p),
  };
}

/**
 * One page in list order, with `extra` (scalar subqueries: a total, counters) on every row. Shallow
 * pages are one scan in list order; deeper ones find the page's ids first (an index-only scan of the
 * scope's order index, however deep) and read only those rows whole. `unindexedOrder` sorts by an
 * expression no index provides, which leaves the planner the search indexes and a sort of the
 * matches: then the ids come first at any depth, so that only the page's rows are made whole. Made
 * whole, every match would be projected (the dates as text, every column) and copied into the sort:
 * "2409" (2,159 matches of the largest clinic at 1,000,000 studies) took 6.9 ms so and 4.3 ms with the
 * ids sorted first (medians of 24, generic plans, bench/README.md "Sixth round").
 * `constantBounds`: LIMIT and OFFSET written into the text, for a statement planned once
 * (PreparedQueries `generic`): planned without their values, a page is planned for a tenth of
 * the rows. Only for a bounded set of texts (plannedOnce).
 */
export function listPageSql(
  spec: ListSpec,
  where: string,
  extra: string,
  p: SqlParams,
  offset: number,
  limit: number,
  unindexedOrder = false,
  constantBounds = false,
): string {
  const order = unindexedOrder ? spec.unindexedOrder : spec.order;
  const bound = (n: number): string => (constantBounds ? constantBound(n) : p.add(n));
  const page = `ORDER BY ${order} LIMIT ${bound(limit)} OFFSET ${bound(offset)}`;
  if (offset <= DIRECT_OFFSET_MAX && !unindexedOrder) {
    return `SELECT ${spec.columns}, ${extra} FROM ${spec.from} WHERE ${where} ${page}`;
  }
  return `SELECT ${spec.columns}, ${extra} FROM ${spec.from}
           WHERE ${spec.id} IN (SELECT ${spec.id} FROM ${spec.from} WHERE ${where} ${page}) ORDER BY ${spec.order}`;
}

/** What a first search's statement calls the matches it collects (listFirstPageSql). */
const FIRST_MATCHES = '_matches';

/**
 * The number of a first search's collected matches (listFirstPageSql), as a scalar SQL expression:
 * its total when no piece count holds it (listSearchCountSql `counted`).
 */
export const listMatchesCountSql = `(SELECT count(*) FROM ${FIRST_MATCHES})`;

/**
 * A first search's sizes (`sizes`: a one-row query of `_version`, `_walked`, `_indexed`, `_total`)
 * with, when collectsFirstPageSql holds for them, its page of collected matches (`where`: the
 * list's conditions through the search index) in the same statement: every row of the page with
 * the sizes, or one row of sizes and NULL columns. The matches are collected once, each with its id
 * and order (`orderColumns`), as a CTE read when first needed: by the total, when `sizes` counts
 * them (listMatchesCountSql: no piece count holds the fragment), and by the page, sorted from what
 * the count collected. Counted and collected apart, every match cost two heap visits and the search
 * index was read twice ("ancisca de fati", 218 matches: 2.87 against 1.52 ms; bench/README.md, "Tenth
 * round"). The page is a LATERAL subquery gated on the sizes alone, so PostgreSQL runs it only when
 * the gate holds (a one-time filter); its bounds are in the text, for a statement planned once.
 */
export function listFirstPageSql(
  spec: ListSpec,
  sizes: string,
  where: string,
  offset: number,
  limit: number,
  walk?: WalkConditions,
  kept?: KeptPageSql | null,
): string {
  const { id } = spec;
  const column = idColumn(spec);
  const alias = tableAlias(spec);
  // A kept page (`m._kept`) is read as it is; else collected, or walked.
  const unkept = kept ? 'NOT m._kept AND ' : '';
  const collects = `(${unkept}${collectsFirstPageSql('m', offset, limit)})`;
  const collected = `SELECT ${id} FROM ${FIRST_MATCHES} ${alias}
                                WHERE ${collects}
                                ORDER BY ${spec.order} LIMIT ${constantBound(limit)} OFFSET ${constantBound(offset)}`;
  // The walk where the page is there and not collected, its cap from the sizes.
  const found = walk
    ? `(${collected})
                               UNION ALL
                               (${walkIdsSql(
                                 spec,
                                 `${walk.scope} AND NOT ${collects} AND ${unkept}m._total > ${constantBound(offset)}`,
                                 walk.match,
                                 walkCapSql('m._total', 'm._walked', offset, limit),
                                 constantBound(limit),
                                 constantBound(offset),
                               )})`
    : collected;
  const page = kept
    ? `(${found})
                               UNION ALL
                               (SELECT k.${column} FROM (${kept.ids}) k WHERE m._kept)`
    : found;
  return `WITH ${FIRST_MATCHES} AS MATERIALIZED (SELECT ${spec.orderColumns} FROM ${spec.from} WHERE ${where})
          SELECT ${spec.columns}, m._version, m._walked, m._indexed, m._total, m._kept
            FROM (SELECT z.*, ${kept ? kept.gate('z._total') : 'FALSE'} AS _kept FROM (${sizes} OFFSET 0) z OFFSET 0) m
            LEFT JOIN LATERAL (${page}) page ON TRUE
            LEFT JOIN ${spec.from} ON ${id} = page.${column}${kept ? ` AND ${kept.rows}` : ''}
           ORDER BY ${spec.order}`;
}

/**
 * What a walk tests (listWalkPageSql, and a first search's walk in listFirstPageSql): the list's
 * conditions without the fragment (`scope`) and the fragment's match for a walk (listSearchSql `walk`).
 */
export interface WalkConditions {
  scope: string;
  match: string;
}

/**
 * The ids of one page of a walk (listWalkPageSql): the scope's rows in list order, at most `cap`,
 * tested against `match`. `cap`, `limit` and `offset` are SQL: parameters, constants or expressions.
 */
function walkIdsSql(spec: ListSpec, scope: string, match: string, cap: string, limit: string, offset: string): string {
  if (!spec.walkColumns) throw new Error(`${spec.from}: no walkColumns`);
  const walked = `SELECT ${spec.walkColumns} FROM ${spec.from} WHERE ${scope} ORDER BY ${spec.order} LIMIT ${cap}`;
  return `SELECT ${spec.id} FROM (${walked}) ${tableAlias(spec)} WHERE ${match}
                                 ORDER BY ${spec.order} LIMIT ${limit} OFFSET ${offset}`;
}

/**
 * One page of a walk: the scope's rows in list order, at most `cap` of them (walkCap), tested
 * against `match`; the page's ids first, then those rows whole. With `walkColumns` in the scope's
 * order index the walk is an index-only scan that stops at the page's last match; the caller
 * compares the rows it got with what the exact total promises, to tell a cap reached.
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
  const ids = walkIdsSql(spec, scope, match, p.add(cap), p.add(limit), p.add(offset));
  return `SELECT ${spec.columns}, ${extra} FROM ${spec.from}
           WHERE ${spec.id} IN (${ids})
           ORDER BY ${spec.order}`;
}

/**
 * The rows of a page kept by id (ListTotals.keptPage), in list order, with `extra` on every row and
 * the list's conditions (the scope above all) tested on each: only the page's rows are read, by
 * their primary key. `ids`: a PostgreSQL array literal of the page's ids.
 */
export function listPageByIdsSql(spec: ListSpec, where: string, extra: string, p: SqlParams, ids: string): string {
  return `SELECT ${spec.columns}, ${extra} FROM ${spec.from}
           WHERE ${spec.id} = ANY(${p.add(ids)}) AND ${where} ORDER BY ${spec.order}`;
}
