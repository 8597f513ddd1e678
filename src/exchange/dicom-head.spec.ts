import { execFileSync } from 'child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import { encodePart10 } from '../../scripts/stack/dicom';
import { NotDicomError, readDicomHead } from './dicom-head';

const tag = (group: number, element: number) => ((group << 16) | element) >>> 0;
const ct = (extra: Parameters<typeof encodePart10>[0] = []) =>
  encodePart10([
    { tag: tag(0x0008, 0x0016), vr: 'UI', value: '1.2.840.10008.5.1.4.1.1.2' },
    { tag: tag(0x0008, 0x0018), vr: 'UI', value: '1.2.3.4.5' },
    {
      tag: tag(0x0008, 0x1110),
      vr: 'SQ',
      value: [[{ tag: tag(0x0008, 0x1155), vr: 'UI', value: '9.9.9' }], [{ tag: tag(0x0008, 0x1150), vr: 'UI', value: '8.8' }]],
    },
    { tag: tag(0x0010, 0x0010), vr: 'PN', value: 'DOE^JOÃO' },
    { tag: tag(0x0010, 0x0020), vr: 'LO', value: 'P-1 ' },
    { tag: tag(0x0020, 0x000d), vr: 'UI', value: '1.2.3' },
    { tag: tag(0x0020, 0x000e), vr: 'UI', value: '1.2.3.4' },
    { tag: tag(0x0020, 0x0013), vr: 'IS', value: '1' },
    ...extra,
  ]);
/** One explicit VR little endian element with a short value. */
const element = (elementTag: number, vr: string, value: string) => {
  const bytes = Buffer.from(value.length % 2 ? `${value}\0` : value, 'latin1');
  const header = Buffer.alloc(8);
  header.writeUInt16LE(elementTag >>> 16, 0);
  header.writeUInt16LE(elementTag & 0xffff, 2);
  header.write(vr, 4, 'latin1');
  header.writeUInt16LE(bytes.length, 6);
  return Buffer.concat([header, bytes]);
};
/** A Part 10 file with its elements in the order given (encodePart10 sorts them). */
const inOrder = (meta: Buffer[], dataset: Buffer[]) =>
  Buffer.concat([Buffer.alloc(128), Buffer.from('DICM', 'latin1'), ...meta, ...dataset]);
const metaOf = () => [
  element(tag(0x0002, 0x0002), 'UI', '1.2.840.10008.5.1.4.1.1.2'),
  element(tag(0x0002, 0x0003), 'UI', '1.2.3.4.5'),
  element(tag(0x0002, 0x0010), 'UI', '1.2.840.10008.1.2.1'),
];
const datasetOf = () => [
  element(tag(0x0008, 0x0016), 'UI', '1.2.840.10008.5.1.4.1.1.2'),
  element(tag(0x0008, 0x0018), 'UI', '1.2.3.4.5'),
  element(tag(0x0010, 0x0020), 'LO', 'P-1'),
  element(tag(0x0020, 0x000d), 'UI', '1.2.3'),
  element(tag(0x0020, 0x000e), 'UI', '1.2.3.4'),
];
const expected = {
  sopClassUid: '1.2.840.10008.5.1.4.1.1.2',
  sopInstanceUid: '1.2.3.4.5',
  patientId: 'P-1',
  studyInstanceUid: '1.2.3',
  seriesInstanceUid: '1.2.3.4',
};

describe('readDicomHead', () => {
  it('reads the identifiers of an explicit VR little endian file, past undefined-length sequences', () => {
    expect(readDicomHead(ct())).toEqual(expected);
  });

  it('reads them in implicit VR little endian too (converted by dcmtk)', () => {
    const dir = mkdtempSync(join(tmpdir(), 'dicom-head-'));
    try {
      writeFileSync(join(dir, 'in.dcm'), ct());
      execFileSync('dcmconv', ['+ti', join(dir, 'in.dcm'), join(dir, 'out.dcm')]);
      const converted = readFileSync(join(dir, 'out.dcm'));
      expect(converted.includes(Buffer.from('1.2.840.10008.1.2\0'))).toBe(true);
      expect(readDicomHead(converted)).toEqual(expected);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses what is not DICOM, or ends before its identifiers, with the reason', () => {
    const cases: Array<[Buffer, RegExp]> = [
      [Buffer.from('{"not": "dicom"}'), /DICM/],
      [Buffer.alloc(4096), /DICM/],
      [ct().subarray(0, 300), /ends before|no /],
      [Buffer.concat([Buffer.alloc(128), Buffer.from('DICM')]), /transfer syntax/],
    ];
    for (const [data, reason] of cases) {
      expect(() => readDicomHead(data)).toThrow(NotDicomError);
      expect(() => readDicomHead(data)).toThrow(reason);
    }
  });

  it('reads a file whose tags ascend, written element by element', () => {
    expect(readDicomHead(inOrder(metaOf(), datasetOf()))).toEqual(expected);
  });

  // The image server (DCMTK) keeps the first of a repeated tag and sorts the others: a file read
  // otherwise here could pass the other-clinic check with one StudyInstanceUID and be filed under another.
  it('refuses a dataset that repeats a tag (a second StudyInstanceUID after the first)', () => {
    const twice = ct([{ tag: tag(0x0020, 0x000d), vr: 'UI', value: '9.9.9.9' }]);
    expect(() => readDicomHead(twice)).toThrow(NotDicomError);
    expect(() => readDicomHead(twice)).toThrow('tag (0020,000D) out of order, after (0020,000D)');
  });

  it('refuses a dataset whose tags descend', () => {
    const [sopClass, sop, patient, study, series] = datasetOf();
    const descending = inOrder(metaOf(), [sopClass, sop, patient, series, study]);
    expect(() => readDicomHead(descending)).toThrow(NotDicomError);
    expect(() => readDicomHead(descending)).toThrow('tag (0020,000D) out of order, after (0020,000E)');
  });

  it('refuses a file meta group that repeats a tag or whose tags descend', () => {
    const [sopClass, sop, syntax] = metaOf();
    const cases: Array<[Buffer[], string]> = [
      [[sopClass, sop, sop, syntax], 'tag (0002,0003) out of order, after (0002,0003)'],
      [[sop, sopClass, syntax], 'tag (0002,0002) out of order, after (0002,0003)'],
    ];
    for (const [meta, reason] of cases) {
      expect(() => readDicomHead(inOrder(meta, datasetOf()))).toThrow(NotDicomError);
      expect(() => readDicomHead(inOrder(meta, datasetOf()))).toThrow(reason);
    }
  });
});
