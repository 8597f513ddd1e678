import { createHash, timingSafeEqual } from 'crypto';
import { parse as parseQueryString } from 'querystring';

/**
 * Key under which the lenient body parser (app.factory.ts) hands over a webhook body that was sent
 * as JSON but is not valid JSON, so the handler can still try to recover the study id from it.
 */
export const RAW_BODY = '__raw_body__';

/**
 * Compares the presented secret with the configured one in constant time: both are hashed first,
 * so neither their contents nor their lengths leak through timing.
 */
export function secretMatches(presented: unknown, expected: string): boolean {
  if (typeof presented !== 'string' || presented === '' || expected === '') return false;
  const a = createHash('sha256').update(presented, 'utf8').digest();
  const b = createHash('sha256').update(expected, 'utf8').digest();
  return timingSafeEqual(a, b);
}

/**
 * An Orthanc resource id is 5 groups of 8 hex digits; anything of that character set fitting the
 * column is accepted, so a different id scheme still works, but nothing that could escape a URL path.
 */
const STUDY_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function idOf(value: unknown): string | null {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return null;
  const id = (value as Record<string, unknown>).ID;
  if (typeof id !== 'string') return null;
  const trimmed = id.trim();
  return STUDY_ID.test(trimmed) ? trimmed : null;
}

function idOfJsonText(text: string): string | null {
  try {
    return idOf(JSON.parse(text));
  } catch {
    return null;
  }
}

/**
 * A form body whose key is a JSON text: Orthanc's Lua HttpPost without a Content-Type sends
 * `{"ID":"..."}` as application/x-www-form-urlencoded, which parses to `{ '{"ID":"..."}': '' }`
 * (or splits at an `=` inside the JSON, hence the key=value retry).
 */
function idOfForm(form: Record<string, unknown>): string | null {
  const direct = idOf(form);
  if (direct) return direct;
  for (const [key, raw] of Object.entries(form)) {
    const values = Array.isArray(raw) ? raw : [raw];
    for (const value of values) {
      const candidates = typeof value === 'string' && value !== '' ? [key, `${key}=${value}`] : [key];
      for (const text of candidates) {
        const id = idOfJsonText(text);
        if (id) return id;
      }
    }
  }
  return null;
}

function idOfText(text: string): string | null {
  return idOfJsonText(text) ?? idOfForm({ ...parseQueryString(text) });
}

/**
 * The image-server study id of a webhook body, whatever way it arrived: parsed JSON, a JSON text
 * (text/plain), JSON text that failed to parse (`{ [RAW_BODY]: text }`) or a form body whose keys
 * carry the JSON. Null when no usable `ID` can be found.
 */
export function extractStudyId(body: unknown): string | null {
  if (typeof body === 'string') return idOfText(body);
  if (Buffer.isBuffer(body)) return idOfText(body.toString('utf8'));
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  const record = body as Record<string, unknown>;
  if (typeof record[RAW_BODY] === 'string') return idOfText(record[RAW_BODY] as string);
  return idOfForm(record);
}
