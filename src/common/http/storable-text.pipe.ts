import { ArgumentMetadata, Injectable, PipeTransform } from '@nestjs/common';
import { Errors } from '../errors/api-errors';

const MAX_REPORTED = 20;
/** A UTF-16 surrogate without its partner: no Unicode character, and not encodable as UTF-8. */
const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

type Flaw = 'nul' | 'surrogate';

const flawOf = (text: string): Flaw | null =>
  text.includes('\u0000') ? 'nul' : LONE_SURROGATE.test(text) ? 'surrogate' : null;

const MESSAGES: Record<Flaw, (field: string) => string> = {
  nul: (field) => `The ${field} field must not contain NUL characters.`,
  surrogate: (field) => `The ${field} field must be well-formed Unicode text (it holds a lone surrogate).`,
};

/**
 * Every `path.to.field` (or key) of `value` whose text PostgreSQL cannot store, with the reason:
 * a NUL character, or a lone UTF-16 surrogate (JSON allows "\ud800"; UTF-8 has no encoding for it).
 */
export function unstorableTextFields(value: unknown, path = ''): Array<[string, Flaw]> {
  const found: Array<[string, Flaw]> = [];
  const stack: Array<[unknown, string]> = [[value, path]];
  while (stack.length > 0 && found.length < MAX_REPORTED) {
    const [current, at] = stack.pop()!;
    if (typeof current === 'string') {
      const flaw = flawOf(current);
      if (flaw) found.push([at || 'body', flaw]);
    } else if (Array.isArray(current)) {
      for (let i = current.length - 1; i >= 0; i--) stack.push([current[i], at ? `${at}.${i}` : String(i)]);
    } else if (current !== null && typeof current === 'object') {
      for (const [key, child] of Object.entries(current)) {
        const childPath = at ? `${at}.${key}` : key;
        const flaw = flawOf(key);
        if (flaw) found.push([childPath, flaw]);
        else stack.push([child, childPath]);
      }
    }
  }
  return found.sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
}

export const BODY_NOT_OBJECT = 'The request body must be a JSON object.';

/**
 * Text PostgreSQL cannot store (a NUL, a lone surrogate) would reach a query and be a 500: query
 * strings and bodies declared with a DTO are refused with the contract's 422 instead, naming the
 * field. A DTO body that is not an object (`null`, an array, a number) is refused too: validation
 * lets `null` through untouched, and a PATCH of `null` changed nothing and answered 200. It runs
 * after the guards, so an unauthenticated caller still gets 401. Bodies without a DTO (the image
 * server's webhook) are left to their handler.
 */
@Injectable()
export class RejectUnstorableTextPipe implements PipeTransform {
  transform(value: unknown, metadata: ArgumentMetadata): unknown {
    if (metadata.type !== 'query' && metadata.type !== 'body') return value;
    if (!metadata.metatype || metadata.metatype === Object) return value;
    if (
      metadata.type === 'body' &&
      metadata.metatype !== Array &&
      value !== undefined &&
      (value === null || typeof value !== 'object' || Array.isArray(value))
    ) {
      throw Errors.fieldInvalid('body', BODY_NOT_OBJECT);
    }
    const fields = unstorableTextFields(value);
    if (fields.length === 0) return value;
    throw Errors.validation(Object.fromEntries(fields.map(([field, flaw]) => [field, [MESSAGES[flaw](field)]])));
  }
}
