import type { DicomJsonDataset } from './imgsrv.types';

/** The attributes renderRefusal reads (WADO-RS metadata keys). */
const IMAGE_TAGS = {
  samplesPerPixel: '00280002',
  photometric: '00280004',
  rows: '00280010',
  columns: '00280011',
  bitsAllocated: '00280100',
  elscintCompression: '07A11011',
};

/** A decoded frame past this size is not rendered: a 4,096 x 5,120 16-bit mammogram is 40 MB. */
const MAX_RENDERED_FRAME_BYTES = 256 * 1024 * 1024;

/**
 * Why the image server must not be asked to decode this instance's pixels, or null. Orthanc 1.10's
 * decoders overflow their buffers or read past them on attributes no device writes (CVE-2026-5441
 * to 5445, fixed in 1.12.11): Rows or Columns not one US value, PALETTE COLOR lookups, Philips'
 * (Elscint) private compression, frame sizes that overflow 32-bit arithmetic. An uploaded file
 * (a CD from another hospital) would otherwise reach them by itself, through its thumbnail. The
 * dataset is WADO-RS metadata (with each element's VR as the file has it) or, without DICOMweb,
 * simplified tags turned into the same shape (values only).
 */
export function renderRefusal(dataset: DicomJsonDataset): string | null {
  const oneUs = (key: string, name: string, fallback?: number): number | string => {
    const element = dataset[key];
    if (!element && fallback !== undefined) return fallback;
    if (element?.vr !== undefined && element.vr !== 'US') return `${name} is ${element.vr}, not US`;
    const values = element?.Value ?? [];
    const value = Number(values[0]);
    if (values.length !== 1 || !Number.isInteger(value) || value < 1 || value > 0xffff) {
      return `${name} is not one value of 1 to 65535`;
    }
    return value;
  };
  const rows = oneUs(IMAGE_TAGS.rows, 'Rows');
  const columns = oneUs(IMAGE_TAGS.columns, 'Columns');
  const samples = oneUs(IMAGE_TAGS.samplesPerPixel, 'SamplesPerPixel', 1);
  const bits = oneUs(IMAGE_TAGS.bitsAllocated, 'BitsAllocated', 16);
  for (const checked of [rows, columns, samples, bits]) if (typeof checked === 'string') return checked;
  if (samples !== 1 && samples !== 3) return `SamplesPerPixel ${samples}`;
  if (![1, 8, 16, 32].includes(bits as number)) return `BitsAllocated ${bits}`;
  const photometric = String(dataset[IMAGE_TAGS.photometric]?.Value?.[0] ?? '').trim();
  if (photometric === 'PALETTE COLOR') return 'PALETTE COLOR';
  if (dataset[IMAGE_TAGS.elscintCompression]) return "Philips' private compression";
  const frameBytes = (rows as number) * (columns as number) * (samples as number) * Math.ceil((bits as number) / 8);
  if (frameBytes > MAX_RENDERED_FRAME_BYTES) return `a frame of ${frameBytes} bytes`;
  return null;
}

/** Simplified tags in the shape renderRefusal reads (no VRs). */
export function imageTagsFromSimplified(tags: Record<string, unknown> | null): DicomJsonDataset {
  const names: Record<string, string> = {
    SamplesPerPixel: IMAGE_TAGS.samplesPerPixel,
    PhotometricInterpretation: IMAGE_TAGS.photometric,
    Rows: IMAGE_TAGS.rows,
    Columns: IMAGE_TAGS.columns,
    BitsAllocated: IMAGE_TAGS.bitsAllocated,
  };
  const dataset: DicomJsonDataset = {};
  for (const [name, key] of Object.entries(names)) {
    const value = tags?.[name];
    if (value !== undefined && value !== null) dataset[key] = { Value: String(value).split('\\') };
  }
  if (tags && Object.keys(tags).some((name) => name.toLowerCase() === '07a1,1011')) dataset[IMAGE_TAGS.elscintCompression] = {};
  return dataset;
}
