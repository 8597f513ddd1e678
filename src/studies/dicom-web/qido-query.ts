/**
 * The query string of a QIDO-RS study search (GET /dicom-web/studies), read into the filters the
 * archive's index can answer. Keys come as keywords (`PatientName`) or tags (`00100010`,
 * `0010,0010`), as OHIF and other DICOMweb clients send them; keys the index does not hold are
 * ignored, as QIDO-RS lets an origin server do. A malformed value is a QidoQueryError (400), never a
 * silently wrong answer.
 */

import { DELETED_MARKS, foldLatin, SPELLINGS } from './latin-fold';

export const QIDO_DEFAULT_LIMIT = 1000;
export const QIDO_MAX_LIMIT = 1000;
const MAX_OFFSET = 100_000_000;
const MAX_VALUE_LENGTH = 255;
const MAX_UIDS = 1000;
const UID = /^[0-9]+(\.[0-9]+)*$/;
const MODALITY = /^[A-Z0-9_]{1,16}$/;
const DATE = /^(\d{4})(\d{2})(\d{2})$/;

export interface DateRange {
  /** YYYY-MM-DD, inclusive; absent for an open start. */
  from?: string;
  /** YYYY-MM-DD, inclusive; absent for an open end. */
  to?: string;
}

/** A text match: `exact` as given, or a LIKE `pattern` (QIDO `*` and `?` translated, the rest escaped). */
export type TextMatch = { exact: string } | { pattern: string };

/** A match ignoring case and accents: a regular expression (insensitiveRegex). */
export interface InsensitiveMatch {
  regex: string;
  /**
   * The longest literal run of the value (between wildcards) when it has 3+ letters or digits in a
   * row: tested first on the folded text (search_text), which the order indexes carry, before the
   * regular expression on the row.
   */
  indexedRun?: string;
}

export interface QidoStudyQuery {
  patientName?: InsensitiveMatch;
  patientId?: TextMatch;
  accessionNumber?: TextMatch;
  studyDescription?: InsensitiveMatch;
  studyInstanceUids?: string[];
  studyDate?: DateRange;
  modalities?: string[];
  limit: number;
  offset: number;
}

export class QidoQueryError extends Error {}

type Attribute =
  'PatientName' | 'PatientID' | 'AccessionNumber' | 'StudyDescription' | 'StudyInstanceUID' | 'StudyDate' | 'ModalitiesInStudy';

type Control = 'limit' | 'offset' | 'fuzzymatching';
const CONTROLS = new Set(['limit', 'offset', 'fuzzymatching']);

const ATTRIBUTES = new Map<string, Attribute>(
  Object.entries({
    patientname: 'PatientName',
    '00100010': 'PatientName',
    patientid: 'PatientID',
    '00100020': 'PatientID',
    accessionnumber: 'AccessionNumber',
    '00080050': 'AccessionNumber',
    studydescription: 'StudyDescription',
    '00081030': 'StudyDescription',
    studyinstanceuid: 'StudyInstanceUID',
    '0020000d': 'StudyInstanceUID',
    studydate: 'StudyDate',
    '00080020': 'StudyDate',
    modalitiesinstudy: 'ModalitiesInStudy',
    '00080061': 'ModalitiesInStudy',
  } satisfies Record<string, Attribute>),
);

/** After each character, the marks search_fold deletes (a decomposed accent). */
const MARKS = `[${DELETED_MARKS}]*`;

/**
 * A QIDO-RS text match as a PostgreSQL regular expression that ignores case and accents as
 * search_fold does: the value is folded, each folded letter becomes the class of its spellings (a
 * folded pair such as "ss" also matches its one-letter spelling "ß", pairs read from the left), `*`
 * any run, `?` one character, anchored (a value without wildcards is an exact match). It reads the
 * field's own column, since the match is anchored to that one field (search_text joins three); the
 * folded search_text only narrows the rows first (QidoRepository). At most a few hundred characters
 * per character of the value, which is at most 255.
 */
export function insensitiveRegex(value: string): string {
  const folded = [...foldLatin(value)];
  let regex = '^';
  for (let i = 0; i < folded.length; i++) {
    const pair = i + 1 < folded.length ? SPELLINGS.get(folded[i] + folded[i + 1]) : undefined;
    if (pair) {
      regex += `(?:${one(folded[i])}${one(folded[i + 1])}|[${pair}]${MARKS})`;
      i++;
    } else regex += one(folded[i]);
  }
  return `${regex}$`;
}

/** One folded character of a value as a piece of insensitiveRegex. */
function one(char: string): string {
  if (char === '*') return '.*';
  if (char === '?') return `.${MARKS}`;
  const spellings = SPELLINGS.get(char);
  if (spellings) return `[${spellings}]${MARKS}`;
  if (/[\\^$.|+()[\]{}]/.test(char)) return `\\${char}${MARKS}`;
  // A letter outside the Latin ranges: either case.
  const upper = char.toUpperCase();
  if (upper.length === 1 && upper !== char) return `[${char}${upper}]${MARKS}`;
  return `${char}${MARKS}`;
}

/** A query key as the search reads it: `0010,0010`, `(0010,0010)` and `patientname` are spellings too. */
const keyOf = (rawKey: string) => rawKey.replace(/[\s,()]/g, '').toLowerCase();

const TEXT_ATTRIBUTES = new Set<Attribute | undefined>(['PatientName', 'PatientID', 'AccessionNumber', 'StudyDescription']);

/**
 * The values of the text attributes (those with wildcards) under every spelling parseQidoStudyQuery
 * reads (OHIF sends PatientID as 00100020): what the fair share weighs.
 */
export function qidoTextValues(query: Record<string, unknown>): unknown[] {
  return Object.entries(query).flatMap(([key, value]) => (TEXT_ATTRIBUTES.has(ATTRIBUTES.get(keyOf(key))) ? [value] : []));
}

export function parseQidoStudyQuery(query: Record<string, unknown> | null | undefined): QidoStudyQuery {
  const result: QidoStudyQuery = { limit: QIDO_DEFAULT_LIMIT, offset: 0 };
  const seen = new Set<string>();
  for (const [rawKey, rawValue] of Object.entries(query ?? {})) {
    const key = keyOf(rawKey);
    if (key === 'includefield') continue; // every attribute we hold is always returned
    const attribute = ATTRIBUTES.get(key);
    const known: Attribute | Control | undefined = attribute ?? (CONTROLS.has(key) ? (key as Control) : undefined);
    if (known === undefined) continue;
    if (seen.has(known)) throw new QidoQueryError(`The ${rawKey} parameter is given more than once.`);
    seen.add(known);
    const value = single(rawKey, rawValue);
    switch (known) {
      case 'limit':
        result.limit = Math.min(integer(rawKey, value, 1, Number.MAX_SAFE_INTEGER), QIDO_MAX_LIMIT);
        break;
      case 'offset':
        result.offset = integer(rawKey, value, 0, MAX_OFFSET);
        break;
      case 'fuzzymatching':
        if (value !== 'true' && value !== 'false')
          throw new QidoQueryError('The fuzzymatching parameter must be true or false.');
        break;
      default:
        readAttribute(result, known, value);
    }
  }
  return result;
}

function readAttribute(result: QidoStudyQuery, attribute: Attribute, value: string): void {
  // An empty value is universal matching: no condition.
  if (value === '') return;
  switch (attribute) {
    case 'PatientName':
      return void (result.patientName = insensitiveMatch(value));
    case 'PatientID':
      return void (result.patientId = textMatch(value) ?? undefined);
    case 'AccessionNumber':
      return void (result.accessionNumber = textMatch(value) ?? undefined);
    case 'StudyDescription':
      return void (result.studyDescription = insensitiveMatch(value));
    case 'StudyInstanceUID': {
      const uids = [...new Set(value.split(/[,\\]/))];
      if (uids.length > MAX_UIDS) throw new QidoQueryError(`At most ${MAX_UIDS} StudyInstanceUID values are accepted.`);
      for (const uid of uids) {
        if (uid.length > 64 || !UID.test(uid))
          throw new QidoQueryError('The StudyInstanceUID parameter must be UIDs separated by commas.');
      }
      result.studyInstanceUids = uids;
      return;
    }
    case 'StudyDate':
      result.studyDate = dateRange(value);
      return;
    case 'ModalitiesInStudy': {
      const modalities = [...new Set(value.split(/[,\\]/).map((m) => m.trim().toUpperCase()))];
      if (modalities.some((m) => !MODALITY.test(m)))
        throw new QidoQueryError('The ModalitiesInStudy parameter must be modality codes separated by commas.');
      result.modalities = modalities;
      return;
    }
  }
}

function single(key: string, value: unknown): string {
  if (typeof value !== 'string') throw new QidoQueryError(`The ${key} parameter is given more than once.`);
  if (value.length > MAX_VALUE_LENGTH)
    throw new QidoQueryError(`The ${key} parameter must not be longer than ${MAX_VALUE_LENGTH} characters.`);
  if (value.includes('\0')) throw new QidoQueryError(`The ${key} parameter must not contain NUL characters.`);
  return value;
}

function integer(key: string, value: string, min: number, max: number): number {
  if (!/^\d{1,16}$/.test(value)) throw new QidoQueryError(`The ${key} parameter must be a whole number.`);
  const n = Number(value);
  if (n < min || n > max) throw new QidoQueryError(`The ${key} parameter must be between ${min} and ${max}.`);
  return n;
}

/** A value of only `*` matches everything: no condition. */
function insensitiveMatch(value: string): InsensitiveMatch | undefined {
  if (/^\*+$/.test(value)) return undefined;
  const longest = value.split(/[*?]/).reduce((a, b) => (b.length > a.length ? b : a), '');
  return /[a-z0-9]{3}/.test(foldLatin(longest))
    ? { regex: insensitiveRegex(value), indexedRun: longest }
    : { regex: insensitiveRegex(value) };
}

/** QIDO wildcards: `*` any run, `?` one character; a value of only `*` matches everything (null). */
function textMatch(value: string): TextMatch | null {
  if (!value.includes('*') && !value.includes('?')) return { exact: value };
  if (/^\*+$/.test(value)) return null;
  const pattern = value.replace(/[\\%_*?]/g, (c) => (c === '*' ? '%' : c === '?' ? '_' : `\\${c}`));
  return { pattern };
}

function dateRange(value: string): DateRange {
  const dash = value.indexOf('-');
  if (dash === -1) {
    const day = date(value);
    return { from: day, to: day };
  }
  if (value.indexOf('-', dash + 1) !== -1 || value === '-') throw badDate();
  const range: DateRange = {};
  if (dash > 0) range.from = date(value.slice(0, dash));
  if (dash < value.length - 1) range.to = date(value.slice(dash + 1));
  return range;
}

function date(text: string): string {
  const match = DATE.exec(text);
  if (!match) throw badDate();
  const [, y, m, d] = match;
  const parsed = new Date(Date.UTC(Number(y), Number(m) - 1, Number(d)));
  if (
    parsed.getUTCFullYear() !== Number(y) ||
    parsed.getUTCMonth() !== Number(m) - 1 ||
    parsed.getUTCDate() !== Number(d) ||
    Number(y) < 1
  ) {
    throw badDate();
  }
  return `${y}-${m}-${d}`;
}

const badDate = () =>
  new QidoQueryError('The StudyDate parameter must be YYYYMMDD or a range YYYYMMDD-YYYYMMDD (either end may be left open).');
