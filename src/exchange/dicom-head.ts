/** The identifiers of a DICOM file, read from its first bytes. */
export interface DicomHead {
  sopClassUid: string;
  sopInstanceUid: string;
  studyInstanceUid: string;
  seriesInstanceUid: string;
  patientId: string;
}

/** Why a file is refused before anything of it is stored. */
export class NotDicomError extends Error {}

const IMPLICIT_LE = '1.2.840.10008.1.2';
const EXPLICIT_BE = '1.2.840.10008.1.2.2';
const DEFLATED = '1.2.840.10008.1.2.1.99';
/** Explicit VRs with a reserved word and a 32-bit length. */
const LONG_VRS = new Set(['OB', 'OD', 'OF', 'OL', 'OV', 'OW', 'SQ', 'SV', 'UC', 'UN', 'UR', 'UT', 'UV']);
const SHORT_VRS = new Set([
  'AE',
  'AS',
  'AT',
  'CS',
  'DA',
  'DS',
  'DT',
  'FD',
  'FL',
  'IS',
  'LO',
  'LT',
  'PN',
  'SH',
  'SL',
  'SS',
  'ST',
  'TM',
  'UI',
  'UL',
  'US',
]);
const UNDEFINED = 0xffffffff;
const ITEM = 0xfffee000;
const ITEM_END = 0xfffee00d;
const SEQUENCE_END = 0xfffee0dd;

const WANTED: Record<number, keyof DicomHead> = {
  0x00080016: 'sopClassUid',
  0x00080018: 'sopInstanceUid',
  0x00100020: 'patientId',
  0x0020000d: 'studyInstanceUid',
  0x0020000e: 'seriesInstanceUid',
};
const LAST_WANTED = 0x0020000e;
const UID = /^[0-9.]+$/;

class Truncated extends Error {}

const hex = (tag: number) =>
  `(${(tag >>> 16).toString(16).padStart(4, '0')},${(tag & 0xffff).toString(16).padStart(4, '0')})`.toUpperCase();

/**
 * The tag of an element, refused unless it follows the previous one of its level: the image server
 * (DCMTK) keeps the first of a repeated tag and sorts the others, so a file read any other way here
 * could pass the checks with one StudyInstanceUID and be filed under another.
 */
function ascending(tag: number, previous: number): number {
  if (tag <= previous) throw new NotDicomError(`tag ${hex(tag)} out of order, after ${hex(previous)}`);
  return tag;
}

/** A cursor over a dataset in one transfer syntax. */
class Reader {
  constructor(
    readonly data: Buffer,
    public at: number,
    readonly explicit: boolean,
    readonly little: boolean,
  ) {}

  private need(bytes: number): void {
    if (this.at + bytes > this.data.length) throw new Truncated();
  }
  u16(): number {
    this.need(2);
    const value = this.little ? this.data.readUInt16LE(this.at) : this.data.readUInt16BE(this.at);
    this.at += 2;
    return value;
  }
  u32(): number {
    this.need(4);
    const value = this.little ? this.data.readUInt32LE(this.at) : this.data.readUInt32BE(this.at);
    this.at += 4;
    return value;
  }
  tag(): number {
    const group = this.u16();
    return ((group << 16) | this.u16()) >>> 0;
  }
  text(length: number): string {
    this.need(length);
    const value = this.data.toString('latin1', this.at, this.at + length);
    this.at += length;
    return value.replace(/[\0\s]+$/, '').replace(/^\s+/, '');
  }
  skip(length: number): void {
    this.need(length);
    this.at += length;
  }

  /** An element's header: its tag, VR (explicit only) and length. Item tags have no VR. */
  header(): { tag: number; vr: string | null; length: number } {
    const tag = this.tag();
    if (tag === ITEM || tag === ITEM_END || tag === SEQUENCE_END) return { tag, vr: null, length: this.u32() };
    if (!this.explicit) return { tag, vr: null, length: this.u32() };
    this.need(2);
    const vr = this.data.toString('latin1', this.at, this.at + 2);
    this.at += 2;
    if (LONG_VRS.has(vr)) {
      this.skip(2);
      return { tag, vr, length: this.u32() };
    }
    // DCMTK reads a VR it does not know with a 32-bit length: refused rather than read another way.
    if (!SHORT_VRS.has(vr)) throw new NotDicomError(`element ${hex(tag)} has an unknown VR`);
    return { tag, vr, length: this.u16() };
  }

  /**
   * Skips an element's value; an undefined length is a sequence (or encapsulated data) read to its
   * end. A UN of undefined length holds a sequence in implicit VR little endian whatever the file's
   * transfer syntax (PS3.5 6.2.2, and so DCMTK reads it).
   */
  skipValue(length: number, vr: string | null): void {
    if (length !== UNDEFINED) return this.skip(length);
    if (vr === 'UN') {
      const implicit = new Reader(this.data, this.at, false, true);
      implicit.skipValue(length, null);
      this.at = implicit.at;
      return;
    }
    for (;;) {
      const item = this.header();
      if (item.tag === SEQUENCE_END) return;
      if (item.tag !== ITEM) throw new NotDicomError('a malformed sequence');
      if (item.length !== UNDEFINED) {
        this.skip(item.length);
        continue;
      }
      for (;;) {
        const element = this.header();
        if (element.tag === ITEM_END) break;
        this.skipValue(element.length, element.vr);
      }
    }
  }
}

/**
 * Reads a DICOM Part 10 file's identifiers from its first bytes: the "DICM" prefix, the file meta
 * group (explicit VR little endian), then the dataset in its transfer syntax up to
 * SeriesInstanceUID. `head` must hold at least that much (undefined-length sequences before it are
 * walked through). Throws NotDicomError with the reason.
 */
export function readDicomHead(head: Buffer): DicomHead {
  if (head.length < 132 || head.toString('latin1', 128, 132) !== 'DICM') {
    throw new NotDicomError('not a DICOM file (no "DICM" prefix)');
  }
  try {
    const meta = new Reader(head, 132, true, true);
    let transferSyntax = '';
    let sopClassUid = '';
    let sopInstanceUid = '';
    let previous = -1;
    let metaEnd: number | null = null;
    while (meta.at + 2 <= head.length && head.readUInt16LE(meta.at) === 0x0002) {
      const { tag, length } = meta.header();
      previous = ascending(tag, previous);
      if (length === UNDEFINED) throw new NotDicomError('a malformed file meta group');
      if (tag === 0x00020000) {
        if (length !== 4) throw new NotDicomError('a malformed file meta group');
        const groupLength = meta.u32();
        metaEnd = meta.at + groupLength;
      } else if (tag === 0x00020010) transferSyntax = meta.text(length);
      else if (tag === 0x00020002) sopClassUid = meta.text(length);
      else if (tag === 0x00020003) sopInstanceUid = meta.text(length);
      else meta.skip(length);
    }
    // DCMTK ends the group where its length says and reads what follows in the dataset's syntax.
    if (metaEnd !== null && metaEnd !== meta.at) throw new NotDicomError('a file meta group longer or shorter than its length');
    if (!transferSyntax) throw new NotDicomError('no transfer syntax in the file meta group');
    if (transferSyntax === DEFLATED) throw new NotDicomError('a deflated transfer syntax, which this archive does not accept');
    const dataset = new Reader(head, meta.at, transferSyntax !== IMPLICIT_LE, transferSyntax !== EXPLICIT_BE);
    const found: Partial<DicomHead> = { sopClassUid, sopInstanceUid, patientId: '' };
    previous = -1;
    while (dataset.at < head.length) {
      const { tag, vr, length } = dataset.header();
      previous = ascending(tag, previous);
      if (tag > LAST_WANTED) break;
      const field = WANTED[tag];
      if (field && length !== UNDEFINED) found[field] = dataset.text(length);
      else dataset.skipValue(length, vr);
    }
    for (const field of ['sopClassUid', 'sopInstanceUid', 'studyInstanceUid', 'seriesInstanceUid'] as const) {
      const name = field.replace(/Uid$/, 'UID').replace(/^./, (c) => c.toUpperCase());
      if (!found[field]) throw new NotDicomError(`no ${name}`);
      // Digits and dots only (PS3.5 9.1): nothing the image server could read as another UID.
      if (!UID.test(found[field])) throw new NotDicomError(`a ${name} that is not a UID`);
    }
    // The study's upload placement is kept by this UID: at most 64 characters (PS3.5 9.1).
    if (found.studyInstanceUid!.length > 64) throw new NotDicomError('a StudyInstanceUID longer than 64 characters');
    return found as DicomHead;
  } catch (error) {
    if (error instanceof Truncated) throw new NotDicomError('the file ends before its identifiers');
    throw error;
  }
}
