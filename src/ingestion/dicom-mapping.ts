import { DicomJsonDataset, ImageGeometry, OrthancInstance, OrthancSeries, OrthancStudy } from '../imgsrv';

/** Column sizes of the schema: longer values are cut rather than failing the whole study. UIDs never are. */
const LIMITS = { id: 64, name: 255, short: 16, accession: 64, description: 255 } as const;

/** DICOM's limit for a UID (PS3.5 9.1). */
export const MAX_UID_LENGTH = 64;

function clean(value: string | undefined | null, max = Infinity): string {
  return (value ?? '').replace(/\0/g, '').trim().slice(0, max);
}

/**
 * A UID as sent (NULs and padding removed), never cut: a cut UID could equal another study's. One
 * over 64 characters is invalid; its study goes to quarantine (StudyJobService).
 */
function uid(value: string | undefined | null): string {
  return clean(value);
}

export function validUid(value: string): boolean {
  return value.length <= MAX_UID_LENGTH;
}

function cleanOrNull(value: string | undefined | null, max: number): string | null {
  const text = clean(value, max);
  return text === '' ? null : text;
}

/**
 * A DICOM DA value (YYYYMMDD; the old ACR-NEMA YYYY.MM.DD also occurs) as YYYY-MM-DD, or null when
 * it is absent or not a real calendar date.
 */
export function dicomDate(value: string | undefined | null): string | null {
  const match = /^(\d{4})[.-]?(\d{2})[.-]?(\d{2})$/.exec((value ?? '').trim());
  if (!match) return null;
  const [year, month, day] = match.slice(1).map(Number);
  if (year < 1800 || month < 1 || month > 12 || day < 1) return null;
  const date = new Date(Date.UTC(year, month - 1, day));
  if (date.getUTCMonth() !== month - 1 || date.getUTCDate() !== day) return null;
  return `${match[1]}-${match[2]}-${match[3]}`;
}

/** Only M and F are kept; O, U, blanks and anything else become null. */
export function dicomSex(value: string | undefined | null): 'M' | 'F' | null {
  const sex = (value ?? '').trim().toUpperCase();
  return sex === 'M' || sex === 'F' ? sex : null;
}

/** The key a modality is registered under: trimmed and uppercased. */
export function normaliseAet(value: string | undefined | null): string | null {
  const aet = (value ?? '').trim().toUpperCase();
  return aet === '' ? null : aet;
}

/** DICOM IS: an integer, or `fallback` when absent or not a number. */
export function dicomInt(value: string | number | undefined | null, fallback: number): number {
  const number = typeof value === 'number' ? value : Number.parseInt(String(value ?? '').trim(), 10);
  return Number.isFinite(number) && Math.abs(number) <= 2_147_483_647 ? Math.trunc(number) : fallback;
}

/** DICOM DS: a decimal (first value of a multi-valued one), or null. */
export function dicomDecimal(value: unknown): number | null {
  if (value === undefined || value === null || value === '') return null;
  const first = typeof value === 'string' ? value.split('\\')[0].trim() : value;
  const number = typeof first === 'number' ? first : Number(first);
  return Number.isFinite(number) ? number : null;
}

/** The local calendar date, YYYY-MM-DD: a study without a date is dated by its ingestion. */
export function localDate(now = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${now.getFullYear()}-${pad(now.getMonth() + 1)}-${pad(now.getDate())}`;
}

export interface StudyFields {
  imgsrv_study_id: string;
  study_instance_uid: string;
  patient_id: string;
  patient_name: string;
  patient_birth_date: string | null;
  patient_sex: 'M' | 'F' | null;
  accession_number: string | null;
  study_date: string;
  study_description: string | null;
}

export function mapStudy(study: OrthancStudy, now = new Date()): StudyFields {
  const tags = study.MainDicomTags ?? {};
  const patient = study.PatientMainDicomTags ?? {};
  return {
    imgsrv_study_id: study.ID,
    study_instance_uid: uid(tags.StudyInstanceUID),
    patient_id: clean(patient.PatientID, LIMITS.id),
    patient_name: clean(patient.PatientName, LIMITS.name),
    patient_birth_date: dicomDate(patient.PatientBirthDate),
    patient_sex: dicomSex(patient.PatientSex),
    accession_number: cleanOrNull(tags.AccessionNumber, LIMITS.accession),
    study_date: dicomDate(tags.StudyDate) ?? localDate(now),
    study_description: cleanOrNull(tags.StudyDescription, LIMITS.description),
  };
}

export interface SeriesFields {
  imgsrv_series_id: string;
  series_instance_uid: string;
  modality: string;
  series_number: number;
  manufacturer: string | null;
}

export function mapSeries(series: OrthancSeries): SeriesFields {
  const tags = series.MainDicomTags ?? {};
  return {
    imgsrv_series_id: series.ID,
    series_instance_uid: uid(tags.SeriesInstanceUID),
    // OT is DICOM's own "other" modality code.
    modality: clean(tags.Modality, LIMITS.short).toUpperCase() || 'OT',
    series_number: dicomInt(tags.SeriesNumber, 0),
    manufacturer: cleanOrNull(tags.Manufacturer, LIMITS.name),
  };
}

export interface InstanceFields {
  imgsrv_instance_id: string;
  imgsrv_series_id: string;
  sop_instance_uid: string;
  instance_number: number;
  /** Orthanc's position in the series: the tie-break when instance numbers repeat or are missing. */
  index_in_series: number;
}

export function mapInstance(instance: OrthancInstance): InstanceFields {
  const tags = instance.MainDicomTags ?? {};
  const index = dicomInt(instance.IndexInSeries ?? undefined, 0);
  return {
    imgsrv_instance_id: instance.ID,
    imgsrv_series_id: instance.ParentSeries,
    sop_instance_uid: uid(tags.SOPInstanceUID),
    instance_number: dicomInt(tags.InstanceNumber, index),
    index_in_series: index,
  };
}

/** Tags read over QIDO-RS, in DICOM JSON keys. */
export const GEOMETRY_TAGS = { sopInstanceUid: '00080018', rows: '00280010', columns: '00280011', sliceThickness: '00180050' };

function firstValue(dataset: DicomJsonDataset, key: string): unknown {
  const value = dataset[key]?.Value;
  return Array.isArray(value) && value.length > 0 ? value[0] : undefined;
}

/** Rows / Columns / SliceThickness of each instance in a QIDO-RS answer, keyed by SOP Instance UID. */
export function geometryFromQido(datasets: DicomJsonDataset[]): Map<string, ImageGeometry> {
  const result = new Map<string, ImageGeometry>();
  for (const dataset of datasets) {
    const uid = firstValue(dataset, GEOMETRY_TAGS.sopInstanceUid);
    if (typeof uid !== 'string') continue;
    result.set(uid.trim(), {
      rows: positiveInt(firstValue(dataset, GEOMETRY_TAGS.rows)),
      columns: positiveInt(firstValue(dataset, GEOMETRY_TAGS.columns)),
      sliceThickness: dicomDecimal(firstValue(dataset, GEOMETRY_TAGS.sliceThickness)),
    });
  }
  return result;
}

/** The same from `/instances/{id}/simplified-tags`. */
export function geometryFromSimplifiedTags(tags: Record<string, unknown> | null): ImageGeometry {
  return {
    rows: positiveInt(tags?.Rows),
    columns: positiveInt(tags?.Columns),
    sliceThickness: dicomDecimal(tags?.SliceThickness),
  };
}

function positiveInt(value: unknown): number | null {
  const number = dicomInt(value as string | number | undefined, -1);
  return number > 0 ? number : null;
}

export const NO_GEOMETRY: ImageGeometry = { rows: null, columns: null, sliceThickness: null };
