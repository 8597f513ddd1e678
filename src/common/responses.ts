import { Type } from '@nestjs/common';
import { ApiProperty } from '@nestjs/swagger';

/** `{id, name}` of a related tenant or unit. */
export class NamedRefDto {
  @ApiProperty({ format: 'uuid' }) id: string;
  @ApiProperty() name: string;
}

export class ValidationErrorDto {
  @ApiProperty({ example: 'The name field is required.' }) message: string;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'array', items: { type: 'string' } },
    example: { name: ['The name field is required.'] },
  })
  errors: Record<string, string[]>;
}

export class NotFoundDto {
  @ApiProperty({ example: 'Tenant not found.' }) message: string;
}

/** What every page's `total` means (decisions.md, "Pagination"). */
export const TOTAL_DESCRIPTION =
  'The number of matching records. A search counts its matches exactly up to 1,000: past that, total is 1000 and total_exact is false.';
export const TOTAL_EXACT_DESCRIPTION =
  'Whether total is exact: false only for a search with more than 1,000 matches (total 1000, last_page from it; every page up to it is exact and in order). Lists without a search are always exact.';
export const LAST_PAGE_DESCRIPTION = 'The last page of total (at least 1).';

/** A named Swagger schema for a page of `item`: data, current_page, per_page, total, last_page, total_exact. */
export function PaginatedDto<T>(item: Type<T>, name: string) {
  class Page {
    @ApiProperty({ type: item, isArray: true }) data: T[];
    @ApiProperty({ example: 1 }) current_page: number;
    @ApiProperty({ example: 50 }) per_page: number;
    @ApiProperty({ example: 1, description: TOTAL_DESCRIPTION }) total: number;
    @ApiProperty({ example: 1, description: LAST_PAGE_DESCRIPTION }) last_page: number;
    @ApiProperty({ example: true, description: TOTAL_EXACT_DESCRIPTION }) total_exact: boolean;
  }
  Object.defineProperty(Page, 'name', { value: name });
  return Page;
}

export const ADMIN_PAGE_SIZE = 50;
