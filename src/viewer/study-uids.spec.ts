import { ALLOWED_QUERY_KEYS, extractStudyUids, MAX_UIDS_PER_REQUEST, renderingOf, STUDY_FILTER_KEYS } from './study-uids';

const A = '1.2.840.113619.2.55.3.1';
const B = '2.25.123456789012345678901234567890';

/**
 * How Orthanc 1.10 turns a QIDO-RS query key into a tag: its own 8-hex and `gggg,eeee` /
 * `gggg-eeee` forms, else dcmtk's DcmTag::findTagFromName, which first tries `sscanf(key, "%x,%x")`
 * (leading blanks, a sign and `0x` allowed, trailing text ignored, values cut to 16 bits), then the
 * dictionary's keywords (exact case). Returns the tag as 8 upper-case hex digits, or the keyword.
 */
function orthancTagOf(key: string): string {
  if (/^[0-9a-fA-F]{8}$/.test(key)) return key.toUpperCase();
  if (/^[0-9a-fA-F]{4}[,-][0-9a-fA-F]{4}$/.test(key)) return (key.slice(0, 4) + key.slice(5)).toUpperCase();
  const scanned = /^\s*([+-]?)(?:0[xX])?([0-9a-fA-F]+),\s*([+-]?)(?:0[xX])?([0-9a-fA-F]+)/.exec(key);
  if (scanned) {
    const uint16 = (sign: string, digits: string) => {
      const value = BigInt(`0x${digits}`) & 0xffffffffn;
      return Number((sign === '-' ? (0x100000000n - value) & 0xffffffffn : value) & 0xffffn);
    };
    const hex = (n: number) => n.toString(16).toUpperCase().padStart(4, '0');
    return hex(uint16(scanned[1], scanned[2])) + hex(uint16(scanned[3], scanned[4]));
  }
  return key === 'StudyInstanceUID' ? '0020000D' : `keyword:${key}`;
}

describe('orthancTagOf (the copy of dcmtk\'s parser these tests rely on)', () => {
  // Each measured on Orthanc 1.10.1 + DICOMweb 1.7: applied as the study filter, or ignored.
  it.each([
    'StudyInstanceUID', '0020000D', '0020000d', '0020,000D', '0020-000d', '20,d', '0x20,0xd', '0X20,0XD',
    '+20,+d', '10020,d', '20,1000d', '-ffe0,d', '0020,000Dxyz', '0020,000D)', '20,dz', '0020,000D,',
  ])('reads %s as (0020,000D)', (key) => {
    expect(orthancTagOf(key)).toBe('0020000D');
  });

  it.each([
    'StudyInstanceUIDs', 'studyinstanceuid', 'STUDYINSTANCEUID', '(0020,000D)', '%53tudyInstanceUID', '0020:000D',
    '0020000D0', '00020000D', '0020.000D', '%2020,d', '2.25,d',
  ])('does not read %s as (0020,000D)', (key) => {
    expect(orthancTagOf(key)).not.toBe('0020000D');
  });
});

describe('the query key allow-list', () => {
  it('holds no key that Orthanc reads as (0020,000D) other than the study filter\'s own spellings', () => {
    const readAsStudy = ALLOWED_QUERY_KEYS.filter((key) => orthancTagOf(key) === '0020000D');
    expect(readAsStudy.sort()).toEqual([...STUDY_FILTER_KEYS].sort());
  });

  it('holds only keywords, 8-digit tags and the study filter\'s spellings', () => {
    for (const key of ALLOWED_QUERY_KEYS) expect(key).toMatch(/^([A-Za-z]+|[0-9A-F]{8}|[0-9a-f]{8}|0020[,-]000[Dd])$/);
  });
});

describe('extractStudyUids', () => {
  it.each([
    ['the WADO-RS path form', `/dicom-web/studies/${A}`, [A]],
    ['a deeper path', `/dicom-web/studies/${A}/series/1.2.3/instances/4.5.6/frames/1,2`, [A]],
    ['a bulk data path', `/dicom-web/studies/${A}/series/1.2.3/instances/4.5.6/bulk/7fe00010`, [A]],
    ['the path with a query', `/dicom-web/studies/${A}/metadata?includefield=all`, [A]],
    ['a rendered frame', `/dicom-web/studies/${A}/series/1.2/instances/3.4/rendered?quality=90&viewport=64,64&window=40,400,linear`, [A]],
    ['0020000D=', `/dicom-web/series?0020000D=${A}`, [A]],
    ['a lower-case tag', `/dicom-web/instances?0020000d=${A}`, [A]],
    ['the tag with a comma', `/dicom-web/series?0020,000D=${A}`, [A]],
    ['the tag with a dash', `/dicom-web/series?0020-000d=${A}`, [A]],
    [
      'OHIF\'s study query',
      `/dicom-web/studies?limit=101&offset=0&fuzzymatching=false&includefield=00081030%2C00080060&StudyInstanceUID=${A}`,
      [A],
    ],
    ['other filters beside it', `/dicom-web/studies?PatientID=X&PatientName=DOE*&ModalitiesInStudy=CT&StudyInstanceUID=${A}`, [A]],
    ['a comma list', `/dicom-web/studies?StudyInstanceUID=${A},${B}`, [A, B]],
    ['an encoded comma', `/dicom-web/studies?StudyInstanceUID=${A}%2C${B}`, [A, B]],
    ['an encoded lower-case comma', `/dicom-web/studies?StudyInstanceUID=${A}%2c${B}`, [A, B]],
    ['path and query together', `/dicom-web/studies/${A}/series?0020000D=${B}`, [A, B]],
    ['duplicates once', `/dicom-web/studies/${A}/series?StudyInstanceUID=${A}`, [A]],
    ['a key without value (not the filter)', `/dicom-web/studies/${A}/series?includefield&limit=`, [A]],
    ['empty parts', `/dicom-web/studies?&StudyInstanceUID=${A}&&`, [A]],
    ['a repeated key that is not the filter', `/dicom-web/studies?includefield=00100010&includefield=00100020&0020000D=${A}`, [A]],
    [`${MAX_UIDS_PER_REQUEST} UIDs`, `/dicom-web/studies?StudyInstanceUID=${uids(MAX_UIDS_PER_REQUEST).join(',')}`, uids(MAX_UIDS_PER_REQUEST)],
  ])('reads %s', (_, uri, expected) => {
    expect(extractStudyUids(uri)).toEqual(expected);
  });

  it.each([
    ['no URI', undefined],
    ['an empty URI', ''],
    ['another root', `/other/studies/${A}`],
    ['a path outside the DICOMweb root', `/api/studies/${A}`],
    ['a search of all studies', '/dicom-web/studies?limit=10'],
    ['a bare search root', '/dicom-web/series'],
    ['a series search without a study', '/dicom-web/series?SeriesInstanceUID=1.2.3'],
    ['another DICOMweb resource', '/dicom-web/servers'],
    ['a search root with a trailing slash', `/dicom-web/studies/?StudyInstanceUID=${A}`],
    ['an upper-case root', `/dicom-web/STUDIES/${A}`],
    // The spellings Orthanc ignores: the search would be unfiltered.
    ['the plural StudyInstanceUIDs', `/dicom-web/studies?StudyInstanceUIDs=${A}`],
    ['a lower-case keyword', `/dicom-web/studies?studyinstanceuid=${A}`],
    ['an upper-case keyword', `/dicom-web/studies?STUDYINSTANCEUID=${A}`],
    ['the tag in parentheses', `/dicom-web/studies?(0020,000D)=${A}`],
    ['a percent-encoded key', `/dicom-web/studies?%53tudyInstanceUID=${A}`],
    ['a key with an encoded letter', `/dicom-web/studies?Study%49nstanceUID=${A}`],
    ['a key with a trailing +', `/dicom-web/studies?StudyInstanceUID+=${A}`],
    ['a Unicode look-alike key', `/dicom-web/studies?\u0405tudyInstanceUID=${A}`],
    // The spellings Orthanc applies but we do not list: refused, never read as something else.
    ['20,d', `/dicom-web/studies?StudyInstanceUID=${A}&20,d=${B}`],
    ['0x20,0xd', `/dicom-web/studies?0x20,0xd=${A}`],
    ['+20,+d', `/dicom-web/studies?+20,+d=${A}`],
    ['0020,000Dxyz', `/dicom-web/studies?0020,000Dxyz=${A}`],
    // Duplicates: Orthanc applies the last one.
    ['the filter twice', `/dicom-web/studies?StudyInstanceUID=${A}&StudyInstanceUID=${B}`],
    ['the filter twice in two spellings', `/dicom-web/studies?StudyInstanceUID=${A}&0020000D=${A}`],
    ['an empty second filter', `/dicom-web/studies?StudyInstanceUID=${A}&StudyInstanceUID=`],
    ['a raw # before a second filter', `/dicom-web/studies?StudyInstanceUID=${A}#&0020000D=${B}`],
    ['a raw #', `/dicom-web/studies/${A}#x`],
    ['a raw \\ in a value', `/dicom-web/studies?StudyInstanceUID=${A}\\${B}`],
    ['a raw \\ in the path', `/dicom-web/studies/${A}\\/series`],
    ['a raw \\ in another key\'s value', `/dicom-web/studies?PatientID=a\\b&StudyInstanceUID=${A}`],
    ['an encoded backslash list (Orthanc matches nothing)', `/dicom-web/studies?StudyInstanceUID=${A}%5C${B}`],
    ['an unknown key', `/dicom-web/studies?StudyInstanceUID=${A}&foo=1`],
    ['an empty key', `/dicom-web/studies?=1&StudyInstanceUID=${A}`],
    ['an empty value', '/dicom-web/studies?StudyInstanceUID='],
    ['a filter without =', '/dicom-web/studies?StudyInstanceUID'],
    ['an empty path segment', '/dicom-web/studies//series'],
    ['a * wildcard', '/dicom-web/studies?StudyInstanceUID=1.2.*'],
    ['a ? wildcard', '/dicom-web/studies?0020000D=1.2.?'],
    ['an encoded wildcard', '/dicom-web/studies?0020000D=1.2.%2A'],
    ['a wildcard path', '/dicom-web/studies/*'],
    ['an encoded digit (Orthanc does not decode)', `/dicom-web/studies?StudyInstanceUID=%31.2.3`],
    ['an empty element in a list', `/dicom-web/studies?StudyInstanceUID=${A},,${B}`],
    ['a trailing separator', `/dicom-web/studies?StudyInstanceUID=${A},`],
    ['a range', `/dicom-web/studies?StudyInstanceUID=${A}-${B}`],
    ['a + in the value', `/dicom-web/studies?StudyInstanceUID=${A}+${B}`],
    ['a ; in the value', `/dicom-web/studies?StudyInstanceUID=${A};0020000D=${B}`],
    ['letters', '/dicom-web/studies/abc'],
    ['a UID longer than 64 characters', `/dicom-web/studies/${'1.'.repeat(32)}1`],
    ['a good UID with a bad one', `/dicom-web/studies/${A}/series?StudyInstanceUID=*`],
    ['a dot-dot segment to another study', `/dicom-web/studies/${A}/../${B}/series`],
    ['a dot-dot segment at the end', `/dicom-web/studies/${A}/series/..`],
    ['a dot segment', `/dicom-web/studies/${A}/./series`],
    ['an encoded slash', `/dicom-web/studies/${A}/..%2F${B}`],
    ['encoded dots', `/dicom-web/studies/${A}/%2e%2E/${B}`],
    ['a trailing slash', `/dicom-web/studies/${A}/`],
    [`more than ${MAX_UIDS_PER_REQUEST} UIDs`, `/dicom-web/studies?StudyInstanceUID=${uids(MAX_UIDS_PER_REQUEST + 1).join(',')}`],
    ['a very long URI', `/dicom-web/studies/${A}?includefield=${'0'.repeat(20_000)}`],
  ])('refuses %s', (_, uri) => {
    expect(extractStudyUids(uri)).toBeNull();
  });
});

describe('rendering parameter values (decisions.md "Values are checked too")', () => {
  const rendered = (query: string) => `/dicom-web/studies/${A}/series/1.2/instances/3.4/frames/1/rendered?${query}`;

  it.each([
    'viewport=512,512',
    'viewport=1,1',
    'viewport=4096,4096',
    'viewport=256,256,0,0,512,512',
    'viewport=256,256,10,-20,-512,512',
    'quality=1',
    'quality=100',
    'quality=90&viewport=64,64&window=40,400,linear',
    'window=40,400,linear-exact',
    'window=-600.5,1500,sigmoid',
    'window=40,400,1',
  ])('lets %s through', (query) => {
    expect(extractStudyUids(rendered(query))).toEqual([A]);
  });

  it.each([
    ['a viewport wider than 4096', 'viewport=4097,512'],
    ['a viewport taller than 4096', 'viewport=512,4097'],
    ['the 30000 x 30000 viewport', 'viewport=30000,30000'],
    ['an 8000 x 8000 viewport', 'viewport=8000,8000'],
    ['a viewport of zero', 'viewport=0,512'],
    ['one number', 'viewport=512'],
    ['three numbers', 'viewport=512,512,0'],
    ['seven numbers', 'viewport=1,1,1,1,1,1,1'],
    ['a negative side', 'viewport=-512,512'],
    ['a float side', 'viewport=512.5,512'],
    ['an empty side', 'viewport=,512'],
    ['an encoded comma', 'viewport=512%2C512'],
    ['a sign', 'viewport=+512,512'],
    ['an exponent', 'viewport=1e3,512'],
    ['blanks', 'viewport=512,%20512'],
    ['an empty viewport', 'viewport='],
    ['a viewport without a value', 'viewport'],
    ['a huge source offset', 'viewport=64,64,99999999999,0,1,1'],
    ['a large second viewport after a good one', 'viewport=64,64&viewport=8000,8000'],
    ['quality 1000', 'quality=1000'],
    ['quality 0', 'quality=0'],
    ['quality 101', 'quality=101'],
    ['a negative quality', 'quality=-1'],
    ['a float quality', 'quality=50.5'],
    ['an empty quality', 'quality='],
    ['a window of two numbers', 'window=40,400'],
    ['a window of four', 'window=40,400,linear,1'],
    ['a window with a word for a number', 'window=abc,400,linear'],
    ['a window function the image server does not know', 'window=40,400,cubic'],
    ['an empty window', 'window='],
    ['NaN', 'window=NaN,400,linear'],
  ])('refuses %s', (_, query) => {
    expect(extractStudyUids(rendered(query))).toBeNull();
  });
});

function uids(count: number): string[] {
  return Array.from({ length: count }, (_, i) => `1.2.3.${i}`);
}

describe('renderingOf: which requests have the image server decode an image', () => {
  const instance = `/dicom-web/studies/${A}/series/1.2/instances/3.4`;

  it.each([
    ['an instance', `${instance}/rendered`],
    ['an instance, with rendering values', `${instance}/rendered?viewport=64,64&quality=80`],
    ['a frame', `${instance}/frames/1/rendered`],
    ['a frame list', `${instance}/frames/1,2/rendered?quality=90`],
  ])('names the instance of %s', (_, uri) => {
    expect(renderingOf(uri)).toEqual({ study: A, series: '1.2', instance: '3.4' });
  });

  it.each([
    // Served by the DICOMweb plugin 1.7 (measured): the plugin picks the instance.
    ['a study', `/dicom-web/studies/${A}/rendered`],
    ['a series', `/dicom-web/studies/${A}/series/1.2/rendered?quality=90`],
    ['a thumbnail', `${instance}/thumbnail`],
    ['a frame thumbnail', `${instance}/frames/1/thumbnail`],
    ['another case', `${instance}/Rendered`],
    ['a segment after it', `${instance}/rendered/1`],
    ['frames without a number', `${instance}/frames/rendered`],
    ['an instance that is not a UID', `/dicom-web/studies/${A}/series/1.2/instances/x/rendered`],
  ])('calls %s whole (the gate refuses it)', (_, uri) => {
    expect(renderingOf(uri)).toBe('whole');
  });

  it.each([
    ['metadata', `${instance}/metadata`],
    ['a frame', `${instance}/frames/1`],
    ['a search', `/dicom-web/studies?StudyInstanceUID=${A}&quality=90`],
    ['a UID that spells it', `/dicom-web/studies/${A}/series/1.2/instances/3.4/bulkdata/renderedx`],
    ['the word in the query only', `${instance}/metadata?x=/rendered`],
  ])('is null for %s', (_, uri) => {
    expect(renderingOf(uri)).toBeNull();
  });
});
