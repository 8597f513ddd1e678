import { applyDecorators } from '@nestjs/common';
import { ApiPropertyOptional } from '@nestjs/swagger';
import { IfPresentAndNotNull, StringRules } from '../common/validation/fields';

/**
 * The optional `slug` of a tenant or unit in a create body: absent or null, or a string of at most
 * 255 characters (normalised to a lowercase hyphenated slug by the service). `description` says
 * what absent means for that record.
 */
export function SlugField(description: string, example?: string): PropertyDecorator {
  return applyDecorators(
    ApiPropertyOptional({ maxLength: 255, nullable: true, type: String, description, ...(example ? { example } : {}) }),
    IfPresentAndNotNull(),
    StringRules('slug', { max: 255 }),
  );
}

/** A tenant's or unit's creation and update times, as the API writes them (ISO 8601). */
export function timestampsOf(record: { created_at: Date; updated_at: Date }): { created_at: string; updated_at: string } {
  return { created_at: record.created_at.toISOString(), updated_at: record.updated_at.toISOString() };
}
