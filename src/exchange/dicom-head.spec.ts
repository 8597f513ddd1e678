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
});
