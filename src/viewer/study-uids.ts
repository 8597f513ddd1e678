/**
 * Which study instance UIDs a DICOMweb request (the proxy's X-Original-URI) reaches.
 *
 * Deny by default: the result is null, and the request refused, when the URI names no study UID or
 * names one in a form we cannot vouch for (empty, wildcard, not a plain dotted-number UID, broken
 * percent-encoding). Otherwise it lists every UID named, from the path form `/studies/<uid>` and from
 * the query keys `0020000D`, `StudyInstanceUIDs` and `StudyInstanceUID` (keys case-insensitive, the
 * tag also in its `0020,000D` spelling, which the image server understands too). A value may carry
 * several UIDs separated by `,` or `\`, percent-encoded or not.
 */
const STUDY_UID_KEYS = new Set(['0020000d', 'studyinstanceuid', 'studyinstanceuids']);
const UID = /^[0-9]+(\.[0-9]+)*$/;
const MAX_UID_LENGTH = 64;
const PATH_STUDY = /\/studies\/([^/]*)/gi;
/**
 * Dot segments and encoded slashes: after normalisation such a path reaches another resource than
 * the one read here (`/studies/<ours>/../<theirs>`), so it is refused outright.
 */
const PATH_TRICK = /(^|\/)(\.|%2e){1,2}(\/|$)|%2f/i;

// It runs before every DICOMweb request of the viewer: no intermediate strings or iterators when the
// URI is the plain path form (no fragment, no encoding, one UID).
export function extractStudyUids(originalUri: string | undefined | null): string[] | null {
  if (typeof originalUri !== 'string' || originalUri.length === 0) return null;
  const fragmentAt = originalUri.indexOf('#');
  const withoutFragment = fragmentAt === -1 ? originalUri : originalUri.slice(0, fragmentAt);
  const queryAt = withoutFragment.indexOf('?');
  const path = queryAt === -1 ? withoutFragment : withoutFragment.slice(0, queryAt);
  if (PATH_TRICK.test(path)) return null;

  const values: string[] = [];
  PATH_STUDY.lastIndex = 0;
  for (let match = PATH_STUDY.exec(path); match !== null; match = PATH_STUDY.exec(path)) values.push(match[1]);
  if (queryAt !== -1) {
    for (const part of withoutFragment.slice(queryAt + 1).split('&')) {
      if (part === '') continue;
      const eq = part.indexOf('=');
      const key = decode(eq === -1 ? part : part.slice(0, eq));
      if (key === null) return null;
      if (!STUDY_UID_KEYS.has(normaliseKey(key))) continue;
      values.push(eq === -1 ? '' : part.slice(eq + 1));
    }
  }
  if (values.length === 0) return null;

  const uids: string[] = [];
  for (const raw of values) {
    const value = decode(raw);
    if (value === null) return null;
    const list = value.includes(',') || value.includes('\\') ? value.split(/[,\\]/) : [value];
    for (const uid of list) {
      if (uid.length > MAX_UID_LENGTH || !UID.test(uid)) return null;
      if (!uids.includes(uid)) uids.push(uid);
    }
  }
  return uids;
}

function normaliseKey(key: string): string {
  return key.replace(/[\s(),]/g, '').toLowerCase();
}

/** Percent-decoding as a query string does (`+` is a space); null when malformed. */
function decode(text: string): string | null {
  if (!text.includes('%') && !text.includes('+')) return text;
  try {
    return decodeURIComponent(text.replace(/\+/g, ' '));
  } catch {
    return null;
  }
}
