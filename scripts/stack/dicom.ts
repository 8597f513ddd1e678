/**
 * A small DICOM Part-10 writer (explicit VR little endian) so the tests, the benchmarks and the
 * demo can make studies quickly, plus a wrapper around dcmtk's storescu to send them the way a
 * real device does (the calling AE title is what ingestion maps to a tenant).
 */
import { execFile } from 'child_process';
import { randomBytes } from 'crypto';
import { promises as fs } from 'fs';
import * as net from 'net';
import * as path from 'path';
import { DICOM_NETWORK_ENV } from '../dicom-network-env';

export const TRANSFER_SYNTAX_EXPLICIT_LE = '1.2.840.10008.1.2.1';

export const SOP_CLASS = {
  ctImage: '1.2.840.10008.5.1.4.1.1.2',
  mrImage: '1.2.840.10008.5.1.4.1.1.4',
  secondaryCapture: '1.2.840.10008.5.1.4.1.1.7',
  encapsulatedPdf: '1.2.840.10008.5.1.4.1.1.104.1',
  basicTextSr: '1.2.840.10008.5.1.4.1.1.88.11',
} as const;

const IMPLEMENTATION_CLASS_UID = '2.25.149201137218917616347213651393640542491';
const IMPLEMENTATION_VERSION = 'PACS_TEST_1';

/** A fresh UID under the 2.25 (UUID-derived) root, as allowed by PS3.5 B.2. */
export function generateUid(): string {
  return `2.25.${BigInt(`0x${randomBytes(16).toString('hex')}`).toString()}`;
}

// ---------------------------------------------------------------------------
// Element encoding
// ---------------------------------------------------------------------------

type Vr =
  | 'AE'
  | 'AS'
  | 'CS'
  | 'DA'
  | 'DS'
  | 'DT'
  | 'IS'
  | 'LO'
  | 'LT'
  | 'PN'
  | 'SH'
  | 'ST'
  | 'TM'
  | 'UI'
  | 'UT'
  | 'US'
  | 'UL'
  | 'OB'
  | 'OW'
  | 'SQ';

/** A dataset is a list of elements; a sequence value is a list of item datasets. */
export type Dataset = Element[];
export interface Element {
  tag: number; // (group << 16) | element
  vr: Vr;
  value: string | string[] | number | number[] | Buffer | Dataset[];
}

/** Value representations whose length field is 32 bits (with 2 reserved bytes before it). */
const LONG_VRS = new Set<Vr>(['OB', 'OW', 'SQ', 'UT']);

const tag = (group: number, element: number): number => ((group << 16) | element) >>> 0;

function el(group: number, element: number, vr: Vr, value: Element['value']): Element {
  return { tag: tag(group, element), vr, value };
}

function encodeValue(vr: Vr, value: Element['value']): Buffer {
  if (Buffer.isBuffer(value)) {
    return value.length % 2 === 0 ? value : Buffer.concat([value, Buffer.alloc(1)]);
  }
  if (vr === 'US' || vr === 'UL') {
    const numbers = Array.isArray(value) ? (value as number[]) : [value as number];
    const size = vr === 'US' ? 2 : 4;
    const buffer = Buffer.alloc(numbers.length * size);
    numbers.forEach((n, i) => (vr === 'US' ? buffer.writeUInt16LE(n, i * 2) : buffer.writeUInt32LE(n, i * 4)));
    return buffer;
  }
  const text = Array.isArray(value) ? value.join('\\') : String(value);
  const bytes = Buffer.from(text, vr === 'UI' ? 'ascii' : 'utf8');
  if (bytes.length % 2 === 0) return bytes;
  // UIDs are padded with NUL, every other string VR with a space.
  return Buffer.concat([bytes, Buffer.from(vr === 'UI' ? [0] : [0x20])]);
}

function encodeHeader(element: Element, length: number): Buffer {
  const long = LONG_VRS.has(element.vr);
  const header = Buffer.alloc(long ? 12 : 8);
  header.writeUInt16LE(element.tag >>> 16, 0);
  header.writeUInt16LE(element.tag & 0xffff, 2);
  header.write(element.vr, 4, 'ascii');
  if (long) header.writeUInt32LE(length, 8);
  else header.writeUInt16LE(length, 6);
  return header;
}

function encodeElement(element: Element): Buffer {
  if (element.vr === 'SQ') {
    // Sequences and items use undefined length with explicit delimiters.
    const items = (element.value as Dataset[]).map((item) => {
      const body = encodeDataset(item);
      return Buffer.concat([itemTag(0xe000, 0xffffffff), body, itemTag(0xe00d, 0)]);
    });
    return Buffer.concat([encodeHeader(element, 0xffffffff), ...items, itemTag(0xe0dd, 0)]);
  }
  const value = encodeValue(element.vr, element.value);
  if (!LONG_VRS.has(element.vr) && value.length > 0xffff) {
    throw new Error(`value too long for VR ${element.vr} in tag ${element.tag.toString(16)}`);
  }
  return Buffer.concat([encodeHeader(element, value.length), value]);
}

function itemTag(element: number, length: number): Buffer {
  const buffer = Buffer.alloc(8);
  buffer.writeUInt16LE(0xfffe, 0);
  buffer.writeUInt16LE(element, 2);
  buffer.writeUInt32LE(length, 4);
  return buffer;
}

function encodeDataset(dataset: Dataset): Buffer {
  const sorted = [...dataset].sort((a, b) => a.tag - b.tag);
  return Buffer.concat(sorted.map(encodeElement));
}

/** Encodes a complete Part-10 file: preamble, "DICM", file meta group, dataset. */
export function encodePart10(dataset: Dataset): Buffer {
  const sopClassUid = findString(dataset, tag(0x0008, 0x0016));
  const sopInstanceUid = findString(dataset, tag(0x0008, 0x0018));
  const meta = encodeDataset([
    el(0x0002, 0x0001, 'OB', Buffer.from([0, 1])),
    el(0x0002, 0x0002, 'UI', sopClassUid),
    el(0x0002, 0x0003, 'UI', sopInstanceUid),
    el(0x0002, 0x0010, 'UI', TRANSFER_SYNTAX_EXPLICIT_LE),
    el(0x0002, 0x0012, 'UI', IMPLEMENTATION_CLASS_UID),
    el(0x0002, 0x0013, 'SH', IMPLEMENTATION_VERSION),
  ]);
  const groupLength = encodeElement(el(0x0002, 0x0000, 'UL', meta.length));
  return Buffer.concat([Buffer.alloc(128), Buffer.from('DICM', 'ascii'), groupLength, meta, encodeDataset(dataset)]);
}

function findString(dataset: Dataset, wanted: number): string {
  const found = dataset.find((e) => e.tag === wanted);
  if (!found || typeof found.value !== 'string') {
    throw new Error(`dataset lacks tag ${wanted.toString(16)}`);
  }
  return found.value;
}

// ---------------------------------------------------------------------------
// Studies
// ---------------------------------------------------------------------------

export interface PatientStudyFields {
  patientId: string;
  /** DICOM PN, e.g. "DOE^JANE". */
  patientName: string;
  /** YYYYMMDD */
  patientBirthDate?: string;
  /** M, F, O or anything else (the service maps non M/F to null). */
  patientSex?: string;
  studyInstanceUid?: string;
  accessionNumber?: string;
  /** YYYYMMDD; today when omitted. */
  studyDate?: string;
  studyDescription?: string;
}

export interface SeriesSpec {
  modality: string;
  seriesNumber: number;
  manufacturer?: string;
  seriesDescription?: string;
  instances: number;
  rows?: number;
  columns?: number;
  /** mm, written to (0018,0050). */
  sliceThickness?: number;
  /** (0028,0004); default MONOCHROME2. */
  photometric?: string;
  /** The VR Rows and Columns are written with; default US, the standard's (UL: a crafted file). */
  dimensionsVr?: 'US' | 'UL';
}

export interface StudySpec extends PatientStudyFields {
  series: SeriesSpec[];
}

export interface WrittenStudy {
  studyInstanceUid: string;
  /** Absolute paths, in series order then instance order. */
  files: string[];
  /** One per entry of `series`, same order. */
  seriesUids: string[];
  /** One per file, same order as `files`. */
  sopInstanceUids: string[];
}

export interface NonImageStudySpec extends PatientStudyFields {
  /** 'pdf' (Encapsulated PDF, modality DOC) or 'sr' (Basic Text SR, modality SR). Default 'pdf'. */
  kind?: 'pdf' | 'sr';
  seriesNumber?: number;
  /** Text of the report (PDF page text or SR text value). */
  text?: string;
}

function today(): string {
  return new Date().toISOString().slice(0, 10).replace(/-/g, '');
}

function studyLevel(spec: PatientStudyFields, studyInstanceUid: string): Dataset {
  const dataset: Dataset = [
    el(0x0008, 0x0005, 'CS', 'ISO_IR 192'), // UTF-8
    el(0x0008, 0x0020, 'DA', spec.studyDate ?? today()),
    el(0x0008, 0x0030, 'TM', '120000'),
    el(0x0008, 0x0050, 'SH', spec.accessionNumber ?? ''),
    el(0x0008, 0x0090, 'PN', ''),
    el(0x0010, 0x0010, 'PN', spec.patientName),
    el(0x0010, 0x0020, 'LO', spec.patientId),
    el(0x0010, 0x0030, 'DA', spec.patientBirthDate ?? ''),
    el(0x0010, 0x0040, 'CS', spec.patientSex ?? ''),
    el(0x0020, 0x000d, 'UI', studyInstanceUid),
    el(0x0020, 0x0010, 'SH', '1'),
  ];
  if (spec.studyDescription !== undefined) dataset.push(el(0x0008, 0x1030, 'LO', spec.studyDescription));
  return dataset;
}

function sopClassFor(modality: string): string {
  switch (modality.toUpperCase()) {
    case 'CT':
      return SOP_CLASS.ctImage;
    case 'MR':
      return SOP_CLASS.mrImage;
    default:
      return SOP_CLASS.secondaryCapture;
  }
}

/**
 * 12-bit pixels: a diagonal gradient plus a bright square whose position moves
 * with the instance number, so every slice (and its thumbnail) differs.
 */
export function makePixels(rows: number, columns: number, index: number): Buffer {
  const pixels = Buffer.alloc(rows * columns * 2);
  const side = Math.max(2, Math.floor(Math.min(rows, columns) / 4));
  const span = Math.max(1, Math.min(rows, columns) - side);
  const offset = (index * 7) % span;
  for (let y = 0; y < rows; y++) {
    for (let x = 0; x < columns; x++) {
      const gradient = Math.floor(((x + y) / Math.max(1, rows + columns - 2)) * 2000);
      const inSquare = x >= offset && x < offset + side && y >= offset && y < offset + side;
      pixels.writeUInt16LE(inSquare ? 4000 : gradient, (y * columns + x) * 2);
    }
  }
  return pixels;
}

function imageInstance(series: SeriesSpec, seriesUid: string, sopInstanceUid: string, number: number): Dataset {
  const rows = series.rows ?? 128;
  const columns = series.columns ?? 128;
  const sopClassUid = sopClassFor(series.modality);
  const thickness = series.sliceThickness ?? 1;
  const dataset: Dataset = [
    el(0x0008, 0x0008, 'CS', ['ORIGINAL', 'PRIMARY', 'AXIAL']),
    el(0x0008, 0x0016, 'UI', sopClassUid),
    el(0x0008, 0x0018, 'UI', sopInstanceUid),
    el(0x0008, 0x0060, 'CS', series.modality),
    el(0x0008, 0x0070, 'LO', series.manufacturer ?? ''),
    el(0x0008, 0x103e, 'LO', series.seriesDescription ?? `${series.modality} series ${series.seriesNumber}`),
    el(0x0018, 0x0050, 'DS', String(thickness)),
    el(0x0020, 0x000e, 'UI', seriesUid),
    el(0x0020, 0x0011, 'IS', String(series.seriesNumber)),
    el(0x0020, 0x0013, 'IS', String(number)),
    el(0x0020, 0x0032, 'DS', ['0', '0', String(number * thickness)]),
    el(0x0020, 0x0037, 'DS', ['1', '0', '0', '0', '1', '0']),
    el(0x0028, 0x0002, 'US', 1),
    el(0x0028, 0x0004, 'CS', series.photometric ?? 'MONOCHROME2'),
    el(0x0028, 0x0010, series.dimensionsVr ?? 'US', rows),
    el(0x0028, 0x0011, series.dimensionsVr ?? 'US', columns),
    el(0x0028, 0x0030, 'DS', ['0.5', '0.5']),
    el(0x0028, 0x0100, 'US', 16),
    el(0x0028, 0x0101, 'US', 12),
    el(0x0028, 0x0102, 'US', 11),
    el(0x0028, 0x0103, 'US', 0),
    el(0x0028, 0x1050, 'DS', '2048'),
    el(0x0028, 0x1051, 'DS', '4096'),
    el(0x7fe0, 0x0010, 'OW', makePixels(rows, columns, number)),
  ];
  if (sopClassUid === SOP_CLASS.ctImage) {
    dataset.push(el(0x0028, 0x1052, 'DS', '0'), el(0x0028, 0x1053, 'DS', '1'));
  }
  if (sopClassUid === SOP_CLASS.secondaryCapture) {
    dataset.push(el(0x0008, 0x0064, 'CS', 'WSD'));
  }
  return dataset;
}

/** Writes one Part-10 file per instance into `dir` (created if needed). */
export async function writeStudy(dir: string, spec: StudySpec): Promise<WrittenStudy> {
  await fs.mkdir(dir, { recursive: true });
  const studyInstanceUid = spec.studyInstanceUid ?? generateUid();
  const common = studyLevel(spec, studyInstanceUid);
  const result: WrittenStudy = { studyInstanceUid, files: [], seriesUids: [], sopInstanceUids: [] };

  for (const series of spec.series) {
    const seriesUid = generateUid();
    result.seriesUids.push(seriesUid);
    for (let number = 1; number <= series.instances; number++) {
      const sopInstanceUid = generateUid();
      const file = path.resolve(dir, `${sopInstanceUid}.dcm`);
      await fs.writeFile(file, encodePart10([...common, ...imageInstance(series, seriesUid, sopInstanceUid, number)]));
      result.files.push(file);
      result.sopInstanceUids.push(sopInstanceUid);
    }
  }
  return result;
}

/** A one-page PDF showing `text` (offsets computed, so strict readers accept it). */
export function makePdf(text: string): Buffer {
  const escaped = text.replace(/[\\()]/g, (c) => `\\${c}`);
  const stream = `BT /F1 18 Tf 72 720 Td (${escaped}) Tj ET`;
  const objects = [
    '<< /Type /Catalog /Pages 2 0 R >>',
    '<< /Type /Pages /Kids [3 0 R] /Count 1 >>',
    '<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R /Resources << /Font << /F1 5 0 R >> >> >>',
    `<< /Length ${Buffer.byteLength(stream, 'latin1')} >>\nstream\n${stream}\nendstream`,
    '<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica >>',
  ];
  let pdf = '%PDF-1.4\n';
  const offsets: number[] = [];
  objects.forEach((body, i) => {
    offsets.push(Buffer.byteLength(pdf, 'latin1'));
    pdf += `${i + 1} 0 obj\n${body}\nendobj\n`;
  });
  const xref = Buffer.byteLength(pdf, 'latin1');
  pdf += `xref\n0 ${objects.length + 1}\n0000000000 65535 f \n`;
  pdf += offsets.map((o) => `${String(o).padStart(10, '0')} 00000 n \n`).join('');
  pdf += `trailer\n<< /Size ${objects.length + 1} /Root 1 0 R >>\nstartxref\n${xref}\n%%EOF\n`;
  return Buffer.from(pdf, 'latin1');
}

function code(value: string, scheme: string, meaning: string): Dataset {
  return [el(0x0008, 0x0100, 'SH', value), el(0x0008, 0x0102, 'SH', scheme), el(0x0008, 0x0104, 'LO', meaning)];
}

/** A study with one instance and no pixel data: an Encapsulated PDF or a Basic Text SR. */
export async function writeNonImageStudy(dir: string, spec: NonImageStudySpec): Promise<WrittenStudy> {
  await fs.mkdir(dir, { recursive: true });
  const kind = spec.kind ?? 'pdf';
  const studyInstanceUid = spec.studyInstanceUid ?? generateUid();
  const seriesUid = generateUid();
  const sopInstanceUid = generateUid();
  const text = spec.text ?? 'Report: no acute findings.';
  const date = spec.studyDate ?? today();

  const dataset: Dataset = [
    ...studyLevel(spec, studyInstanceUid),
    el(0x0008, 0x0018, 'UI', sopInstanceUid),
    el(0x0008, 0x0023, 'DA', date),
    el(0x0008, 0x0033, 'TM', '120000'),
    el(0x0008, 0x0070, 'LO', ''),
    el(0x0020, 0x000e, 'UI', seriesUid),
    el(0x0020, 0x0011, 'IS', String(spec.seriesNumber ?? 1)),
    el(0x0020, 0x0013, 'IS', '1'),
  ];

  if (kind === 'pdf') {
    dataset.push(
      el(0x0008, 0x0016, 'UI', SOP_CLASS.encapsulatedPdf),
      el(0x0008, 0x0060, 'CS', 'DOC'),
      el(0x0008, 0x0064, 'CS', 'WSD'),
      el(0x0008, 0x103e, 'LO', 'PDF report'),
      el(0x0028, 0x0301, 'CS', 'YES'),
      el(0x0040, 0xa043, 'SQ', []),
      el(0x0042, 0x0010, 'ST', 'Report'),
      el(0x0042, 0x0011, 'OB', makePdf(text)),
      el(0x0042, 0x0012, 'LO', 'application/pdf'),
    );
  } else {
    dataset.push(
      el(0x0008, 0x0016, 'UI', SOP_CLASS.basicTextSr),
      el(0x0008, 0x0060, 'CS', 'SR'),
      el(0x0008, 0x103e, 'LO', 'Text report'),
      el(0x0040, 0xa040, 'CS', 'CONTAINER'),
      el(0x0040, 0xa043, 'SQ', [code('18748-4', 'LN', 'Diagnostic Imaging Report')]),
      el(0x0040, 0xa050, 'CS', 'SEPARATE'),
      el(0x0040, 0xa491, 'CS', 'COMPLETE'),
      el(0x0040, 0xa493, 'CS', 'UNVERIFIED'),
      el(0x0040, 0xa730, 'SQ', [
        [
          el(0x0040, 0xa010, 'CS', 'CONTAINS'),
          el(0x0040, 0xa040, 'CS', 'TEXT'),
          el(0x0040, 0xa043, 'SQ', [code('121071', 'DCM', 'Finding')]),
          el(0x0040, 0xa160, 'UT', text),
        ],
      ]),
    );
  }

  const file = path.resolve(dir, `${sopInstanceUid}.dcm`);
  await fs.writeFile(file, encodePart10(dataset));
  return { studyInstanceUid, files: [file], seriesUids: [seriesUid], sopInstanceUids: [sopInstanceUid] };
}

// ---------------------------------------------------------------------------
// Sending
// ---------------------------------------------------------------------------

export interface StorescuOptions {
  /** Calling AE title: the "device" the image server records as RemoteAET. */
  aet: string;
  host?: string;
  port: number;
  calledAet?: string;
  /** Files per association (and per storescu run). Default 200. */
  chunkSize?: number;
  /** Per-run time limit in ms. Default 120 000. */
  timeoutMs?: number;
  /**
   * Local address the image server sees the device connect from (its `RemoteIP`), e.g. 127.0.0.2:
   * storescu cannot bind one, so the association goes through a relay that does. Default: whatever
   * the kernel picks (127.0.0.1 towards 127.0.0.1, and towards any other 127.x address too).
   */
  fromAddress?: string;
  /** storescu -v: its output (in a rejection's message) then shows each C-STORE's answer status. */
  verbose?: boolean;
  /** storescu's transfer syntax proposal, e.g. `-xt` for JPEG-LS lossless files. Default: uncompressed. */
  propose?: string;
  /** Extra environment for storescu (after DICOM_NETWORK_ENV: `{ TCP_NODELAY: '0' }` plays a device that leaves Nagle on). */
  env?: NodeJS.ProcessEnv;
}

export const STORESCU = process.env.STORESCU_BIN ?? 'storescu';

/**
 * Sends files with dcmtk's storescu, one association per chunk. Rejects with
 * storescu's output when it exits non-zero or logs an error ("E:" lines: a
 * refused C-STORE in the middle of a chunk is not always an exit status).
 */
export async function sendWithStorescu(files: string[], options: StorescuOptions): Promise<void> {
  const { aet, calledAet = 'ORTHANC', chunkSize = 200, timeoutMs = 120_000, fromAddress } = options;
  if (fromAddress) {
    const relay = await relayFrom(fromAddress, options.host ?? '127.0.0.1', options.port);
    try {
      await sendWithStorescu(files, { ...options, host: '127.0.0.1', port: relay.port, fromAddress: undefined });
    } finally {
      await relay.close();
    }
    return;
  }
  const { host = '127.0.0.1', port } = options;
  // The sender's side of TCP_NODELAY (scripts/dicom-network-env.js), as a well-configured device.
  const env = { ...process.env, ...DICOM_NETWORK_ENV, ...options.env };
  for (let start = 0; start < files.length; start += chunkSize) {
    const chunk = files.slice(start, start + chunkSize);
    const args = [
      '-aet',
      aet,
      '-aec',
      calledAet,
      '-ta',
      '30',
      '-td',
      '60',
      ...(options.verbose ? ['-v'] : []),
      ...(options.propose ? [options.propose] : []),
      host,
      String(port),
      ...chunk,
    ];
    await new Promise<void>((resolve, reject) => {
      execFile(STORESCU, args, { env, timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
        const output = `${stderr}${stdout}`.trim();
        if (error || /^E: /m.test(output)) {
          reject(new Error(`storescu -aet ${aet} ${host}:${port} failed: ${output || (error as Error).message}`));
        } else {
          resolve();
        }
      });
    });
  }
}

/** A TCP relay on a free 127.0.0.1 port to host:port, connecting from `localAddress`. */
async function relayFrom(localAddress: string, host: string, port: number): Promise<{ port: number; close(): Promise<void> }> {
  const sockets = new Set<net.Socket>();
  const server = net.createServer((client) => {
    const upstream = net.connect({ host, port, localAddress });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('close', () => sockets.delete(socket));
    }
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    client.pipe(upstream).pipe(client);
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', resolve);
  });
  return {
    port: (server.address() as net.AddressInfo).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
