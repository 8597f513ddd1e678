import { extractStudyUids } from './study-uids';

const A = '1.2.840.113619.2.55.3.1';
const B = '2.25.123456789012345678901234567890';

describe('extractStudyUids', () => {
  it.each([
    ['the WADO-RS path form', `/dicom-web/studies/${A}`, [A]],
    ['a deeper path', `/dicom-web/studies/${A}/series/1.2.3/instances/4.5.6/frames/1`, [A]],
    ['the path with a query', `/dicom-web/studies/${A}/metadata?includefield=all`, [A]],
    ['0020000D=', `/dicom-web/series?0020000D=${A}`, [A]],
    ['a lower-case tag', `/dicom-web/series?0020000d=${A}`, [A]],
    ['the tag with a comma', `/dicom-web/series?0020,000D=${A}`, [A]],
    ['StudyInstanceUIDs=', `/dicom-web/studies?StudyInstanceUIDs=${A}`, [A]],
    ['StudyInstanceUID= (OHIF)', `/dicom-web/studies?limit=1&StudyInstanceUID=${A}&includefield=all`, [A]],
    ['a lower-case key', `/dicom-web/studies?studyinstanceuid=${A}`, [A]],
    ['an encoded key', `/dicom-web/studies?Study%49nstanceUID=${A}`, [A]],
    ['a comma list', `/dicom-web/studies?StudyInstanceUID=${A},${B}`, [A, B]],
    ['a backslash list', `/dicom-web/studies?StudyInstanceUID=${A}\\${B}`, [A, B]],
    ['an encoded comma', `/dicom-web/studies?StudyInstanceUID=${A}%2C${B}`, [A, B]],
    ['an encoded backslash', `/dicom-web/studies?StudyInstanceUID=${A}%5c${B}`, [A, B]],
    ['a repeated key', `/dicom-web/studies?StudyInstanceUID=${A}&0020000D=${B}`, [A, B]],
    ['path and query together', `/dicom-web/studies/${A}/series?0020000D=${B}`, [A, B]],
    ['duplicates once', `/dicom-web/studies/${A}?StudyInstanceUID=${A}`, [A]],
  ])('reads %s', (_, uri, expected) => {
    expect(extractStudyUids(uri)).toEqual(expected);
  });

  it.each([
    ['no URI', undefined],
    ['an empty URI', ''],
    ['a search of all studies', '/dicom-web/studies?limit=10'],
    ['a series search without a study', '/dicom-web/series?SeriesInstanceUID=1.2.3'],
    ['an empty value', '/dicom-web/studies?StudyInstanceUID='],
    ['a key without value', '/dicom-web/studies?StudyInstanceUID'],
    ['an empty path segment', '/dicom-web/studies/?limit=1'],
    ['a * wildcard', '/dicom-web/studies?StudyInstanceUID=1.2.*'],
    ['a ? wildcard', '/dicom-web/studies?0020000D=1.2.?'],
    ['an encoded wildcard', '/dicom-web/studies?0020000D=1.2.%2A'],
    ['a wildcard path', '/dicom-web/studies/*'],
    ['an empty element in a list', `/dicom-web/studies?StudyInstanceUID=${A},,${B}`],
    ['a trailing separator', `/dicom-web/studies?StudyInstanceUID=${A},`],
    ['a range', `/dicom-web/studies?StudyInstanceUID=${A}-${B}`],
    ['letters', '/dicom-web/studies/abc'],
    ['a space', `/dicom-web/studies?StudyInstanceUID=${A}+${B}`],
    ['broken percent-encoding', `/dicom-web/studies?StudyInstanceUID=${A}%E0%A4%A`],
    ['a double-encoded comma', `/dicom-web/studies?StudyInstanceUID=${A}%252C${B}`],
    ['a UID longer than 64 characters', `/dicom-web/studies/${'1.'.repeat(32)}1`],
    ['a good UID with a bad one', `/dicom-web/studies/${A}?StudyInstanceUID=*`],
    ['a dot-dot segment to another study', `/dicom-web/studies/${A}/../${B}/series`],
    ['a dot-dot segment at the end', `/dicom-web/studies/${A}/series/..`],
    ['a dot segment', `/dicom-web/studies/${A}/./series`],
    ['an encoded slash', `/dicom-web/studies/${A}/..%2F${B}`],
    ['encoded dots', `/dicom-web/studies/${A}/%2e%2E/${B}`],
  ])('refuses %s', (_, uri) => {
    expect(extractStudyUids(uri)).toBeNull();
  });
});
