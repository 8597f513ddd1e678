import { ApiPropertyOptional } from '@nestjs/swagger';
import { Transform } from 'class-transformer';
import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';

const toIntegerOrKeep = ({ value }: { value: unknown }) =>
  typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value;

/** `page` (integer >= 1, default 1). A client's `per_page` is ignored: page sizes are fixed. */
export class PageQueryDto {
  @ApiPropertyOptional({ type: Number, minimum: 1, default: 1 })
  @IsOptional()
  @Transform(toIntegerOrKeep)
  @IsInt({ message: 'The page field must be an integer.' })
  @Min(1, { message: 'The page field must be at least 1.' })
  @Max(100_000_000, { message: 'The page field is too large.' })
  page?: number;
}

/** PageQueryDto plus the `search` text (max 255). */
export class SearchPageQueryDto extends PageQueryDto {
  @ApiPropertyOptional({ maxLength: 255 })
  @IsOptional()
  @IsString({ message: 'The search field must be a string.' })
  @MaxLength(255, { message: 'The search field must not be greater than 255 characters.' })
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
  return { page: current, offset: (current - 1) * perPage };
}

/** Escapes LIKE metacharacters so the user's `%`, `_` and `\` match literally. */
export function likePattern(search: string): string {
  return `%${search.replace(/[\\%_]/g, (c) => `\\${c}`)}%`;
}

/**
 * One page of a list with a fixed page size: `fetch` gets the offset and limit and answers the
 * rows and the total; each row becomes its response shape through `toDto`.
 */
export async function fetchPage<Row, Dto>(
  page: number | undefined,
  perPage: number,
  fetch: (offset: number, limit: number) => Promise<[Row[], number]>,
  toDto: (row: Row) => Dto,
): Promise<Paginated<Dto>> {
  const current = pageOffset(page, perPage);
  const [rows, total] = await fetch(current.offset, perPage);
  return paginated(rows.map(toDto), total, current.page, perPage);
}
