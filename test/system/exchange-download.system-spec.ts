/**
 * GET /api/studies/{id}/archive against the real Orthanc: the ZIP is Orthanc's own, streamed through
 * the API (on a socket), for whoever sees the study and for nobody else; logged.
 */
import { execFile } from 'child_process';
import { promises as fs } from 'fs';
import { AddressInfo } from 'net';
import * as os from 'os';
import * as path from 'path';
import { promisify } from 'util';
import { AuditService } from '../../src/audit/audit.service';
import { createTestApp, TestApp } from '../support/app';
import { createPatient, createStudy, StudyRow } from '../support/clinical-factories';
import { writeStudy } from '../../scripts/stack/dicom';
import { createClinic, createSuperAdminUser } from '../support/factories';
import { basicAuth, OrthancInstance, startOrthanc, storeOverRest } from '../../scripts/stack/orthanc';

jest.setTimeout(120_000);

describe('study download (ZIP) through the real Orthanc', () => {
  let workDir: string;
  let orthanc: OrthancInstance;
  let t: TestApp;
  let baseUrl: string;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let superAdmin: Awaited<ReturnType<typeof createSuperAdminUser>>;
  let ours: StudyRow;
  let sopUids: string[];

  async function storeStudy(dir: string, patientId: string, instances: number) {
    const written = await writeStudy(dir, {
      patientId,
      patientName: `DOE^${patientId}`,
      studyDate: '20240115',
      series: [{ modality: 'CT', seriesNumber: 1, instances, rows: 64, columns: 64 }],
    });
    const { orthancStudyId } = await storeOverRest(orthanc, written.files);
    return { written, orthancStudyId };
  }

  async function seed(tenantId: string, unitId: string, stored: Awaited<ReturnType<typeof storeStudy>>) {
    const patient = await createPatient(t.db, tenantId);
    const study = await createStudy(t.db, {
      tenant_id: tenantId,
      unit_id: unitId,
      patient,
      study_instance_uid: stored.written.studyInstanceUid,
    });
    await t.db.query(`UPDATE studies SET imgsrv_study_id = $2 WHERE id = $1`, [study.id, stored.orthancStudyId]);
    return study;
  }

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-download-'));
    orthanc = await startOrthanc({ username: 'svc', password: 'svc-download-password' });
    t = await createTestApp({
      IMGSRV_URL: orthanc.url,
      IMGSRV_USERNAME: orthanc.username,
      IMGSRV_PASSWORD: orthanc.password,
    });
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    superAdmin = await createSuperAdminUser(t.db, t.http);
    const stored = await storeStudy(path.join(workDir, 'ours'), 'DL-OURS', 6);
    sopUids = stored.written.sopInstanceUids;
    ours = await seed(clinic.tenant.id, clinic.unit1.id, stored);
  });

  afterAll(async () => {
    await t?.close();
    await orthanc?.destroy();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  });

  const download = (studyId: string, token: string) =>
    fetch(`${baseUrl}/api/studies/${studyId}/archive`, { headers: { authorization: `Bearer ${token}` } });

  it.each(['user1', 'admin', 'super'] as const)(
    'gives %s the study as a ZIP of its DICOM files, as an attachment',
    async (who) => {
      const token = who === 'user1' ? clinic.token1 : who === 'admin' ? clinic.adminToken : superAdmin.token;
      const response = await download(ours.id, token);
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('application/zip');
      expect(response.headers.get('content-disposition')).toBe(`attachment; filename="${ours.study_instance_uid}.zip"`);
      const zipPath = path.join(workDir, `${who}.zip`);
      await fs.writeFile(zipPath, Buffer.from(await response.arrayBuffer()));
      const out = path.join(workDir, `${who}-out`);
      await promisify(execFile)('unzip', ['-q', '-o', zipPath, '-d', out]);
      const files: string[] = [];
      const walk = async (dir: string): Promise<void> => {
        for (const entry of await fs.readdir(dir, { withFileTypes: true })) {
          const full = path.join(dir, entry.name);
          if (entry.isDirectory()) await walk(full);
          else files.push(full);
        }
      };
      await walk(out);
      expect(files).toHaveLength(6);
      const found = new Set<string>();
      for (const file of files) {
        const data = await fs.readFile(file);
        expect(data.subarray(128, 132).toString('latin1')).toBe('DICM');
        for (const uid of sopUids) if (data.includes(Buffer.from(uid))) found.add(uid);
      }
      expect(found).toEqual(new Set(sopUids));
    },
  );

  it('logs each download in the access log as study.download', async () => {
    const since = new Date();
    const response = await download(ours.id, clinic.token1);
    await response.arrayBuffer();
    await t.app.get(AuditService).flush();
    const rows = await t.db.query(
      `SELECT user_id, study_id, tenant_id FROM access_logs WHERE action = 'study.download' AND occurred_at >= $1`,
      [since],
    );
    expect(rows).toEqual([{ user_id: clinic.user1.id, study_id: ours.id, tenant_id: clinic.tenant.id }]);
  });

  it.each([
    ['another unit', () => clinic.token2],
    ['another clinic', () => other.adminToken],
  ])('answers 404 {message: "Study not found."} to a user of %s, and logs nothing', async (_, token) => {
    const since = new Date();
    const response = await download(ours.id, token());
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ message: 'Study not found.' });
    await t.app.get(AuditService).flush();
    const [{ count }] = await t.db.query(
      `SELECT count(*)::int AS count FROM access_logs WHERE action = 'study.download' AND occurred_at >= $1`,
      [since],
    );
    expect(count).toBe(0);
  });

  it('answers 404 for an unknown or malformed id, 401 without a session', async () => {
    for (const id of ['00000000-0000-4000-8000-000000000000', 'not-a-uuid', '..%2F..%2Fsystem']) {
      const response = await download(id, clinic.token1);
      expect(response.status).toBe(404);
      expect(await response.json()).toEqual({ message: 'Study not found.' });
    }
    const response = await fetch(`${baseUrl}/api/studies/${ours.id}/archive`);
    expect(response.status).toBe(401);
    expect(await response.json()).toEqual({ message: 'Unauthenticated.' });
  });

  it('answers 404 {message: "Archive not available"} when the image server does not have the study', async () => {
    const patient = await createPatient(t.db, clinic.tenant.id);
    const ghost = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id, patient });
    const response = await download(ghost.id, clinic.token1);
    expect(response.status).toBe(404);
    expect(await response.json()).toEqual({ message: 'Archive not available' });
  });

  it('stops reading from the image server when the client goes away', async () => {
    const controller = new AbortController();
    const response = await fetch(`${baseUrl}/api/studies/${ours.id}/archive`, {
      headers: { authorization: `Bearer ${clinic.token1}` },
      signal: controller.signal,
    });
    expect(response.status).toBe(200);
    controller.abort();
    // The API keeps serving (the aborted stream was released without an error escaping).
    const next = await download(ours.id, clinic.token1);
    expect(next.status).toBe(200);
    expect((await next.arrayBuffer()).byteLength).toBeGreaterThan(0);
  });
});
