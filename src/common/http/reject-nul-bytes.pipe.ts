import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { Errors } from '../errors/api-errors';

const MAX_REPORTED = 20;

/** Every `path.to.field` (or key) of `value` whose text holds a NUL character. */
export function fieldsWithNul(value: unknown, path = ''): string[] {
  const found: string[] = [];
  const stack: Array<[unknown, string]> = [[value, path]];
  while (stack.length > 0 && found.length < MAX_REPORTED) {
    const [current, at] = stack.pop()!;
    if (typeof current === 'string') {
      if (current.includes('\u0000')) found.push(at || 'body');
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push([current[i], at ? `${at}.${i}` : String(i)]);
    } else if (current !== null && typeof current === 'object') {
      for (const [key, child] of Object.entries(current)) {
        const childPath = at ? `${at}.${key}` : key;
        if (key.includes('\u0000')) found.push(childPath);
        else stack.push([child, childPath]);
      }
    }
  }
  return found.sort();
}

/**
 * PostgreSQL cannot store or compare text holding NUL (0x00), in text or jsonb columns: a NUL
 * that reached a query would be a 500. Query strings and bodies declared with a DTO are refused
 * with the contract's 422 instead. It runs after the guards, so an unauthenticated caller still
 * gets 401. Bodies without a DTO (the image server's webhook) are left to their handler.
 */
@Injectable()
export class RejectNulBytesPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type !== 'query' && metadata.type !== 'body') return value;
    if (!metadata.metatype || metadata.metatype === Object) return value;
    const fields = fieldsWithNul(value);
    if (fields.length === 0) return value;
    throw Errors.validation(
      Object.fromEntries(fields.map((field) => [field, [`The ${field} field must not contain NUL characters.`]])),
    );
  }
}
