/**
 * Clinical rows (patients, studies, series, instances, thumbnails) inserted directly, for the read
 * tests: they need exact dates, names and tenants, not the ingestion pipeline.
 */
import { randomBytes, randomUUID } from 'crypto';
import { DataSource } from 'typeorm';

const hex = (bytes: number) => randomBytes(bytes).toString('hex');
/** Looks like an Orthanc id (SHA-1 in five dash-separated groups). */
export const imgsrvId = () => hex(20).match(/.{8}/g)!.join('-');
export const dicomUid = () => `2.25.${BigInt(`0x${hex(16)}`).toString()}`;

export interface PatientRow {
  id: string;
  tenant_id: string;
  patient_id: string;
  patient_name: string;
  patient_birth_date: string | null;
  patient_sex: 'M' | 'F' | null;
}

export interface StudyRow {
  id: string;
  tenant_id: string;
  unit_id: string;
  patient_uuid: string | null;
  imgsrv_study_id: string;
  study_instance_uid: string;
  patient_id: string;
  patient_name: string;
  accession_number: string | null;
  study_date: string;
  modalities: string[] | null;
  created_at: Date;
}

export interface SeriesRow {
  id: string;
  study_id: string;
  imgsrv_series_id: string;
  series_instance_uid: string;
  modality: string;
  series_number: number;
}

export interface InstanceRow {
  id: string;
  series_id: string;
  imgsrv_instance_id: string;
  sop_instance_uid: string;
  instance_number: number;
}

export async function createPatient(
  db: DataSource,
  tenantId: string,
  values: Partial<Omit<PatientRow, 'tenant_id'>> & { created_at?: string } = {},
): Promise<PatientRow> {
  const [row] = await db.query(
    `INSERT INTO patients (id, tenant_id, patient_id, patient_name, patient_birth_date, patient_sex, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, COALESCE($7::timestamptz, now()))
     RETURNING id, tenant_id, patient_id, patient_name, to_char(patient_birth_date, 'YYYY-MM-DD') AS patient_birth_date, patient_sex`,
    [
      values.id ?? randomUUID(),
      tenantId,
      values.patient_id ?? `PID-${hex(4)}`,
      values.patient_name ?? `DOE^${hex(3).toUpperCase()}`,
      values.patient_birth_date ?? '1980-02-14',
      values.patient_sex === undefined ? 'F' : values.patient_sex,
      values.created_at ?? null,
    ],
  );
  return row;
}

export interface StudyValues {
  tenant_id: string;
  unit_id: string;
  patient?: PatientRow | null;
  study_instance_uid?: string;
  patient_id?: string;
  patient_name?: string;
  accession_number?: string | null;
  study_date?: string;
  study_description?: string | null;
  modalities?: string[] | null;
  created_at?: string;
  report_status?: 'pending' | 'draft' | 'final' | null;
}

/** A study; patient fields are copied from `patient` when given (as the worker does). */
export async function createStudy(db: DataSource, values: StudyValues): Promise<StudyRow> {
  const patient = values.patient ?? null;
  const [row] = await db.query(
    `INSERT INTO studies (tenant_id, unit_id, patient_uuid, imgsrv_study_id, study_instance_uid, patient_id,
                          patient_name, patient_birth_date, patient_sex, accession_number, study_date,
                          study_description, modalities, report_status, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, COALESCE($15::timestamptz, now()))
     RETURNING id, tenant_id, unit_id, patient_uuid, imgsrv_study_id, study_instance_uid, patient_id, patient_name,
               accession_number, to_char(study_date, 'YYYY-MM-DD') AS study_date, modalities, created_at`,
    [
      values.tenant_id,
      values.unit_id,
      patient?.id ?? null,
      imgsrvId(),
      values.study_instance_uid ?? dicomUid(),
      values.patient_id ?? patient?.patient_id ?? `PID-${hex(4)}`,
      values.patient_name ?? patient?.patient_name ?? `DOE^${hex(3).toUpperCase()}`,
      patient?.patient_birth_date ?? null,
      patient?.patient_sex ?? null,
      values.accession_number === undefined ? `ACC-${hex(4)}` : values.accession_number,
      values.study_date ?? '2024-01-15',
      values.study_description === undefined ? 'CT head' : values.study_description,
      values.modalities === undefined ? ['CT'] : values.modalities,
      values.report_status === undefined ? 'pending' : values.report_status,
      values.created_at ?? null,
    ],
  );
  return row;
}

export async function createSeries(
  db: DataSource,
  studyId: string,
  values: Partial<Omit<SeriesRow, 'study_id' | 'id'>> & {
    created_at?: string;
    manufacturer?: string | null;
    instance_count?: number;
  } = {},
): Promise<SeriesRow> {
  const [row] = await db.query(
    `INSERT INTO series (study_id, imgsrv_series_id, series_instance_uid, modality, series_number, manufacturer,
                         instance_count, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::timestamptz, now()))
     RETURNING id, study_id, imgsrv_series_id, series_instance_uid, modality, series_number`,
    [
      studyId,
      values.imgsrv_series_id ?? imgsrvId(),
      values.series_instance_uid ?? dicomUid(),
      values.modality ?? 'CT',
      values.series_number ?? 1,
      values.manufacturer === undefined ? 'ACME' : values.manufacturer,
      values.instance_count ?? 1,
      values.created_at ?? null,
    ],
  );
  return row;
}

export async function createInstance(
  db: DataSource,
  seriesId: string,
  values: Partial<Omit<InstanceRow, 'series_id' | 'id'>> & {
    created_at?: string;
    rows?: number | null;
    columns?: number | null;
    slice_thickness?: number | null;
  } = {},
): Promise<InstanceRow> {
  const [row] = await db.query(
    `INSERT INTO instances (series_id, imgsrv_instance_id, sop_instance_uid, instance_number, rows, columns,
                            slice_thickness, created_at)
     VALUES ($1, $2, $3, $4, $5, $6, $7, COALESCE($8::timestamptz, now()))
     RETURNING id, series_id, imgsrv_instance_id, sop_instance_uid, instance_number`,
    [
      seriesId,
      values.imgsrv_instance_id ?? imgsrvId(),
      values.sop_instance_uid ?? dicomUid(),
      values.instance_number ?? 1,
      values.rows === undefined ? 512 : values.rows,
      values.columns === undefined ? 512 : values.columns,
      values.slice_thickness === undefined ? 1.25 : values.slice_thickness,
      values.created_at ?? null,
    ],
  );
  return row;
}

export async function createThumbnail(
  db: DataSource,
  studyId: string,
  seriesId: string | null,
  data: Buffer,
  contentType = 'image/jpeg',
): Promise<void> {
  await db.query(`INSERT INTO thumbnails (study_id, series_id, content_type, data) VALUES ($1, $2, $3, $4)`, [
    studyId,
    seriesId,
    contentType,
    data,
  ]);
}

/**
 * What a stand-in image server answers at `/instances/{id}/simplified-tags`: a 16 x 16 grey image,
 * which the API's check before a rendering lets through (ImgsrvClient.decodeRefusal).
 */
export const fakeImageTags = (photometric = 'MONOCHROME2') =>
  JSON.stringify({
    Rows: '16',
    Columns: '16',
    SamplesPerPixel: '1',
    BitsAllocated: '16',
    PhotometricInterpretation: photometric,
  });

/** Distinct recognisable bytes (not a real JPEG: the API passes stored thumbnails through untouched). */
export const fakeJpeg = (label: string) => Buffer.concat([Buffer.from([0xff, 0xd8, 0xff, 0xe0]), Buffer.from(label)]);

/** A study with a patient, one series and one instance: the usual unit of the isolation tests. */
export async function createImagedStudy(db: DataSource, tenantId: string, unitId: string, values: Partial<StudyValues> = {}) {
  const patient = values.patient ?? (await createPatient(db, tenantId));
  const study = await createStudy(db, { tenant_id: tenantId, unit_id: unitId, patient, ...values });
  const series = await createSeries(db, study.id);
  const instance = await createInstance(db, series.id);
  return { patient, study, series, instance };
}
