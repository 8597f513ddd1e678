/**
 * Which study instance UIDs a DICOMweb request (the proxy's X-Original-URI) reaches, read exactly as
 * the image server reads it: the proxy forwards the original URI unchanged, so any difference
 * between this reading and Orthanc's would let a request reach a study we never checked.
 *
 * What Orthanc 1.10.1 + DICOMweb 1.7 does with a query (measured, and kept measured by
 * test/system/viewer-gate.system-spec.ts; docs/viewer.md, "Validation"): it splits on a raw `&`
 * only, and at the first `=`; it decodes neither keys nor values; it applies the study filter for
 * the keyword `StudyInstanceUID` (that exact case) and for any key dcmtk parses as the tag
 * (0020,000D) (`0020000D`, `0020,000d`, `0020-000D`, but also `20,d`, `0x20,0xd`, `+20,+d`,
 * `0020,000Dxyz`, `10020,d`...), and ignores every other unknown key (an unfiltered search); a
 * key given twice: the last wins, and an empty last value removes the filter; the query is not cut at a raw `#`; a raw `\` inside a value is deleted; `,`, `%2C` and `%2c`
 * separate the UIDs of a list.
 *
 * Hence the rule (deny by default; null means 403):
 * - the path is a QIDO-RS search root (`/dicom-web/studies`, `/series`, `/instances`) or lies under
 *   `/dicom-web/studies/<uid>`, in plain segments (no dot segments, no `%`, no empty segment);
 * - a raw `#` or `\` anywhere is refused;
 * - every query key must be in the allow-list below, taken exactly as written (no case folding, no
 *   decoding): a key we do not know is one we cannot say Orthanc ignores;
 * - the study filter keys are the exact spellings in STUDY_FILTER_KEYS, which Orthanc applies; any
 *   other spelling Orthanc would read as (0020,000D) is not in the allow-list, hence refused; no
 *   other allowed key is one Orthanc reads as (0020,000D) (study-uids.spec.ts checks it with a copy of
 *   dcmtk's parser);
 * - the study filter appears at most once, with a non-empty list of plain UIDs;
 * - a search at a root carries the study filter; under `/studies/<uid>` every UID named, in the path
 *   and in a filter, is returned;
 * - at most MAX_UIDS_PER_REQUEST distinct UIDs (a flood guard: each unknown one costs a lookup);
 * - the rendering parameters' values are within the image server's limits (RENDERING_VALUES): it
 *   allocates what `viewport` asks for, so a value out of bounds is refused, not merely a key.
 */
export const DICOMWEB_ROOT = '/dicom-web/';
export const MAX_UIDS_PER_REQUEST = 50;
const MAX_UID_LENGTH = 64;
const UID = /^[0-9]+(\.[0-9]+)*$/;
/** Above this, a URI is not one a viewer sends: refused before any parsing. */
const MAX_URI_LENGTH = 16_384;

/** The spellings of (0020,000D) that Orthanc applies as the study filter (each measured on 1.10.1). */
export const STUDY_FILTER_KEYS: readonly string[] = [
  'StudyInstanceUID',
  '0020000D',
  '0020000d',
  '0020,000D',
  '0020,000d',
  '0020-000D',
  '0020-000d',
];

/** QIDO-RS parameters that are not attributes (PS3.18 8.3.4, 8.3.5). */
const QIDO_PARAMETERS = ['limit', 'offset', 'fuzzymatching', 'includefield'];
/** WADO-RS retrieve parameters (PS3.18 8.3.3, 8.3.5) whose values the image server does not act on beyond a media type or a label. */
const WADO_PARAMETERS = ['accept', 'annotation', 'charset', 'iccprofile'];

/** The largest rendering the image server is asked for, in either dimension (decisions.md "Values are checked too"). */
export const MAX_VIEWPORT_SIDE = 4_096;
const SIDE = /^[0-9]{1,4}$/;
const OFFSET = /^-?[0-9]{1,9}$/;
const NUMBER = /^-?[0-9]{1,9}(\.[0-9]{1,9})?$/;
const WINDOW_FUNCTIONS = new Set(['linear', 'linear-exact', 'sigmoid']);

const isSide = (text: string) => SIDE.test(text) && Number(text) >= 1 && Number(text) <= MAX_VIEWPORT_SIDE;

/**
 * The rendering parameters of WADO-RS Retrieve Rendered (PS3.18 8.3.5.1) as the DICOMweb plugin
 * reads them (split on a raw `,`, no decoding), each with the values allowed through:
 * - `viewport`: `vw,vh` or `vw,vh,sx,sy,sw,sh`, integers, `vw` and `vh` from 1 to MAX_VIEWPORT_SIDE
 *   (the size of the image it allocates), the source region as signed integers;
 * - `quality`: an integer from 1 to 100;
 * - `window`: `center,width,function`, two numbers and a third (the plugin's linear, linear-exact or
 *   sigmoid; a number, as decisions.md words it, is let through and the plugin refuses it itself).
 */
const RENDERING_VALUES: ReadonlyMap<string, (value: string) => boolean> = new Map([
  [
    'viewport',
    (value: string) => {
      const parts = value.split(',');
      if (parts.length !== 2 && parts.length !== 6) return false;
      return isSide(parts[0]) && isSide(parts[1]) && parts.slice(2).every((part) => OFFSET.test(part));
    },
  ],
  ['quality', (value: string) => SIDE.test(value) && Number(value) >= 1 && Number(value) <= 100],
  [
    'window',
    (value: string) => {
      const parts = value.split(',');
      return (
        parts.length === 3 &&
        NUMBER.test(parts[0]) &&
        NUMBER.test(parts[1]) &&
        (WINDOW_FUNCTIONS.has(parts[2]) || NUMBER.test(parts[2]))
      );
    },
  ],
]);
/**
 * The attributes QIDO-RS clients (OHIF's dicomweb-client, dcm4che's qidors, Orthanc Explorer 2)
 * match on or include, by keyword and by tag (upper- or lower-case hex). Orthanc reads each as that
 * attribute, none as (0020,000D).
 */
const QIDO_ATTRIBUTES: ReadonlyArray<[keyword: string, tag: string]> = [
  ['SpecificCharacterSet', '00080005'],
  ['SOPClassUID', '00080016'],
  ['SOPInstanceUID', '00080018'],
  ['StudyDate', '00080020'],
  ['StudyTime', '00080030'],
  ['AccessionNumber', '00080050'],
  ['Modality', '00080060'],
  ['ModalitiesInStudy', '00080061'],
  ['InstitutionName', '00080080'],
  ['ReferringPhysicianName', '00080090'],
  ['TimezoneOffsetFromUTC', '00080201'],
  ['RetrieveURL', '00081190'],
  ['StudyDescription', '00081030'],
  ['SeriesDescription', '0008103E'],
  ['PatientName', '00100010'],
  ['PatientID', '00100020'],
  ['IssuerOfPatientID', '00100021'],
  ['PatientBirthDate', '00100030'],
  ['PatientSex', '00100040'],
  ['BodyPartExamined', '00180015'],
  ['SeriesInstanceUID', '0020000E'],
  ['StudyID', '00200010'],
  ['SeriesNumber', '00200011'],
  ['InstanceNumber', '00200013'],
  ['NumberOfStudyRelatedSeries', '00201206'],
  ['NumberOfStudyRelatedInstances', '00201208'],
  ['NumberOfSeriesRelatedInstances', '00201209'],
  ['NumberOfFrames', '00280008'],
  ['Rows', '00280010'],
  ['Columns', '00280011'],
  ['PerformedProcedureStepStartDate', '00400244'],
  ['PerformedProcedureStepStartTime', '00400245'],
];

const enum KeyKind {
  Other = 1,
  StudyFilter = 2,
  Rendering = 3,
}

const KEYS = new Map<string, KeyKind>();
for (const key of STUDY_FILTER_KEYS) KEYS.set(key, KeyKind.StudyFilter);
for (const key of RENDERING_VALUES.keys()) KEYS.set(key, KeyKind.Rendering);
for (const key of [...QIDO_PARAMETERS, ...WADO_PARAMETERS]) KEYS.set(key, KeyKind.Other);
for (const [keyword, tag] of QIDO_ATTRIBUTES) {
  KEYS.set(keyword, KeyKind.Other);
  KEYS.set(tag, KeyKind.Other);
  KEYS.set(tag.toLowerCase(), KeyKind.Other);
}

/** Every query key the validator lets through, for documentation and tests. */
export const ALLOWED_QUERY_KEYS: readonly string[] = [...KEYS.keys()];

/** The three QIDO-RS search roots: unfiltered, each lists every study of every clinic. */
const SEARCH_ROOTS = new Set(['studies', 'series', 'instances']);
const STUDY_PATH = 'studies/';
/** After `/studies/<uid>`: plain segments only (no `.` or `..`, no `%`, no empty segment). */
const STUDY_TAIL = /^(\/[A-Za-z0-9][A-Za-z0-9._,-]*)*$/;
/** A filter value: UIDs separated by `,` or its encoding (which the DICOMweb plugin splits on too). */
const UID_LIST_SEPARATOR = /,|%2[cC]/;

export function extractStudyUids(originalUri: string | undefined | null): string[] | null {
  if (typeof originalUri !== 'string' || originalUri.length > MAX_URI_LENGTH) return null;
  if (!originalUri.startsWith(DICOMWEB_ROOT)) return null;
  if (originalUri.includes('#') || originalUri.includes('\\')) return null;
  const queryAt = originalUri.indexOf('?');
  const path = originalUri.slice(DICOMWEB_ROOT.length, queryAt === -1 ? undefined : queryAt);

  const uids: string[] = [];
  const searchRoot = SEARCH_ROOTS.has(path);
  if (!searchRoot) {
    if (!path.startsWith(STUDY_PATH)) return null;
    const uidEnd = path.indexOf('/', STUDY_PATH.length);
    const uid = path.slice(STUDY_PATH.length, uidEnd === -1 ? undefined : uidEnd);
    if (!isUid(uid)) return null;
    if (uidEnd !== -1 && !STUDY_TAIL.test(path.slice(uidEnd))) return null;
    uids.push(uid);
  }

  let filtered = false;
  if (queryAt !== -1) {
    for (const part of originalUri.slice(queryAt + 1).split('&')) {
      if (part === '') continue;
      const eq = part.indexOf('=');
      const key = eq === -1 ? part : part.slice(0, eq);
      const kind = KEYS.get(key);
      if (kind === undefined) return null;
      if (kind === KeyKind.Rendering) {
        if (eq === -1 || !RENDERING_VALUES.get(key)!(part.slice(eq + 1))) return null;
        continue;
      }
      if (kind !== KeyKind.StudyFilter) continue;
      // Given twice, Orthanc applies the last one: we would have to guess which one it reads.
      if (filtered || eq === -1) return null;
      filtered = true;
      for (const uid of part.slice(eq + 1).split(UID_LIST_SEPARATOR)) {
        if (!isUid(uid)) return null;
        if (!uids.includes(uid) && uids.push(uid) > MAX_UIDS_PER_REQUEST) return null;
      }
    }
  }
  return searchRoot && !filtered ? null : uids;
}

function isUid(text: string): boolean {
  return text.length > 0 && text.length <= MAX_UID_LENGTH && UID.test(text);
}

/** An instance the image server is asked to decode (its UIDs, from the path). */
export interface RenderedInstance {
  study: string;
  series: string;
  instance: string;
}

/** Path segments that have the DICOMweb plugin decode pixels (`thumbnail`: WADO-RS's, in later plugins). */
const DECODING_SEGMENT = /\/(rendered|thumbnail)(\/|$)/i;

/**
 * Whether a DICOMweb request, already allowed by extractStudyUids, has the image server decode an
 * image (WADO-RS Retrieve Rendered): null when it does not; the instance's UIDs for an instance's or
 * a frame's rendering (the paths the plugin serves, matched case-sensitively as it does); 'whole'
 * for any other path with such a segment, in any case: a study's or a series' rendering, whose
 * instance the plugin picks itself, or a spelling the plugin does not serve. The gate refuses
 * 'whole' and checks an instance before it is decoded (docs/security.md, "The image server's decoders").
 */
export function renderingOf(originalUri: string): RenderedInstance | 'whole' | null {
  const queryAt = originalUri.indexOf('?');
  const path = originalUri.slice(DICOMWEB_ROOT.length - 1, queryAt === -1 ? undefined : queryAt);
  if (!DECODING_SEGMENT.test(path)) return null;
  const s = path.split('/');
  const instanceShape = s.length === 8 || (s.length === 10 && s[7] === 'frames');
  const named = s[1] === 'studies' && s[3] === 'series' && s[5] === 'instances' && s[s.length - 1] === 'rendered';
  if (instanceShape && named && isUid(s[2]) && isUid(s[4]) && isUid(s[6])) {
    return { study: s[2], series: s[4], instance: s[6] };
  }
  return 'whole';
}
