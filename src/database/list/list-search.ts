import { Injectable } from '@nestjs/common';
import {
  listCountSql,
  listFirstSearchSql,
  listIdsPageSql,
  listPageSql,
  listSearchSql,
  ListSpec,
  listWalkPageSql,
  SEARCH_TOTAL_CAP,
  SMALL_SCOPE_ROWS,
  walkCap,
} from './list-query';
import { TtlCache } from '../../common/cache/ttl-cache';
import { CounterSql, KeptSearch, ListTotals } from './list-totals';
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
  /** The list and the scope alone: what the scope's size is kept under. */
  scopeKey: string;
}

/** The `count` uuids from the `offset`-th of `ids` (16 bytes each, as uuid_send writes them). */
export function uuidsAt(ids: Uint8Array, offset: number, count: number): string[] {
  const start = Math.min(offset * 16, ids.length);
  const hex = Buffer.from(ids.buffer, ids.byteOffset + start, Math.min(count * 16, ids.length - start)).toString('hex');
  const uuid = /^(.{8})(.{4})(.{4})(.{4})/;
  return Array.from({ length: hex.length / 32 }, (_, i) => hex.slice(i * 32, i * 32 + 32).replace(uuid, '$1-$2-$3-$4-'));
}

/**
 * A page walked or collected (the matches from `offset` on, in list order) that starts where the
 * kept ids end, read at the kept version: its ids extend them, so that it is read by id when it
 * comes again. Returns the rows.
 */
export function keepIds<Row extends PageColumns>(kept: KeptSearch, offset: number, rows: Row[]): Row[] {
  const known = kept.ids ?? new Uint8Array(0);
  if (offset * 16 !== known.length || rows.length === 0 || rows[0]._version !== kept.version) return rows;
  const added = Buffer.from(rows.map((row) => (row as { id?: string }).id!.replace(/-/g, '')).join(''), 'hex');
  kept.ids = new Uint8Array(Buffer.concat([known, added]).subarray(0, 16 * SEARCH_TOTAL_CAP));
  return rows;
}

/** A row of a page, not the one row of sizes a first search with no page row answers. */
const hasId = (row: object): boolean => (row as { id?: unknown }).id != null;

/** A searched page: its total is exact up to SEARCH_TOTAL_CAP, else the cap (`exact` false). */
export interface SearchPage<Row> {
  rows: Row[];
  total: number;
  exact: boolean;
}

/** The rows a walk of the scope goes through, the rows of its clinics, and whether the fragment has index terms. */
export function searchMetaSql(query: ListSearchQuery, p: SqlParams): string {
  const counters = query.counters(p);
  return `SELECT ${counters.walked} AS walked, ${counters.clinic} AS clinic, search_terms(${p.add(query.search)}) IS NOT NULL AS indexed`;
}

/**
 * Whether a fragment has index terms, told without asking PostgreSQL when it can be: three ASCII
 * letters or digits in a row stay a piece of 3+ letters or digits through search_fold, so
 * search_terms is never NULL for them; for any other fragment, undefined (ask: searchMetaSql).
 */
export function surelyIndexed(search: string): true | undefined {
  return /[A-Za-z0-9]{3}/.test(search) ? true : undefined;
}

/**
 * A first search (no count kept at the scope's version): its matches counted up to one past the
 * cap and its page sorted from them, with the first thousand's ids in list order when they are
 * known, in one statement (listFirstSearchSql). `indexed`: up to 1,001 candidates of the index
 * terms in the order they come; else the scope's order index walked in list order, so that the
 * first thousand are known in order past the cap too.
 */
export function searchFirstSql(query: ListSearchQuery, p: SqlParams, offset: number, limit: number, indexed: boolean): string {
  const version = `, ${query.counters(p).version} AS _version`;
  const order = indexed ? undefined : query.spec.order;
  return listFirstSearchSql(query.spec, searchWhere(query, p, indexed), version, p, offset, limit, order);
}

/** The list's conditions and the fragment; `indexed`: through the index terms too (listSearchSql). */
function searchWhere(query: ListSearchQuery, p: SqlParams, indexed: boolean): string {
  return `${query.conditions(p, indexed)} AND ${listSearchSql(query.spec, query.search, p, indexed ? query.tenants(p) : undefined)}`;
}

/** The rows of a kept search's page by their ids (KeptSearch.ids), still in the scope and matching. */
export function searchIdsSql(query: ListSearchQuery, p: SqlParams, ids: string[]): string {
  const version = `, ${query.counters(p).version} AS _version`;
  return listIdsPageSql(query.spec, searchWhere(query, p, false), version, p, ids);
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

/**
 * Whether a search of a large scope, with a fragment that has index terms, reads them, from the
 * planner's `estimate` of its matches: not for a dense fragment (DENSE_SHARE); and the terms gather
 * the fragment's candidates in the whole clinic, so in a unit they pay only while those are fewer
 * than the unit's rows a walk reads (a unit of 10,154 studies in a clinic of 600,000: a fragment
 * with 300 matches in the unit gathered 18,000 candidates, 7 ms, where a walk of the unit takes 2).
 */
function termsPay(meta: SearchMeta, estimate: number): boolean {
  return estimate < DENSE_SHARE * meta.walked && (estimate * meta.clinic) / Math.max(1, meta.walked) < meta.walked;
}

/**
 * A page of the search walked in list order: at most `cap` rows of the scope, from the start or,
 * with `from`, from that leading order value on (ListSpec.walkFrom).
 */
export function searchWalkSql(
  query: ListSearchQuery,
  p: SqlParams,
  offset: number,
  limit: number,
  cap: number,
  from?: string,
): string {
  const { spec } = query;
  const version = `, ${query.counters(p).version} AS _version`;
  const scope = query.conditions(p) + (from === undefined ? '' : ` AND ${spec.walkFrom.condition(p.add(from))}`);
  return listWalkPageSql(spec, scope, listSearchSql(spec, query.search, p), version, p, offset, limit, cap);
}

/** A page of the search's matches collected through the index terms and sorted. */
export function searchCollectSql(query: ListSearchQuery, p: SqlParams, offset: number, limit: number): string {
  const version = `, ${query.counters(p).version} AS _version`;
  return listPageSql(query.spec, searchWhere(query, p, true), version, p, offset, limit, true);
}

/** What a search learns of its scope: the rows a walk reads, its clinics' rows, whether the fragment has terms. */
interface SearchMeta {
  walked: number;
  clinic: number;
  indexed: boolean;
}

/** What a search statement adds to each row: the scope's version when it ran (a first search's, its count too, and on one row its matches' ids). */
export interface PageColumns {
  _version: string;
  _total?: string;
  _ids?: Buffer | null;
}

// Scope sizes steer plans only (a small scope walked whole, a walk's cap, the dense share): a minute old will do.
const SCOPE_SIZE_MS = 60_000;
const MAX_SCOPE_SIZES = 10_000;

/**
 * A page of a searched list, for every list (studies, patients). The matches are counted up to one
 * past SEARCH_TOTAL_CAP and the count is kept with the scope's version (ListTotals). Up to the cap,
 * the first search sorts its matches and keeps their ids in list order, and its later pages read
 * their rows by id. Past it, the matches are dense enough that a walk in list order meets a page's
 * rows soon; a walk that comes back short (the matches sit together far down the list order)
 * leaves the page to collecting through the search index, and the kept count remembers it. A page
 * of a kept count carries the scope's version: when it moved, the page is thrown away and the
 * search counted again, so a kept count is never used past a change of its scope. Pages stop at
 * the cap: past a thousand matches the user types more. A page walked or collected from the start
 * on keeps its ids too (keepIds), so that it is read by id when it comes again.
 *
 * Round trips: a search seen before, one statement; a first search, its estimate (a large scope)
 * and its count with the page, plus the page of a walk past the cap; the scope's size and, for a
 * fragment without three ASCII letters or digits, whether it has index terms, once a minute.
 */
@Injectable()
export class ListSearch {
  private readonly scopeSizes = new TtlCache<{ walked: number; clinic: number }>(MAX_SCOPE_SIZES);

  constructor(
    private readonly totals: ListTotals,
    private readonly prepared: PreparedQueries,
  ) {}

  /**
   * The exact total of a list filtered without a search (a report status, a unit's patients): the
   * same version and kept count as a search's, counted in full.
   */
  async exactTotal(query: Omit<ListSearchQuery, 'search' | 'tenants' | 'scopeKey'>): Promise<number> {
    const kept = await this.totals.cached(query.key, await this.versionOf(query), async () => {
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
    // search_text joins the fields with U+001F: a fragment holding it lies in none of them.
    if (query.search.includes('\u001f')) return { rows: [], total: 0, exact: true };
    const kept = this.totals.latest(query.key);
    if (kept) {
      const page = await this.keptPage<Row>(query, kept, offset, limit);
      if (page) return page;
    }
    return this.firstPage<Row>(query, offset, limit);
  }

  /** A first search: counted (up to one past the cap) with its page, the count kept. */
  private async firstPage<Row>(query: ListSearchQuery, offset: number, limit: number): Promise<SearchPage<Row>> {
    const meta = await this.meta(query);
    // A small scope, or a fragment without terms, is walked. Sorting every candidate of the terms,
    // to know the first thousand past the cap too, cost more than the walks it spared: candidates
    // are not matches ("ana p"; 30 ms a super admin's search at 3,000,000 studies).
    const throughTerms = meta.indexed && meta.walked > SMALL_SCOPE_ROWS && termsPay(meta, await this.estimate(query));
    const q = new SqlParams();
    const rows = await this.prepared.query<Row & PageColumns>(searchFirstSql(query, q, offset, limit, throughTerms), q.values);
    const [{ _total, _version }] = rows;
    const kept: KeptSearch = { total: Number(_total), version: _version, walked: meta.walked };
    const total = Math.min(kept.total, SEARCH_TOTAL_CAP);
    if (kept.total <= SEARCH_TOTAL_CAP || !throughTerms) {
      // A copy of its own size: the parsed Buffer may be a slice of a shared pool the cache would hold.
      const ids = rows.find((row) => row._ids)?._ids ?? Buffer.alloc(0);
      kept.ids = new Uint8Array(ids.subarray(0, 16 * SEARCH_TOTAL_CAP));
      this.totals.keepLatest(query.key, kept);
      return { rows: rows.filter(hasId), total, exact: kept.total <= SEARCH_TOTAL_CAP };
    }
    this.totals.keepLatest(query.key, kept);
    // Just counted: past the cap, a change since would not change the total said, and the page is read now.
    return (await this.keptPage<Row>(query, kept, offset, limit, false))!;
  }

  /**
   * A page of a search whose count is kept; null when its scope's version moved since (or no row
   * came back to tell), unless `verify` is false: the caller counts again.
   */
  private async keptPage<Row>(
    query: ListSearchQuery,
    kept: KeptSearch,
    offset: number,
    limit: number,
    verify = true,
  ): Promise<SearchPage<Row> | null> {
    const total = Math.min(kept.total, SEARCH_TOTAL_CAP);
    const exact = kept.total <= SEARCH_TOTAL_CAP;
    const wanted = Math.min(limit, total - offset);
    const current = (rows: PageColumns[]) => !verify || (rows.length > 0 && rows[0]._version === kept.version);
    if (wanted <= 0) return !verify || (await this.versionOf(query)) === kept.version ? { rows: [], total, exact } : null;

    if ((offset + wanted) * 16 <= (kept.ids?.length ?? 0)) {
      const q = new SqlParams();
      const ids = uuidsAt(kept.ids!, offset, wanted);
      const rows = await this.prepared.query<Row & PageColumns>(searchIdsSql(query, q, ids), q.values);
      // Every row still in the scope and matching, and nothing changed there since the count.
      return rows.length === ids.length && current(rows) ? { rows, total, exact } : null;
    }
    // Past the ids known: counted through the index terms, past the cap. A bunched search whose
    // first match is known walks from it: its matches sit together there.
    const from = (kept.bunched && kept.walkFrom) || undefined;
    if (from || !kept.bunched) {
      const q = new SqlParams();
      const cap = walkCap(kept.total, kept.walked, offset, wanted);
      const rows = await this.prepared.query<Row & PageColumns>(searchWalkSql(query, q, offset, wanted, cap, from), q.values);
      if (rows.length > 0 && !current(rows)) return null;
      if (rows.length >= wanted) return { rows: keepIds(kept, offset, rows), total, exact };
      if (from) kept.walkFrom = null;
      else kept.bunched = true;
    }
    const q = new SqlParams();
    const rows = await this.prepared.query<Row & PageColumns>(searchCollectSql(query, q, offset, wanted), q.values);
    if (!current(rows)) return null;
    // The first page's first row is the first match: under this version, every match is at or after it.
    if (kept.bunched && kept.walkFrom === undefined && offset === 0 && rows.length > 0) {
      kept.walkFrom = String((rows[0] as Record<string, unknown>)[query.spec.walkFrom.field]);
    }
    return { rows: keepIds(kept, offset, rows), total, exact };
  }

  /** The scope's sizes (kept a minute) and whether the fragment has index terms, asked only when not known. */
  private async meta(query: ListSearchQuery): Promise<SearchMeta> {
    const sizes = this.scopeSizes.get(query.scopeKey);
    const indexed = surelyIndexed(query.search);
    if (sizes !== undefined && indexed !== undefined) return { ...sizes, indexed };
    const p = new SqlParams();
    const [row] = await this.prepared.query<{ walked: string; clinic: string; indexed: boolean }>(
      searchMetaSql(query, p),
      p.values,
    );
    const known = { walked: Number(row.walked), clinic: Number(row.clinic) };
    this.scopeSizes.set(query.scopeKey, known, Date.now() + SCOPE_SIZE_MS);
    return { ...known, indexed: row.indexed };
  }

  private async versionOf(query: Pick<ListSearchQuery, 'counters'>): Promise<string> {
    const p = new SqlParams();
    const [row] = await this.prepared.query<{ version: string }>(`SELECT ${query.counters(p).version} AS version`, p.values);
    return row.version;
  }

  /** The planner's estimate of the fragment's matches in the scope (searchEstimateSql). */
  private async estimate(query: ListSearchQuery): Promise<number> {
    const p = new SqlParams();
    const [row] = await this.prepared.query<{ 'QUERY PLAN': Array<{ Plan: { 'Plan Rows': number } }> }>(
      searchEstimateSql(query, p),
      p.values,
    );
    return row['QUERY PLAN'][0].Plan['Plan Rows'];
  }
}
