import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsOptional } from 'class-validator';
import { SEARCH_TOTAL_CAP } from '../database/list/list-query';
import { OneMessage, StringRules } from './validation/fields';

// Digits past a double's range still name an integer >= 1 (or <= -1): the largest double of that sign.
const toIntegerOrKeep = ({ value }: { value: unknown }) => {
  if (typeof value !== 'string' || !/^-?\d+$/.test(value)) return value;
  const number = Number(value);
  return Number.isFinite(number) ? number : Math.sign(number) * Number.MAX_VALUE;
};

/** Why a `page` value (an integer >= 1, however large: a page past the end is empty) is refused, or null. */
function pageFailure(value: unknown): string | null {
  if (typeof value !== 'number' || !Number.isInteger(value)) return 'The page field must be an integer.';
  if (value < 1) return 'The page field must be at least 1.';
  return null;
}

/**
 * Past every list's rows: no table holds 2^53 rows, and past it an offset is no longer exact. A
 * page's offset stops here, so SQL's bigint holds it; a page starting here is empty.
 */
export const MAX_OFFSET = Number.MAX_SAFE_INTEGER;

/** `page` (integer >= 1, default 1). A client's `per_page` is ignored: page sizes are fixed. */
export class PageQueryDto {
  @ApiPropertyOptional({ type: Number, minimum: 1, default: 1 })
  @IsOptional()
  @Transform(toIntegerOrKeep)
  @OneMessage('isPageNumber', pageFailure)
  page?: number;
}

/** PageQueryDto plus the `search` text (max 255). */
export class SearchPageQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ maxLength: 255 })
  @IsOptional()
  @StringRules('search', { max: 255 })
  search?: string;
}

export interface Paginated<T> {
  data: T[];
  current_page: number;
  per_page: number;
  /** Exact when `total_exact`; a search's total stops at 1,000 (docs/search.md). */
  total: number;
  last_page: number;
  total_exact: boolean;
}

export function paginated<T>(data: T[], total: number, page: number, perPage: number, totalExact = true): Paginated<T> {
  return {
    data,
    current_page: page,
    per_page: perPage,
    total,
    last_page: Math.max(1, Math.ceil(total / perPage)),
    total_exact: totalExact,
  };
}

export function pageOffset(page: number | undefined, perPage: number): { page: number; offset: number } {
  const current = page ?? 1;
  return { page: current, offset: Math.min((current - 1) * perPage, MAX_OFFSET) };
}

/**
 * A search over `columns` as a condition for a query builder (parameter `:searchText`): anywhere in
 * any column, regardless of case and accents (`joao` finds `JOÃO`), with `%`, `_` and `\` literal.
 * search_fold and search_pattern are the folding the studies' and patients' searches use.
 */
export function foldedSearch(columns: string[], search: string): { sql: string; params: { searchText: string } } {
  const matches = columns.map((column) => `search_fold(${column}) LIKE search_pattern(:searchText)`);
  return { sql: `(${matches.join(' OR ')})`, params: { searchText: search } };
}

/**
 * One page of a list with a fixed page size: `fetch` gets the offset and limit and answers the
 * rows and the full count; each row becomes its response shape through `toDto`. With a `search`,
 * the answer follows the contract's rule for every search (docs/search.md): past SEARCH_TOTAL_CAP
 * matches, `total` is the cap, `total_exact` false, and no page goes past the cap.
 */
export async function fetchPage<Row, Dto>(
  page: number | undefined,
  perPage: number,
  fetch: (offset: number, limit: number) => Promise<[Row[], number]>,
  toDto: (row: Row) => Dto,
  search?: string,
): Promise<Paginated<Dto>> {
  const current = pageOffset(page, perPage);
  const [rows, count] = await fetch(current.offset, perPage);
  const exact = !search || count <= SEARCH_TOTAL_CAP;
  const total = exact ? count : SEARCH_TOTAL_CAP;
  const shown = exact ? rows : rows.slice(0, Math.max(0, total - current.offset));
  return paginated(shown.map(toDto), total, current.page, perPage, exact);
}
