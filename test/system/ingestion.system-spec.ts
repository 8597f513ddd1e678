/**
 * Ingestion end to end: devices (storescu) send generated studies to the real Orthanc configured
 * from docker/orthanc (StableAge 2 s), whose shipped Lua hook calls the API's webhook on a real port;
 * two in-process workers run the jobs against that Orthanc. Assertions are on PostgreSQL and on the
 * API.
 */
import { getQueueToken } from '@nestjs/bull';
import { Test, TestingModule } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { Job, Queue } from 'bull';
import { execFile } from 'child_process';
import { randomBytes } from 'crypto';
import { promises as fs } from 'fs';
import * as os from 'os';
import * as path from 'path';
import sharp from 'sharp';
import { DataSource } from 'typeorm';
import { INDEX_QUEUE, STUDY_QUEUE } from '../../src/common/queues/queues.module';
import { APP_CONFIG } from '../../src/config/config.module';
import { AppConfig } from '../../src/config/environment';
import { ArchiveImportModule } from '../../src/cli/archive-import';
import { ArchiveImportService } from '../../src/ingestion/archive-import.service';
import { TestApp } from '../support/app';
import { sendWithStorescu, writeNonImageStudy, writeStudy, WrittenStudy } from '../../scripts/stack/dicom';
import { createTenant, createUnit, createUser, login } from '../support/factories';
import { basicAuth, OrthancInstance, waitFor } from '../../scripts/stack/orthanc';
import { startOrthancAndApi, startWorkerModule } from '../support/stack';

jest.setTimeout(90_000);

const suffix = randomBytes(3).toString('hex').toUpperCase();
const DEVICE_AET = `CT_${suffix}`;
const UNKNOWN_AET = `UNREG_${suffix}`;
const LATE_AET = `LATE_${suffix}`;

describe('Ingestion against a real Orthanc', () => {
  let workDir: string;
  let orthanc: OrthancInstance;
  let t: TestApp;
  let apiUrl: string;
  let config: AppConfig;
  let db: DataSource;
  let workers: TestingModule[] = [];
  let tenant: { id: string };
  let unit: { id: string };
  let quarantine: { tenant_id: string; unit_id: string };
  let userToken: string;

  async function startWorker(): Promise<TestingModule> {
    const moduleRef = await startWorkerModule(config);
    workers.push(moduleRef);
    return moduleRef;
  }

  const queueOf = (name: string): Queue => workers[0].get<Queue>(getQueueToken(name));

  const orthancFetch = (pathAndQuery: string, init: RequestInit = {}) =>
    fetch(`${orthanc.url}${pathAndQuery}`, {
      ...init,
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password), ...(init.headers ?? {}) },
    });

  async function lookupStudy(studyInstanceUid: string): Promise<string> {
    const response = await orthancFetch('/tools/lookup', { method: 'POST', body: studyInstanceUid });
    const found = (await response.json()) as Array<{ ID: string; Type: string }>;
    const hit = found.find((entry) => entry.Type === 'Study');
    if (!hit) throw new Error(`study ${studyInstanceUid} not in Orthanc`);
    return hit.ID;
  }

  async function send(study: WrittenStudy, aet: string): Promise<string> {
    await sendWithStorescu(study.files, { aet, port: orthanc.dicomPort });
    return lookupStudy(study.studyInstanceUid);
  }

  interface Snapshot {
    study: Record<string, any>;
    series: Array<Record<string, any>>;
    instances: Array<Record<string, any>>;
    thumbnails: Array<{ series_id: string | null; content_type: string; data: Buffer }>;
    indexedAt: Date | null;
  }

  async function snapshot(imgsrvStudyId: string, database = db): Promise<Snapshot | null> {
    const [study] = await database.query(
      `SELECT s.*, to_char(s.study_date, 'YYYY-MM-DD') AS study_date_text,
              to_char(s.patient_birth_date, 'YYYY-MM-DD') AS birth_date_text, y.indexed_at
       FROM studies s LEFT JOIN imgsrv_study_sync y ON y.imgsrv_study_id = s.imgsrv_study_id
       WHERE s.imgsrv_study_id = $1`,
      [imgsrvStudyId],
    );
    if (!study) return null;
    const series = await database.query(`SELECT * FROM series WHERE study_id = $1 ORDER BY series_number`, [study.id]);
    const instances = await database.query(
      `SELECT i.*, s.series_number FROM instances i JOIN series s ON s.id = i.series_id
       WHERE s.study_id = $1 ORDER BY s.series_number, i.instance_number`,
      [study.id],
    );
    const thumbnails = await database.query(`SELECT series_id, content_type, data FROM thumbnails WHERE study_id = $1`, [
      study.id,
    ]);
    return { study, series, instances, thumbnails, indexedAt: study.indexed_at };
  }

  /** Until the study is indexed with `instances` instances, after `after` when given (a re-index). */
  function indexed(imgsrvStudyId: string, instances: number, after?: Date | null, database = db, timeoutMs = 30_000) {
    return waitFor(
      `study ${imgsrvStudyId} indexed with ${instances} instances`,
      async () => {
        const found = await snapshot(imgsrvStudyId, database);
        if (!found?.indexedAt || found.instances.length !== instances) return null;
        if (after && found.indexedAt.getTime() <= after.getTime()) return null;
        return found;
      },
      timeoutMs,
    );
  }

  /** Until no job of the study is waiting, delayed or running in either queue. */
  async function settled(imgsrvStudyId: string): Promise<void> {
    await waitFor(`the queues to settle for ${imgsrvStudyId}`, async () => {
      for (const name of [STUDY_QUEUE, INDEX_QUEUE]) {
        const jobs = await queueOf(name).getJobs(['waiting', 'active', 'delayed']);
        if (jobs.some((job) => job?.data?.imgsrvStudyId === imgsrvStudyId)) return false;
      }
      return true;
    });
  }

  const webhook = (id: string) =>
    fetch(`${apiUrl}/api/imgsrv/webhook`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-webhook-secret': config.WEBHOOK_SECRET },
      body: JSON.stringify({ ID: id }),
    });

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-ingest-'));
    ({ t, orthanc, apiUrl } = await startOrthancAndApi({
      stableAge: 2,
      env: {
        RECONCILE_INTERVAL: '1',
        WORKER_CONCURRENCY: '2',
        // Queues of its own: no other test file's worker takes these jobs.
        QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}:ingest`,
      },
    }));
    config = t.config;
    db = t.db;
    // Two workers, as two processes would be: jobs of one study must never collide.
    await startWorker();
    await startWorker();

    tenant = await createTenant(db);
    unit = await createUnit(db, tenant.id);
    [quarantine] = await db.query(
      `SELECT t.id AS tenant_id, u.id AS unit_id FROM tenants t JOIN units u ON u.tenant_id = t.id WHERE t.slug = 'quarantine'`,
    );
    await db.query(`INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, '127.0.0.1')`, [
      tenant.id,
      unit.id,
      `CT ${suffix}`,
      DEVICE_AET,
    ]);
    const user = await createUser(db, { tenant_id: tenant.id, unit_id: unit.id });
    userToken = await login(t.http, user.email);
  }, 90_000);

  afterAll(async () => {
    for (const worker of workers) await worker.close().catch(() => undefined);
    await t?.close().catch(() => undefined);
    await orthanc?.destroy();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  });

  let ctStudy: WrittenStudy;
  let ctId: string;
  const patientId = `PAT-${suffix}`;

  it('indexes a study sent from a registered device: fields, series, instances, patient, thumbnails', async () => {
    ctStudy = await writeStudy(path.join(workDir, 'ct'), {
      patientId,
      patientName: 'DOE^JANE',
      patientBirthDate: '19800214',
      patientSex: 'F',
      accessionNumber: `ACC-${suffix}`,
      studyDate: '20240115',
      studyDescription: 'CT chest',
      series: [
        { modality: 'CT', seriesNumber: 1, manufacturer: 'ACME', instances: 3, rows: 192, columns: 256, sliceThickness: 1.25 },
        { modality: 'CT', seriesNumber: 2, manufacturer: 'ACME', instances: 2, rows: 32, columns: 32, sliceThickness: 5 },
      ],
    });
    ctId = await send(ctStudy, DEVICE_AET.toLowerCase());
    const found = await indexed(ctId, 5);

    expect(found.study).toMatchObject({
      tenant_id: tenant.id,
      unit_id: unit.id,
      study_instance_uid: ctStudy.studyInstanceUid,
      patient_id: patientId,
      patient_name: 'DOE^JANE',
      patient_sex: 'F',
      accession_number: `ACC-${suffix}`,
      study_description: 'CT chest',
      modalities: ['CT'],
      report_status: 'pending',
      study_date_text: '2024-01-15',
      birth_date_text: '1980-02-14',
    });
    expect(found.series.map((s) => [s.series_number, s.modality, s.manufacturer, s.instance_count])).toEqual([
      [1, 'CT', 'ACME', 3],
      [2, 'CT', 'ACME', 2],
    ]);
    expect(found.series.map((s) => s.series_instance_uid)).toEqual(ctStudy.seriesUids);
    expect(found.instances.map((i) => [i.series_number, i.instance_number, i.rows, i.columns, i.slice_thickness])).toEqual([
      [1, 1, 192, 256, 1.25],
      [1, 2, 192, 256, 1.25],
      [1, 3, 192, 256, 1.25],
      [2, 1, 32, 32, 5],
      [2, 2, 32, 32, 5],
    ]);
    expect(new Set(found.instances.map((i) => i.sop_instance_uid))).toEqual(new Set(ctStudy.sopInstanceUids));

    const [patient] = await db.query(`SELECT * FROM patients WHERE id = $1`, [found.study.patient_uuid]);
    expect(patient).toMatchObject({ tenant_id: tenant.id, patient_id: patientId, patient_name: 'DOE^JANE', patient_sex: 'F' });

    // One study thumbnail and one per series, all 300x300 JPEGs.
    expect(found.thumbnails).toHaveLength(3);
    for (const thumbnail of found.thumbnails) {
      expect(thumbnail.content_type).toBe('image/jpeg');
      const meta = await sharp(thumbnail.data).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', 300, 300]);
    }
    // The study's is the first series' (its middle instance), letterboxed: 256x192 leaves bars above and below.
    const studyThumb = found.thumbnails.find((th) => th.series_id === null)!;
    const firstSeriesThumb = found.thumbnails.find((th) => th.series_id === found.series[0].id)!;
    expect(studyThumb.data.equals(firstSeriesThumb.data)).toBe(true);
    const { data } = await sharp(studyThumb.data).greyscale().raw().toBuffer({ resolveWithObject: true });
    expect(data[5 * 300 + 150]).toBeLessThan(16);
    expect(data[294 * 300 + 150]).toBeLessThan(16);

    // What the API serves from it.
    const detail = await t.http.get(`/api/studies/${found.study.id}`, { token: userToken });
    expect(detail.status).toBe(200);
    expect(detail.body).toMatchObject({ modalities: ['CT'], study_date: '2024-01-15', patient: { patient_id: patientId } });
    const thumb = await t.http.get(`/api/studies/${found.study.id}/thumbnail`, { token: userToken });
    expect(thumb.status).toBe(200);
    expect(thumb.headers['content-type']).toBe('image/jpeg');
  });

  it('creates the patient once for two studies of the same patient', async () => {
    const second = await writeStudy(path.join(workDir, 'mr'), {
      patientId,
      patientName: 'DOE^JANE',
      patientBirthDate: '19800214',
      patientSex: 'F',
      studyDate: '20240301',
      series: [{ modality: 'MR', seriesNumber: 1, instances: 1, rows: 64, columns: 64 }],
    });
    const id = await send(second, DEVICE_AET);
    const found = await indexed(id, 1);
    const first = await snapshot(ctId);
    expect(found.study.patient_uuid).toBe(first!.study.patient_uuid);
    expect(found.study.modalities).toEqual(['MR']);
    const patients = await db.query(`SELECT id FROM patients WHERE tenant_id = $1 AND patient_id = $2`, [tenant.id, patientId]);
    expect(patients).toHaveLength(1);
  });

  it('quarantines a study from an unknown AE title and moves it once that device is registered', async () => {
    const written = await writeStudy(path.join(workDir, 'unknown'), {
      patientId: `Q-${suffix}`,
      patientName: 'ROE^RICHARD',
      patientSex: 'O',
      studyDate: '20231301',
      series: [{ modality: 'CR', seriesNumber: 1, instances: 1, rows: 48, columns: 40 }],
    });
    const id = await send(written, UNKNOWN_AET);
    const held = await indexed(id, 1);
    expect(held.study).toMatchObject({ tenant_id: quarantine.tenant_id, unit_id: quarantine.unit_id, patient_sex: null });
    // An impossible study date falls back to the day of ingestion.
    const [{ today }] = await db.query(`SELECT to_char(now(), 'YYYY-MM-DD') AS today`);
    expect(held.study.study_date_text).toBe(today);
    const [heldPatient] = await db.query(`SELECT tenant_id FROM patients WHERE id = $1`, [held.study.patient_uuid]);
    expect(heldPatient.tenant_id).toBe(quarantine.tenant_id);
    const hidden = await t.http.get(`/api/studies/${held.study.id}`, { token: userToken });
    expect(hidden.status).toBe(404);
    // As if it had come in yesterday: the next run must keep that day, not take its own.
    await db.query(`UPDATE studies SET study_date = study_date - 1 WHERE id = $1`, [held.study.id]);
    const [{ yesterday }] = await db.query(`SELECT to_char(study_date, 'YYYY-MM-DD') AS yesterday FROM studies WHERE id = $1`, [
      held.study.id,
    ]);

    // The device gets registered: the reconciliation job (every second here) releases the study.
    await db.query(`INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, '127.0.0.1')`, [
      tenant.id,
      unit.id,
      `Late ${suffix}`,
      UNKNOWN_AET,
    ]);
    const moved = await waitFor('the study to leave quarantine', async () => {
      const now = await snapshot(id);
      return now?.study.tenant_id === tenant.id ? now : null;
    });
    expect(moved.study.unit_id).toBe(unit.id);
    expect(moved.study.id).toBe(held.study.id);
    expect(moved.study.study_date_text).toBe(yesterday);
    const [patient] = await db.query(`SELECT tenant_id, patient_id FROM patients WHERE id = $1`, [moved.study.patient_uuid]);
    expect(patient).toEqual({ tenant_id: tenant.id, patient_id: `Q-${suffix}` });
    expect(await db.query(`SELECT id FROM patients WHERE id = $1`, [held.study.patient_uuid])).toHaveLength(0);
    expect((await t.http.get(`/api/studies/${held.study.id}`, { token: userToken })).status).toBe(200);
  });

  it('duplicates nothing when the same study is sent again', async () => {
    const before = (await snapshot(ctId))!;
    await send(ctStudy, DEVICE_AET);
    const after = await indexed(ctId, 5, before.indexedAt);
    expect(after.study.id).toBe(before.study.id);
    expect(after.study.report_status).toBe('pending');
    expect(after.series.map((s) => s.id)).toEqual(before.series.map((s) => s.id));
    expect(after.instances.map((i) => i.id).sort()).toEqual(before.instances.map((i) => i.id).sort());
    expect(after.thumbnails).toHaveLength(3);
    const [{ count }] = await db.query(`SELECT count(*)::int AS count FROM studies WHERE study_instance_uid = $1`, [
      ctStudy.studyInstanceUid,
    ]);
    expect(count).toBe(1);
    // Rows/Columns/SliceThickness of known instances are not read from Orthanc again.
    await settled(ctId);
    const indexJobs = (await queueOf(INDEX_QUEUE).getJobs(['completed'])).filter((job) => job?.data?.imgsrvStudyId === ctId);
    const latest = indexJobs.sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0))[0];
    expect(latest.returnvalue).toMatchObject({
      outcome: 'indexed',
      instances: 5,
      thumbnails: 3,
      geometryCalls: { qido: 0, perInstance: 0 },
    });
  });

  it('runs a study once per webhook, and at most twice for 10 simultaneous webhooks, duplicating nothing', async () => {
    await settled(ctId);
    const runs = async (queueName: string) =>
      (await queueOf(queueName).getJobs(['completed'])).filter((job) => job?.data?.imgsrvStudyId === ctId).length;
    const single = (await snapshot(ctId))!;
    const [studyRuns, indexRuns] = [await runs(STUDY_QUEUE), await runs(INDEX_QUEUE)];
    expect((await webhook(ctId)).status).toBe(200);
    await indexed(ctId, 5, single.indexedAt);
    await settled(ctId);
    // Idle workers take the job at once: that must not read as "already started" and run it again.
    expect([(await runs(STUDY_QUEUE)) - studyRuns, (await runs(INDEX_QUEUE)) - indexRuns]).toEqual([1, 1]);

    const before = (await snapshot(ctId))!;
    const burstRuns = await runs(STUDY_QUEUE);
    const answers = await Promise.all(Array.from({ length: 10 }, () => webhook(ctId)));
    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    await indexed(ctId, 5, before.indexedAt);
    await settled(ctId);
    // One run, plus one more when some of the burst arrived after that run had started.
    expect((await runs(STUDY_QUEUE)) - burstRuns).toBeGreaterThanOrEqual(1);
    expect((await runs(STUDY_QUEUE)) - burstRuns).toBeLessThanOrEqual(2);
    const after = (await snapshot(ctId))!;
    expect(after.series).toHaveLength(2);
    expect(after.instances).toHaveLength(5);
    expect(after.thumbnails).toHaveLength(3);
    expect(after.instances.map((i) => i.id).sort()).toEqual(before.instances.map((i) => i.id).sort());
    const patients = await db.query(`SELECT id FROM patients WHERE tenant_id = $1 AND patient_id = $2`, [tenant.id, patientId]);
    expect(patients).toHaveLength(1);
  });

  it('reads the geometry of a series larger than one QIDO-RS page in pages that miss and repeat no instance', async () => {
    // 260 instances: two pages of 130, read side by side; a gap or an overlap between pages
    // would leave instances to the per-instance fallback (perInstance > 0).
    const big = await writeStudy(path.join(workDir, 'paged'), {
      patientId: `P-${suffix}`,
      patientName: 'PAGED^PAULA',
      series: [{ modality: 'CT', seriesNumber: 1, instances: 260, rows: 24, columns: 20, sliceThickness: 0.625 }],
    });
    const id = await send(big, DEVICE_AET);
    const found = await indexed(id, 260);
    expect(found.instances.map((i) => [i.instance_number, i.rows, i.columns, i.slice_thickness])).toEqual(
      Array.from({ length: 260 }, (_, k) => [k + 1, 24, 20, 0.625]),
    );
    await settled(id);
    const jobs = (await queueOf(INDEX_QUEUE).getJobs(['completed'])).filter((j) => j?.data?.imgsrvStudyId === id);
    const first = jobs.sort((a, b) => (a.finishedOn ?? 0) - (b.finishedOn ?? 0))[0];
    expect(first.returnvalue).toMatchObject({ outcome: 'indexed', instances: 260, geometryCalls: { qido: 2, perInstance: 0 } });
  });

  it('re-indexes a study that gains instances after its first stable event', async () => {
    const first = await writeStudy(path.join(workDir, 'late-1'), {
      patientId: `L-${suffix}`,
      patientName: 'LATE^LUCY',
      series: [{ modality: 'CT', seriesNumber: 1, instances: 2, rows: 32, columns: 32 }],
    });
    const id = await send(first, DEVICE_AET);
    const early = await indexed(id, 2);
    const more = await writeStudy(path.join(workDir, 'late-2'), {
      studyInstanceUid: first.studyInstanceUid,
      patientId: `L-${suffix}`,
      patientName: 'LATE^LUCY',
      series: [{ modality: 'SR', seriesNumber: 5, instances: 1, rows: 16, columns: 16 }],
    });
    expect(await send(more, DEVICE_AET)).toBe(id);
    const late = await indexed(id, 3, early.indexedAt);
    expect(late.study.id).toBe(early.study.id);
    expect(late.series.map((s) => [s.series_number, s.instance_count])).toEqual([
      [1, 2],
      [5, 1],
    ]);
    expect(late.study.modalities).toEqual(['CT', 'SR']);
    expect(late.instances.map((i) => [i.series_number, i.rows, i.columns])).toEqual([
      [1, 32, 32],
      [1, 32, 32],
      [5, 16, 16],
    ]);
    expect(late.thumbnails).toHaveLength(3);
  });

  it('archives studies without images (PDF, text SR) with their series and instances, without thumbnails', async () => {
    const pdf = await writeNonImageStudy(path.join(workDir, 'pdf'), {
      patientId: `D-${suffix}`,
      patientName: 'DOC^DORA',
      studyDate: '20240220',
    });
    const sr = await writeNonImageStudy(path.join(workDir, 'sr'), {
      patientId: `D-${suffix}`,
      patientName: 'DOC^DORA',
      kind: 'sr',
    });
    const pdfId = await send(pdf, DEVICE_AET);
    const srId = await send(sr, DEVICE_AET);
    for (const [id, modality] of [
      [pdfId, 'DOC'],
      [srId, 'SR'],
    ]) {
      const found = await indexed(id, 1);
      expect(found.study.modalities).toEqual([modality]);
      expect(found.series.map((s) => [s.modality, s.instance_count])).toEqual([[modality, 1]]);
      expect(found.instances.map((i) => [i.rows, i.columns])).toEqual([[null, null]]);
      expect(found.thumbnails).toHaveLength(0);
      const thumbnail = await t.http.get(`/api/studies/${found.study.id}/thumbnail`, { token: userToken });
      expect(thumbnail.status).toBe(404);
      expect(thumbnail.body).toEqual({ message: 'Thumbnail not ready' });
    }
  });

  it("makes no thumbnail of an image whose attributes would take the image server's decoder where it is unsafe", async () => {
    const written = await writeStudy(path.join(workDir, 'crafted'), {
      patientId: `C-${suffix}`,
      patientName: 'CRAFT^CARA',
      series: [
        { modality: 'CT', seriesNumber: 1, instances: 1 },
        // Rows and Columns as UL, which Orthanc 1.10's frame-size arithmetic overflows on (CVE-2026-5442).
        { modality: 'CT', seriesNumber: 2, instances: 1, dimensionsVr: 'UL' },
        { modality: 'CT', seriesNumber: 3, instances: 1, photometric: 'PALETTE COLOR' },
      ],
    });
    const id = await send(written, DEVICE_AET);
    const found = await indexed(id, 3);
    await settled(id);
    // What the guard reads is what the file says: the image server's WADO-RS metadata gives UL.
    const metadata = await fetch(
      `${orthanc.url}/dicom-web/studies/${written.studyInstanceUid}/series/${written.seriesUids[1]}/instances/${written.sopInstanceUids[1]}/metadata`,
      { headers: { Authorization: basicAuth(orthanc.username, orthanc.password), Accept: 'application/dicom+json' } },
    );
    expect((await metadata.json())[0]['00280010']).toEqual({ vr: 'UL', Value: [128] });
    const bySeriesNumber = new Map(found.series.map((s) => [s.series_number, s.id]));
    expect(found.thumbnails.map((th) => th.series_id).sort()).toEqual([null, bySeriesNumber.get(1)].sort());
    expect(found.instances.map((i) => i.rows)).toEqual([128, 128, 128]);
    // A reader's rendering through the API is refused the same way, where the image server itself
    // would decode it (it renders the UL one); the normal image renders.
    const [normal, ul, palette] = found.instances;
    const direct = await fetch(`${orthanc.url}/instances/${ul.imgsrv_instance_id}/rendered`, {
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password), Accept: 'image/jpeg' },
    });
    expect(direct.status).toBe(200);
    const rendered = async (instance: Record<string, string>) => {
      const res = await t.http.get(`/api/studies/${found.study.id}/instances/${instance.id}/rendered`, { token: userToken });
      return { status: res.status, body: res.status === 200 ? res.headers['content-type'] : res.body };
    };
    expect(await rendered(normal)).toEqual({ status: 200, body: 'image/jpeg' });
    expect(await rendered(ul)).toEqual({ status: 404, body: { message: 'Image not available' } });
    expect(await rendered(palette)).toEqual({ status: 404, body: { message: 'Image not available' } });
  });

  it('lets a running index job finish when its worker shuts down, leaving the study complete', async () => {
    const written = await writeStudy(path.join(workDir, 'shutdown'), {
      patientId: `S-${suffix}`,
      patientName: 'STOP^SAM',
      series: [
        { modality: 'CT', seriesNumber: 1, instances: 12, rows: 128, columns: 128 },
        { modality: 'CT', seriesNumber: 2, instances: 12, rows: 128, columns: 128 },
      ],
    });
    // Whichever worker starts indexing this study is told to stop right then.
    let id = '';
    let closing: Promise<void> | undefined;
    let stopped: TestingModule | undefined;
    for (const worker of workers) {
      worker.get<Queue>(getQueueToken(INDEX_QUEUE)).on('active', (job: Job) => {
        if (!closing && job.data.imgsrvStudyId === id) {
          stopped = worker;
          closing = worker.close();
        }
      });
    }
    id = await send(written, DEVICE_AET);
    await waitFor('a worker to start indexing', async () => stopped);
    await closing;
    // The worker closed only after its job was done: the study is complete.
    const done = await snapshot(id);
    expect(done?.instances).toHaveLength(24);
    expect(done?.thumbnails).toHaveLength(3);
    workers = workers.filter((w) => w !== stopped);
    await startWorker();
  });

  it('retries jobs while the image server is down and keeps a job that ran out of attempts as failed, re-runnable', async () => {
    const before = (await snapshot(ctId))!;
    // Forget the study, so that only the job below can bring it back.
    await db.query(`DELETE FROM studies WHERE imgsrv_study_id = $1`, [ctId]);
    await orthanc.stop();

    const studyQueue = queueOf(STUDY_QUEUE);
    const manual = await studyQueue.add(
      'study',
      { imgsrvStudyId: ctId, source: 'webhook' },
      { jobId: `manual-${suffix}`, attempts: 1 },
    );
    await waitFor('the single-attempt job to fail', async () => (await manual.getState()) === 'failed');
    expect((await studyQueue.getJob(manual.id))!.failedReason).toMatch(/ECONNREFUSED|image server/);

    const answer = await webhook(ctId);
    expect(answer.status).toBe(200);
    const retrying = await waitFor('the webhook job to fail once and wait for its retry', async () => {
      const jobs = await studyQueue.getJobs(['delayed']);
      return jobs.find((job) => job?.data?.imgsrvStudyId === ctId && job.data.source === 'webhook' && job.attemptsMade >= 1);
    });
    expect(await retrying.getState()).toBe('delayed');

    await orthanc.start();
    const back = await indexed(ctId, 5, undefined, db, 60_000);
    expect(back.study.id).not.toBe(before.study.id);
    expect(back.study.tenant_id).toBe(tenant.id);
    expect(back.thumbnails).toHaveLength(3);
    const finished = (await studyQueue.getJob(retrying.id!))!;
    await waitFor('the retried job to complete', async () => (await finished.getState()) === 'completed');

    // The failed job stays visible and can be run again by hand.
    expect(await manual.getState()).toBe('failed');
    await manual.retry();
    await waitFor('the re-run job to complete', async () => (await manual.getState()) === 'completed');
    expect((await studyQueue.getJob(manual.id))!.returnvalue).toMatchObject({ outcome: 'saved', quarantined: false });
  });

  it('imports every study the image server holds, once: the CLI queues what is missing and is safe to run again', async () => {
    await settled(ctId);
    const [{ count: studiesOnServer }] = [{ count: ((await (await orthancFetch('/studies')).json()) as string[]).length }];
    // One study the service has never heard of (its rows deleted), the rest up to date.
    await db.query(`DELETE FROM studies WHERE imgsrv_study_id = $1`, [ctId]);

    const run = await runCli(['import'], config);
    expect(run.code).toBe(0);
    expect(run.stdout.trim()).toBe(
      `Import finished: ${studiesOnServer} studies on the image server; 1 queued for indexing, ${studiesOnServer - 1} already up to date.`,
    );
    const back = await indexed(ctId, 5);
    expect(back.thumbnails).toHaveLength(3);
    await settled(ctId);

    // Again, in process: nothing left to do; and --since leaves older studies out.
    const importer = await Test.createTestingModule({ imports: [ArchiveImportModule] })
      .overrideProvider(APP_CONFIG)
      .useValue(config)
      .compile();
    await importer.init();
    try {
      const again = await importer.get(ArchiveImportService).run();
      expect(again).toEqual({ total: studiesOnServer, seen: studiesOnServer, queued: 0, upToDate: studiesOnServer, older: 0 });
      const future = await importer.get(ArchiveImportService).run({ since: '2999-01-01' });
      expect(future).toMatchObject({ queued: 0, older: studiesOnServer });
    } finally {
      await importer.close();
    }
    const [{ count }] = await db.query(`SELECT count(*)::int AS count FROM studies WHERE imgsrv_study_id = $1`, [ctId]);
    expect(count).toBe(1);

    const invalid = await runCli(['import', '--since', '2024-02-30'], config);
    expect(invalid.code).toBe(1);
    expect(invalid.stderr).toContain('--since must be a date written YYYY-MM-DD');
  });

  it('indexes a study whose webhook was lost (the API went down after it came in), through the reconciliation of the change feed', async () => {
    const workerDb = workers[0].get<DataSource>(getDataSourceToken());
    const written = await writeStudy(path.join(workDir, 'offline'), {
      patientId: `O-${suffix}`,
      patientName: 'OFF^OLIVER',
      series: [{ modality: 'CT', seriesNumber: 1, instances: 2, rows: 32, columns: 32 }],
    });
    // The study's door is the API: it lets the study in, then stops before the study is stable (2 s).
    const id = await send(written, DEVICE_AET);
    await t.close();
    const found = await indexed(id, 2, undefined, workerDb);
    expect(found.study.tenant_id).toBe(tenant.id);
    expect(found.thumbnails).toHaveLength(2);
    // Orthanc could not deliver its webhook, so the study came from the change feed.
    const jobs = await queueOf(STUDY_QUEUE).getJobs(['completed']);
    const sources = jobs.filter((job) => job?.data?.imgsrvStudyId === id).map((job) => job.data.source);
    expect(sources).toContain('reconcile');
    expect(sources).not.toContain('webhook');
    expect(orthanc.log()).toMatch(new RegExp(`webhook\\.lua: POST .*(failed for|no successful answer for) study ${id}`));
    const [position] = await workerDb.query(`SELECT value FROM imgsrv_sync_state WHERE key = 'changes.last_seq'`);
    expect(Number(position.value)).toBeGreaterThan(0);
  });

  it("refuses what a device sends while the API (the study's door) is down: the device keeps it and sends again", async () => {
    // The API was closed by the test above.
    const written = await writeStudy(path.join(workDir, 'door-down'), {
      patientId: `DD-${suffix}`,
      patientName: 'DOWN^DORA',
      series: [{ modality: 'CT', seriesNumber: 1, instances: 1, rows: 32, columns: 32 }],
    });
    await expect(sendWithStorescu(written.files, { aet: DEVICE_AET, port: orthanc.dicomPort, verbose: true })).rejects.toThrow(
      'Received Store Response (Refused: OutOfResources)',
    );
    expect(orthanc.log()).toContain(
      `webhook.lua: refused instance ${written.sopInstanceUids[0]} of study ${written.studyInstanceUid}: the door`,
    );
  });
});

/** `npm run cli -- <args>` as an operator runs it, against this test's database, queues and Orthanc. */
function runCli(args: string[], config: AppConfig): Promise<{ code: number; stdout: string; stderr: string }> {
  const root = path.resolve(__dirname, '../..');
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [
        path.join(root, 'node_modules/ts-node/dist/bin.js'),
        '--transpile-only',
        '-P',
        path.join(root, 'tsconfig.json'),
        'src/cli.ts',
        ...args,
      ],
      {
        cwd: root,
        timeout: 60_000,
        env: {
          ...process.env,
          DATABASE_URL: config.DATABASE_URL,
          QUEUE_PREFIX: config.QUEUE_PREFIX,
          IMGSRV_URL: config.IMGSRV_URL,
          IMGSRV_USERNAME: config.IMGSRV_USERNAME,
          IMGSRV_PASSWORD: config.IMGSRV_PASSWORD,
          MIGRATIONS_RUN: 'false',
        },
      },
      (error, stdout, stderr) => resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
    );
  });
}
