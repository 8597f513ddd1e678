/**
 * Signed reports filed with the images, against a real Orthanc (docker/orthanc's configuration and
 * Lua): a device sends a study, the doctor signs its report, and the worker stores the PDF as a
 * DICOM Encapsulated PDF in a DOC series of the study, one per signing (told apart by description
 * and number); the webhook re-indexes the study, which stays in its clinic and unit and lists the series.
 */
import { getQueueToken } from '@nestjs/bull';
import { TestingModule } from '@nestjs/testing';
import type { Queue } from 'bull';
import { randomBytes } from 'crypto';
import { promises as fs } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { REPORT_FILING_QUEUE } from '../../src/common/queues/queues.module';
import { ReportFilingService } from '../../src/reports/report-filing.service';
import { ReportFilingWorker } from '../../src/reports/report-filing.worker';
import { TestApp } from '../support/app';
import { sendWithStorescu, writeStudy } from '../../scripts/stack/dicom';
import { createTenant, createUnit, createUser, login } from '../support/factories';
import { basicAuth, OrthancInstance, waitFor } from '../../scripts/stack/orthanc';
import { startOrthancAndApi, startWorkerModule } from '../support/stack';

jest.setTimeout(120_000);

const suffix = randomBytes(3).toString('hex').toUpperCase();
const DEVICE_AET = `CT_${suffix}`;
const ENCAPSULATED_PDF = '1.2.840.10008.5.1.4.1.1.104.1';

describe('Signed reports filed in the image server', () => {
  let workDir: string;
  let orthanc: OrthancInstance;
  let t: TestApp;
  let worker: TestingModule;
  let tenant: { id: string };
  let unit: { id: string };
  let doctorToken: string;
  let studyId: string;
  let imgsrvStudyId: string;

  const orthancJson = async (pathAndQuery: string) => {
    const response = await fetch(`${orthanc.url}${pathAndQuery}`, {
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password) },
    });
    if (!response.ok) throw new Error(`${pathAndQuery}: ${response.status}`);
    return response.json() as Promise<any>;
  };

  /** The study's series as the API lists them, once a DOC series holds `count` instances. */
  const docSeries = (count: number) =>
    waitFor(
      `a DOC series with ${count} instance(s)`,
      async () => {
        const res = await t.http.get(`/api/studies/${studyId}/series`, { token: doctorToken });
        const doc = (res.body as Array<{ modality: string; instance_count: number; imgsrv_series_id: string }>).find(
          (s) => s.modality === 'DOC',
        );
        return doc && doc.instance_count === count ? { all: res.body, doc } : null;
      },
      60_000,
    );

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-reports-'));
    ({ t, orthanc } = await startOrthancAndApi({
      stableAge: 1,
      env: { RECONCILE_INTERVAL: '0', QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}:reports` },
    }));
    worker = await startWorkerModule(t.config);
    tenant = await createTenant(t.db);
    unit = await createUnit(t.db, tenant.id);
    await t.db.query(
      `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, '127.0.0.1')`,
      [tenant.id, unit.id, `CT ${suffix}`, DEVICE_AET],
    );
    const doctor = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id, name: 'Dra. Conceição' });
    await t.db.query(`UPDATE users SET crm = '12345/SP' WHERE id = $1`, [doctor.id]);
    doctorToken = await login(t.http, doctor.email);

    const study = await writeStudy(path.join(workDir, 'ct'), {
      patientId: `PAT-${suffix}`,
      patientName: 'SÃO^JOÃO',
      studyDate: '20240115',
      studyDescription: 'CT chest',
      series: [{ modality: 'CT', seriesNumber: 1, instances: 2, rows: 32, columns: 32 }],
    });
    await sendWithStorescu(study.files, { aet: DEVICE_AET, port: orthanc.dicomPort });
    const row = await waitFor(
      'the study indexed',
      async () => {
        const [found] = await t.db.query(
          `SELECT s.id, s.imgsrv_study_id FROM studies s JOIN imgsrv_study_sync y USING (imgsrv_study_id)
            WHERE s.study_instance_uid = $1 AND y.indexed_at IS NOT NULL`,
          [study.studyInstanceUid],
        );
        return found ?? null;
      },
      60_000,
    );
    studyId = row.id;
    imgsrvStudyId = row.imgsrv_study_id;
  }, 120_000);

  afterAll(async () => {
    await worker?.close().catch(() => undefined);
    await t?.close().catch(() => undefined);
    await orthanc?.destroy();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  });

  it('files the signed PDF as an Encapsulated PDF in a DOC series of the study; the study keeps its clinic and unit', async () => {
    const draft = await t.http.post(`/api/studies/${studyId}/reports`, {
      token: doctorToken,
      body: { findings: 'Pulmões sem alterações.', impression: 'Normal.' },
    });
    expect(draft.status).toBe(201);
    const signed = await t.http.post(`/api/studies/${studyId}/reports/${draft.body.id}/sign`, {
      token: doctorToken,
      body: { version: 1 },
    });
    expect(signed.status).toBe(200);
    const started = Date.now();
    const { all, doc } = await docSeries(1);
    expect(Date.now() - started).toBeLessThan(60_000);
    expect(all.map((s: { modality: string }) => s.modality).sort()).toEqual(['CT', 'DOC']);

    const [study] = await t.db.query(`SELECT tenant_id, unit_id, report_status FROM studies WHERE id = $1`, [studyId]);
    expect(study).toEqual({ tenant_id: tenant.id, unit_id: unit.id, report_status: 'final' });
    const [sync] = await t.db.query(`SELECT remote_aet FROM imgsrv_study_sync WHERE imgsrv_study_id = $1`, [imgsrvStudyId]);
    expect(sync.remote_aet).toBe(DEVICE_AET);

    // In Orthanc: under the same study and patient, SOP class Encapsulated PDF, the kept bytes.
    const series = await orthancJson(`/series/${doc.imgsrv_series_id}`);
    expect(series.ParentStudy).toBe(imgsrvStudyId);
    const instanceId = series.Instances[0];
    const tags = await orthancJson(`/instances/${instanceId}/simplified-tags`);
    expect(tags).toMatchObject({ SOPClassUID: ENCAPSULATED_PDF, Modality: 'DOC', PatientID: `PAT-${suffix}` });
    const filed = Buffer.from(
      await (
        await fetch(`${orthanc.url}/instances/${instanceId}/content/0042-0011`, {
          headers: { Authorization: basicAuth(orthanc.username, orthanc.password) },
        })
      ).arrayBuffer(),
    );
    const kept = (await t.http.get(`/api/studies/${studyId}/reports/${draft.body.id}/pdf`, { token: doctorToken })).raw;
    // DICOM pads a value to an even length.
    expect(filed.subarray(0, kept.length).equals(kept)).toBe(true);
    expect(filed.length - kept.length).toBeLessThanOrEqual(1);

    // Filing again is idempotent: the same UIDs make the same Orthanc instance.
    const [pdf] = await t.db.query(`SELECT id, filed_instance_id FROM report_pdfs WHERE report_id = $1`, [draft.body.id]);
    expect(pdf.filed_instance_id).toBe(instanceId);
    const filing = worker.get(ReportFilingService);
    expect(await filing.run(pdf.id)).toEqual({ outcome: 'already-filed', imgsrvInstanceId: instanceId });
    await t.db.query(`UPDATE report_pdfs SET filed_instance_id = NULL, filed_at = NULL WHERE id = $1`, [pdf.id]);
    expect(await filing.run(pdf.id)).toEqual({ outcome: 'filed', imgsrvInstanceId: instanceId });
    expect((await orthancJson(`/series/${doc.imgsrv_series_id}`)).Instances).toHaveLength(1);
  });

  it('a signed addendum files the new version in a DOC series of its own, which a viewer tells apart from the first', async () => {
    const [report] = await t.db.query(`SELECT id FROM reports WHERE study_id = $1 AND kind = 'report'`, [studyId]);
    const addendum = await t.http.post(`/api/studies/${studyId}/reports/${report.id}/addenda`, {
      token: doctorToken,
      body: { findings: 'Adendo.' },
    });
    expect(addendum.status).toBe(201);
    await t.http.post(`/api/studies/${studyId}/reports/${addendum.body.id}/sign`, { token: doctorToken, body: { version: 1 } });
    const docs = await waitFor(
      'two DOC series',
      async () => {
        const res = await t.http.get(`/api/studies/${studyId}/series`, { token: doctorToken });
        const found = (res.body as Array<{ modality: string; instance_count: number; imgsrv_series_id: string }>).filter(
          (s) => s.modality === 'DOC',
        );
        return found.length === 2 && found.every((s) => s.instance_count === 1) ? found : null;
      },
      60_000,
    );
    // What a viewer lists (OHIF: one entry per PDF, by series description and number): the report
    // as signed, then the version with its addendum, each in its own series.
    const filed = await Promise.all(
      docs.map(async (s) => {
        const [instance] = await orthancJson(`/series/${s.imgsrv_series_id}/instances`);
        const tags = await orthancJson(`/instances/${instance.ID}/simplified-tags`);
        return [tags.SeriesDescription, tags.SeriesNumber, tags.InstanceNumber, tags.SeriesInstanceUID];
      }),
    );
    filed.sort((a, b) => Number(a[1]) - Number(b[1]));
    expect(filed.map((f) => f.slice(0, 3))).toEqual([
      ['Report', '9901', '1'],
      ['Report, addendum 1', '9902', '2'],
    ]);
    expect(filed[0][3]).not.toBe(filed[1][3]);
    const [study] = await t.db.query(`SELECT tenant_id, unit_id FROM studies WHERE id = $1`, [studyId]);
    expect(study).toEqual({ tenant_id: tenant.id, unit_id: unit.id });
  });

  it("files again, by the worker's sweep, a PDF its own job did not file: never queued, or unfiled since", async () => {
    const [pdf] = await t.db.query(
      `SELECT p.id, p.filed_instance_id FROM report_pdfs p JOIN reports r ON r.id = p.report_id
        WHERE r.study_id = $1 AND p.version = 1`,
      [studyId],
    );
    expect(pdf.filed_instance_id).toEqual(expect.any(String));
    const queue = worker.get<Queue>(getQueueToken(REPORT_FILING_QUEUE));
    const sweeper = worker.get(ReportFilingWorker);
    const unfile = () =>
      t.db.query(
        `UPDATE report_pdfs SET filed_instance_id = NULL, filed_at = NULL, created_at = now() - interval '2 minutes'
          WHERE id = $1`,
        [pdf.id],
      );
    const filedAgain = () =>
      waitFor(
        'the PDF filed again',
        async () =>
          (await t.db.query(`SELECT filed_instance_id FROM report_pdfs WHERE id = $1`, [pdf.id]))[0].filed_instance_id,
        30_000,
      );

    // Never queued (the queue failed after the signing's commit): no job at all.
    await (await queue.getJob(`report-pdf:${pdf.id}`))?.remove();
    await unfile();
    await sweeper.sweep();
    expect(await filedAgain()).toBe(pdf.filed_instance_id);

    // Its job completed, the PDF unfiled since: queued anew.
    expect(await (await queue.getJob(`report-pdf:${pdf.id}`))?.getState()).toBe('completed');
    await unfile();
    await sweeper.sweep();
    expect(await filedAgain()).toBe(pdf.filed_instance_id);

    // A PDF younger than a minute is its own job's: the sweep leaves it.
    await t.db.query(`UPDATE report_pdfs SET filed_instance_id = NULL, filed_at = NULL, created_at = now() WHERE id = $1`, [
      pdf.id,
    ]);
    expect(await sweeper.sweep()).toBe(0);
    await t.db.query(`UPDATE report_pdfs SET filed_instance_id = $2, filed_at = now() WHERE id = $1`, [
      pdf.id,
      pdf.filed_instance_id,
    ]);
  });
});
