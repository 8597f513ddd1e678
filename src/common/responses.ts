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

/** A named Swagger schema for a page of `item`: data, current_page, per_page, total, last_page. */
export function PaginatedDto<T>(item: Type<T>, name: string) {
  class Page {
    @ApiProperty({ type: item, isArray: true }) data: T[];
    @ApiProperty({ example: 1 }) current_page: number;
    @ApiProperty({ example: 50 }) per_page: number;
    @ApiProperty({ example: 1 }) total: number;
    @ApiProperty({ example: 1 }) last_page: number;
  }
  Object.defineProperty(Page, 'name', { value: name });
  return Page;
}

export const ADMIN_PAGE_SIZE = 50;
