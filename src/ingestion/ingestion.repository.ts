import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource, EntityManager } from 'typeorm';
import { ImageGeometry } from '../imgsrv';
import { quarantineReason, QuarantineReason, sameAddress, Sender } from './device-identity';
import { InstanceFields, MAX_UID_LENGTH, SeriesFields, StudyFields } from './dicom-mapping';

export interface Placement {
  tenant_id: string;
  unit_id: string;
  /** True when no registered modality matched the sender (AE title and address): the quarantine tenant. */
  quarantined: boolean;
  /** Why, when quarantined. */
  reason?: QuarantineReason;
  /** The address the AE title is registered with, when the sender's did not match it. */
  registeredAddress?: string;
}

export interface SavedStudy {
  id: string;
  tenant_id: string;
  unit_id: string;
  patient_uuid: string;
  inserted: boolean;
}

export interface IndexedSeries extends SeriesFields {
  instance_count: number;
}

export interface IndexedInstance extends Omit<InstanceFields, 'index_in_series'> {
  rows: number | null;
  columns: number | null;
  slice_thickness: number | null;
}

export interface IndexWrite {
  imgsrvStudyId: string;
  series: IndexedSeries[];
  instances: IndexedInstance[];
  modalities: string[];
  studyThumbnail: Buffer | null;
  /** By imgsrv_series_id. */
  seriesThumbnails: Map<string, Buffer>;
  changeSeq: number;
  lastUpdate: string | null;
}

export interface StudySyncMarker {
  indexed_seq: number | null;
  last_update: string | null;
}

/** Rows per INSERT ... SELECT FROM unnest(...): one statement whatever the size, bounded memory. */
const INSTANCE_BATCH = 1000;

/** Namespace of the per-study advisory lock: jobs of one study never write at the same time. */
const STUDY_LOCK_NAMESPACE = 73_004;

export const RECONCILE_POSITION_KEY = 'changes.last_seq';

/** All SQL of ingestion. Upserts are keyed on the image server's ids, so running a job twice changes nothing. */
@Injectable()
export class IngestionRepository {
  private quarantine?: Placement;

  constructor(@InjectDataSource() private readonly db: DataSource) {}

  /**
   * Tenant and unit of the modality registered under the sender's AE title when the sender's address
   * is that modality's, else the quarantine tenant and unit with the reason.
   */
  async resolvePlacement(sender: Sender): Promise<Placement> {
    const [modality]: Array<{ tenant_id: string; unit_id: string; ip_address: string }> = sender.aet
      ? await this.db.query(`SELECT tenant_id, unit_id, ip_address FROM modalities WHERE aet = $1`, [sender.aet])
      : [];
    const reason = quarantineReason(sender, modality ?? null);
    if (!reason) return { tenant_id: modality.tenant_id, unit_id: modality.unit_id, quarantined: false };
    return { ...(await this.quarantinePlacement()), reason, registeredAddress: modality?.ip_address };
  }

  /**
   * The unit a user uploaded the study into through the API (STOW-RS), recorded before its first
   * instance was stored; null when it was not uploaded that way.
   */
  async uploadPlacement(studyInstanceUid: string | undefined): Promise<Placement | null> {
    if (!studyInstanceUid) return null;
    const [row]: Array<{ tenant_id: string; unit_id: string }> = await this.db.query(
      `SELECT tenant_id, unit_id FROM upload_placements WHERE study_instance_uid = $1`,
      [studyInstanceUid],
    );
    return row ? { tenant_id: row.tenant_id, unit_id: row.unit_id, quarantined: false } : null;
  }

  async quarantinePlacement(): Promise<Placement> {
    if (!this.quarantine) {
      const [row] = await this.db.query(
        `SELECT t.id AS tenant_id, u.id AS unit_id FROM tenants t
         JOIN units u ON u.tenant_id = t.id AND u.slug = 'quarantine'
         WHERE t.slug = 'quarantine'`,
      );
      if (!row) throw new Error('the quarantine tenant and unit (slug "quarantine") are missing: run the migrations');
      this.quarantine = { tenant_id: row.tenant_id, unit_id: row.unit_id, quarantined: true };
    }
    return this.quarantine;
  }

  /**
   * Upserts the study on imgsrv_study_id and its patient on (tenant_id, patient_id), in one
   * transaction. A new study takes the placement; a study already placed in a clinic keeps its
   * tenant and unit whoever sends it again (a device of another clinic included): only a quarantined
   * study moves, and only to a placement out of quarantine. The returned tenant and unit are the
   * study's. report_status starts as pending on insert and is never touched again here.
   * `dated` is false when the study carries no valid StudyDate: its study_date is then the date of
   * its first ingestion, kept when it is ingested again (a later run must not move it in the lists).
   */
  async saveStudy(study: StudyFields, placement: Placement, sender: Sender, dated = true): Promise<SavedStudy> {
    const quarantine = await this.quarantinePlacement();
    return this.db.transaction(async (m) => {
      await this.lockStudy(m, study.imgsrv_study_id);
      const [saved] = await m.query(
        `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name,
           patient_birth_date, patient_sex, accession_number, study_date, study_description, report_status)
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, 'pending')
         ON CONFLICT (imgsrv_study_id) DO UPDATE SET
           tenant_id = CASE WHEN studies.tenant_id = $13::uuid AND NOT $12::boolean THEN EXCLUDED.tenant_id ELSE studies.tenant_id END,
           unit_id = CASE WHEN studies.tenant_id = $13::uuid AND NOT $12::boolean THEN EXCLUDED.unit_id ELSE studies.unit_id END,
           study_instance_uid = EXCLUDED.study_instance_uid,
           patient_id = EXCLUDED.patient_id,
           patient_name = EXCLUDED.patient_name,
           patient_birth_date = EXCLUDED.patient_birth_date,
           patient_sex = EXCLUDED.patient_sex,
           accession_number = EXCLUDED.accession_number,
           study_date = CASE WHEN $14::boolean THEN EXCLUDED.study_date ELSE studies.study_date END,
           study_description = EXCLUDED.study_description,
           updated_at = now()
         RETURNING id, tenant_id, unit_id, patient_uuid, (xmax = 0) AS inserted`,
        [
          placement.tenant_id,
          placement.unit_id,
          study.imgsrv_study_id,
          study.study_instance_uid,
          study.patient_id,
          study.patient_name,
          study.patient_birth_date,
          study.patient_sex,
          study.accession_number,
          study.study_date,
          study.study_description,
          placement.quarantined,
          quarantine.tenant_id,
          dated,
        ],
      );
      const patientUuid = await this.upsertPatient(m, saved.tenant_id, study);
      const previous: string | null = saved.patient_uuid;
      if (previous !== patientUuid) {
        await m.query(`UPDATE studies SET patient_uuid = $1 WHERE id = $2`, [patientUuid, saved.id]);
        if (previous) await this.dropOrphanQuarantinePatient(m, previous);
      }
      // '' rather than NULL for a missing address: NULL means "not read yet" (see quarantinedWithRegisteredDevice).
      await m.query(
        `INSERT INTO imgsrv_study_sync (imgsrv_study_id, remote_aet, remote_ip) VALUES ($1, $2, $3)
         ON CONFLICT (imgsrv_study_id) DO UPDATE SET remote_aet = EXCLUDED.remote_aet, remote_ip = EXCLUDED.remote_ip`,
        [study.imgsrv_study_id, sender.aet, (sender.ip ?? '').slice(0, 64)],
      );
      return {
        id: saved.id,
        tenant_id: saved.tenant_id,
        unit_id: saved.unit_id,
        patient_uuid: patientUuid,
        inserted: saved.inserted === true,
      };
    });
  }

  /** One patient per (tenant, patient_id); a later study refreshes the demographics it carries. */
  private async upsertPatient(m: EntityManager, tenantId: string, study: StudyFields): Promise<string> {
    const params = [tenantId, study.patient_id, study.patient_name, study.patient_birth_date, study.patient_sex];
    const [changed] = await m.query(
      `INSERT INTO patients (tenant_id, patient_id, patient_name, patient_birth_date, patient_sex)
       VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (tenant_id, patient_id) DO UPDATE SET
         patient_name = CASE WHEN EXCLUDED.patient_name <> '' THEN EXCLUDED.patient_name ELSE patients.patient_name END,
         patient_birth_date = COALESCE(EXCLUDED.patient_birth_date, patients.patient_birth_date),
         patient_sex = COALESCE(EXCLUDED.patient_sex, patients.patient_sex),
         updated_at = now()
       WHERE (CASE WHEN EXCLUDED.patient_name <> '' THEN EXCLUDED.patient_name ELSE patients.patient_name END,
              COALESCE(EXCLUDED.patient_birth_date, patients.patient_birth_date),
              COALESCE(EXCLUDED.patient_sex, patients.patient_sex))
         IS DISTINCT FROM (patients.patient_name, patients.patient_birth_date, patients.patient_sex)
       RETURNING id`,
      params,
    );
    if (changed) return changed.id;
    const [existing] = await m.query(`SELECT id FROM patients WHERE tenant_id = $1 AND patient_id = $2`, params.slice(0, 2));
    return existing.id;
  }

  /** A study that left quarantine leaves no empty quarantine patient behind. */
  private async dropOrphanQuarantinePatient(m: EntityManager, patientUuid: string): Promise<void> {
    const quarantine = await this.quarantinePlacement();
    await m.query(
      `DELETE FROM patients p WHERE p.id = $1 AND p.tenant_id = $2
         AND NOT EXISTS (SELECT 1 FROM studies s WHERE s.patient_uuid = p.id)`,
      [patientUuid, quarantine.tenant_id],
    );
  }

  /**
   * Rows / Columns / SliceThickness already stored for the study's instances, by imgsrv instance id.
   * An instance's id is derived from its UIDs, so what was read once does not need reading again.
   */
  async knownGeometry(studyId: string): Promise<Map<string, ImageGeometry>> {
    const rows: Array<{
      imgsrv_instance_id: string;
      rows: number | null;
      columns: number | null;
      slice_thickness: number | null;
    }> = await this.db.query(
      `SELECT i.imgsrv_instance_id, i.rows, i.columns, i.slice_thickness
         FROM instances i JOIN series s ON s.id = i.series_id WHERE s.study_id = $1`,
      [studyId],
    );
    return new Map(
      rows.map((r) => [r.imgsrv_instance_id, { rows: r.rows, columns: r.columns, sliceThickness: r.slice_thickness }]),
    );
  }

  async findStudy(imgsrvStudyId: string): Promise<{ id: string; study_instance_uid: string } | null> {
    const [row] = await this.db.query(`SELECT id, study_instance_uid FROM studies WHERE imgsrv_study_id = $1`, [imgsrvStudyId]);
    return row ?? null;
  }

  /**
   * Writes everything the index job gathered in one transaction, so a study is either as before or
   * complete: series and instances upserted (rows only rewritten when they changed), those the image
   * server no longer holds deleted, `modalities`, thumbnails, and the sync marker. Nothing is
   * written when the study row does not exist, or when `superseded` says, under the study's lock,
   * that a later run read the image server after this one (IngestionQueue.startIndexRun).
   */
  async saveIndex(write: IndexWrite, superseded: () => Promise<boolean>): Promise<'written' | 'unknown-study' | 'superseded'> {
    return this.db.transaction(async (m) => {
      await this.lockStudy(m, write.imgsrvStudyId);
      const [study] = await m.query(`SELECT id FROM studies WHERE imgsrv_study_id = $1`, [write.imgsrvStudyId]);
      if (!study) return 'unknown-study';
      if (await superseded()) return 'superseded';
      const studyId: string = study.id;

      const seriesIds = await this.upsertSeries(m, studyId, write.series);
      await m.query(`DELETE FROM series WHERE study_id = $1 AND NOT (imgsrv_series_id = ANY($2::varchar[]))`, [
        studyId,
        write.series.map((s) => s.imgsrv_series_id),
      ]);
      for (let start = 0; start < write.instances.length; start += INSTANCE_BATCH) {
        await this.upsertInstances(m, seriesIds, write.instances.slice(start, start + INSTANCE_BATCH));
      }
      await m.query(
        `DELETE FROM instances i USING series s
         WHERE i.series_id = s.id AND s.study_id = $1 AND NOT (i.imgsrv_instance_id = ANY($2::varchar[]))`,
        [studyId, write.instances.map((i) => i.imgsrv_instance_id)],
      );
      await m.query(
        `UPDATE studies SET modalities = $2::text[], updated_at = now()
         WHERE id = $1 AND modalities IS DISTINCT FROM $2::text[]`,
        [studyId, write.modalities],
      );

      if (write.studyThumbnail) {
        await m.query(
          `INSERT INTO thumbnails (study_id, series_id, content_type, data) VALUES ($1, NULL, 'image/jpeg', $2)
           ON CONFLICT (study_id) WHERE series_id IS NULL
           DO UPDATE SET data = EXCLUDED.data, content_type = EXCLUDED.content_type, updated_at = now()`,
          [studyId, write.studyThumbnail],
        );
      }
      for (const [imgsrvSeriesId, data] of write.seriesThumbnails) {
        const seriesId = seriesIds.get(imgsrvSeriesId);
        if (!seriesId) continue;
        await m.query(
          `INSERT INTO thumbnails (study_id, series_id, content_type, data) VALUES ($1, $2, 'image/jpeg', $3)
           ON CONFLICT (series_id) WHERE series_id IS NOT NULL
           DO UPDATE SET study_id = EXCLUDED.study_id, data = EXCLUDED.data, content_type = EXCLUDED.content_type,
             updated_at = now()`,
          [studyId, seriesId, data],
        );
      }

      await m.query(
        `INSERT INTO imgsrv_study_sync (imgsrv_study_id, indexed_seq, last_update, indexed_at) VALUES ($1, $2, $3, now())
         ON CONFLICT (imgsrv_study_id) DO UPDATE SET
           indexed_seq = GREATEST(COALESCE(imgsrv_study_sync.indexed_seq, 0), EXCLUDED.indexed_seq),
           last_update = EXCLUDED.last_update,
           indexed_at = now()`,
        [write.imgsrvStudyId, write.changeSeq, write.lastUpdate],
      );
      return 'written';
    });
  }

  /** Returns imgsrv_series_id -> series.id for every series of the study after the upsert. */
  private async upsertSeries(m: EntityManager, studyId: string, series: IndexedSeries[]): Promise<Map<string, string>> {
    if (series.length > 0) {
      await m.query(
        `INSERT INTO series (study_id, imgsrv_series_id, series_instance_uid, modality, series_number, manufacturer, instance_count)
         SELECT $1::uuid, * FROM unnest($2::varchar[], $3::varchar[], $4::varchar[], $5::int[], $6::varchar[], $7::int[])
         ON CONFLICT (imgsrv_series_id) DO UPDATE SET
           study_id = EXCLUDED.study_id,
           series_instance_uid = EXCLUDED.series_instance_uid,
           modality = EXCLUDED.modality,
           series_number = EXCLUDED.series_number,
           manufacturer = EXCLUDED.manufacturer,
           instance_count = EXCLUDED.instance_count,
           updated_at = now()
         WHERE (series.study_id, series.series_instance_uid, series.modality, series.series_number, series.manufacturer,
                series.instance_count)
           IS DISTINCT FROM (EXCLUDED.study_id, EXCLUDED.series_instance_uid, EXCLUDED.modality, EXCLUDED.series_number,
                EXCLUDED.manufacturer, EXCLUDED.instance_count)`,
        [
          studyId,
          series.map((s) => s.imgsrv_series_id),
          series.map((s) => s.series_instance_uid),
          series.map((s) => s.modality),
          series.map((s) => s.series_number),
          series.map((s) => s.manufacturer),
          series.map((s) => s.instance_count),
        ],
      );
    }
    const rows: Array<{ id: string; imgsrv_series_id: string }> = await m.query(
      `SELECT id, imgsrv_series_id FROM series WHERE study_id = $1`,
      [studyId],
    );
    return new Map(rows.map((r) => [r.imgsrv_series_id, r.id]));
  }

  private async upsertInstances(m: EntityManager, seriesIds: Map<string, string>, batch: IndexedInstance[]): Promise<void> {
    const rows = batch.filter((i) => seriesIds.has(i.imgsrv_series_id));
    if (rows.length === 0) return;
    await m.query(
      `INSERT INTO instances (series_id, imgsrv_instance_id, sop_instance_uid, instance_number, rows, columns, slice_thickness)
       SELECT * FROM unnest($1::uuid[], $2::varchar[], $3::varchar[], $4::int[], $5::int[], $6::int[], $7::float8[])
       ON CONFLICT (imgsrv_instance_id) DO UPDATE SET
         series_id = EXCLUDED.series_id,
         sop_instance_uid = EXCLUDED.sop_instance_uid,
         instance_number = EXCLUDED.instance_number,
         rows = EXCLUDED.rows,
         columns = EXCLUDED.columns,
         slice_thickness = EXCLUDED.slice_thickness,
         updated_at = now()
       WHERE (instances.series_id, instances.sop_instance_uid, instances.instance_number, instances.rows,
              instances.columns, instances.slice_thickness)
         IS DISTINCT FROM (EXCLUDED.series_id, EXCLUDED.sop_instance_uid, EXCLUDED.instance_number, EXCLUDED.rows,
              EXCLUDED.columns, EXCLUDED.slice_thickness)`,
      [
        rows.map((i) => seriesIds.get(i.imgsrv_series_id)),
        rows.map((i) => i.imgsrv_instance_id),
        rows.map((i) => i.sop_instance_uid),
        rows.map((i) => i.instance_number),
        rows.map((i) => i.rows),
        rows.map((i) => i.columns),
        rows.map((i) => i.slice_thickness),
      ],
    );
  }

  /** Serialises the writers of one study across jobs and worker processes (released at commit). */
  private async lockStudy(m: EntityManager, imgsrvStudyId: string): Promise<void> {
    await m.query(`SELECT pg_advisory_xact_lock($1, hashtext($2))`, [STUDY_LOCK_NAMESPACE, imgsrvStudyId]);
  }

  /** Sync markers of the given studies (absent: never ingested). */
  async syncMarkers(imgsrvStudyIds: string[]): Promise<Map<string, StudySyncMarker>> {
    if (imgsrvStudyIds.length === 0) return new Map();
    const rows: Array<{ imgsrv_study_id: string; indexed_seq: string | null; last_update: string | null }> =
      await this.db.query(
        `SELECT imgsrv_study_id, indexed_seq, last_update FROM imgsrv_study_sync WHERE imgsrv_study_id = ANY($1::varchar[])`,
        [imgsrvStudyIds],
      );
    return new Map(
      rows.map((r) => [
        r.imgsrv_study_id,
        { indexed_seq: r.indexed_seq === null ? null : Number(r.indexed_seq), last_update: r.last_update },
      ]),
    );
  }

  /**
   * Quarantined studies whose device (AE title and address) has been registered since: they can move
   * to its tenant. Also those whose address was never read (NULL, kept before addresses were): their
   * job reads it, once. A device registered in the quarantine tenant itself releases nothing: its
   * studies would stay where they are, queued again at every run. The senders are few, so they are
   * matched in code, by the one address rule (sameAddress: spellings differ, e.g. `::ffff:10.0.0.5`
   * for `10.0.0.5`), then their studies read.
   */
  async quarantinedWithRegisteredDevice(limit: number): Promise<string[]> {
    const quarantine = await this.quarantinePlacement();
    const senders: Array<{ remote_aet: string; remote_ip: string | null; ip_address: string }> = await this.db.query(
      `SELECT DISTINCT y.remote_aet, y.remote_ip, m.ip_address FROM studies s
       JOIN imgsrv_study_sync y ON y.imgsrv_study_id = s.imgsrv_study_id
       JOIN modalities m ON m.aet = y.remote_aet AND m.tenant_id <> $1
       WHERE s.tenant_id = $1`,
      [quarantine.tenant_id],
    );
    const released = senders.filter((r) => r.remote_ip === null || sameAddress(r.remote_ip, r.ip_address));
    if (released.length === 0) return [];
    const rows: Array<{ imgsrv_study_id: string }> = await this.db.query(
      `SELECT s.imgsrv_study_id FROM studies s
       JOIN imgsrv_study_sync y ON y.imgsrv_study_id = s.imgsrv_study_id
       JOIN unnest($2::varchar[], $3::varchar[]) AS d(aet, ip) ON d.aet = y.remote_aet AND d.ip IS NOT DISTINCT FROM y.remote_ip
       WHERE s.tenant_id = $1 AND length(s.study_instance_uid) <= $5
       ORDER BY s.created_at
       LIMIT $4`,
      [quarantine.tenant_id, released.map((r) => r.remote_aet), released.map((r) => r.remote_ip), limit, MAX_UID_LENGTH],
    );
    return rows.map((r) => r.imgsrv_study_id);
  }

  async getSyncState(key: string): Promise<string | null> {
    const [row] = await this.db.query(`SELECT value FROM imgsrv_sync_state WHERE key = $1`, [key]);
    return row?.value ?? null;
  }

  async setSyncState(key: string, value: string): Promise<void> {
    await this.db.query(
      `INSERT INTO imgsrv_sync_state (key, value, updated_at) VALUES ($1, $2, now())
       ON CONFLICT (key) DO UPDATE SET value = EXCLUDED.value, updated_at = now()`,
      [key, value],
    );
  }

  /** Runs `work` only if no other process holds the named lock right now; null when skipped. */
  async exclusively<T>(lockKey: number, work: () => Promise<T>): Promise<T | null> {
    const runner = this.db.createQueryRunner();
    await runner.connect();
    try {
      const [{ locked }] = await runner.query(`SELECT pg_try_advisory_lock($1, 0) AS locked`, [lockKey]);
      if (!locked) return null;
      try {
        return await work();
      } finally {
        await runner.query(`SELECT pg_advisory_unlock($1, 0)`, [lockKey]);
      }
    } finally {
      await runner.release();
    }
  }
}
