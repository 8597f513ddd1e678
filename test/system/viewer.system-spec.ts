/**
 * The clinical read path against the real servers: the API (listening on a port) renders instances
 * from a real Orthanc, and the shipped nginx configuration lets the viewer's DICOMweb requests reach
 * Orthanc only with a viewer token for a study of the token's tenant.
 */
import { promises as fs } from 'fs';
import { AddressInfo } from 'net';
import * as os from 'os';
import * as path from 'path';
import sharp from 'sharp';
import { createTestApp, TestApp } from '../support/app';
import { createInstance, createPatient, createSeries, createStudy, StudyRow } from '../support/clinical-factories';
import { writeStudy, WrittenStudy } from '../../scripts/stack/dicom';
import { createClinic } from '../support/factories';
import { NginxInstance, startNginx } from '../../scripts/stack/nginx';
import { basicAuth, OrthancInstance, startOrthanc, storeOverRest } from '../../scripts/stack/orthanc';

jest.setTimeout(90_000);

interface Uploaded {
  written: WrittenStudy;
  orthancStudyId: string;
  /** Orthanc instance ids in the order of written.files. */
  orthancInstanceIds: string[];
}

describe('viewer and images through the real Orthanc and nginx', () => {
  let workDir: string;
  let orthanc: OrthancInstance;
  let nginx: NginxInstance;
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let ours: { study: StudyRow; instanceId: string; bogusInstanceId: string; upload: Uploaded };
  let theirs: { study: StudyRow; upload: Uploaded };

  async function upload(dir: string, patientId: string): Promise<Uploaded> {
    const written = await writeStudy(dir, {
      patientId,
      patientName: `DOE^${patientId}`,
      studyDate: '20240115',
      series: [{ modality: 'CT', seriesNumber: 1, instances: 2, rows: 96, columns: 128 }],
    });
    return { written, ...(await storeOverRest(orthanc, written.files)) };
  }

  /** The rows ingestion would have written for an uploaded study. */
  async function seed(tenantId: string, unitId: string, uploaded: Uploaded) {
    const patient = await createPatient(t.db, tenantId);
    const study = await createStudy(t.db, {
      tenant_id: tenantId,
      unit_id: unitId,
      patient,
      study_instance_uid: uploaded.written.studyInstanceUid,
    });
    await t.db.query(`UPDATE studies SET imgsrv_study_id = $2 WHERE id = $1`, [study.id, uploaded.orthancStudyId]);
    const series = await createSeries(t.db, study.id, { series_instance_uid: uploaded.written.seriesUids[0] });
    const instances = [];
    for (const [index, orthancId] of uploaded.orthancInstanceIds.entries()) {
      instances.push(
        await createInstance(t.db, series.id, {
          imgsrv_instance_id: orthancId,
          sop_instance_uid: uploaded.written.sopInstanceUids[index],
          instance_number: index + 1,
          rows: 96,
          columns: 128,
        }),
      );
    }
    return { study, series, instances };
  }

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-viewer-'));
    orthanc = await startOrthanc({ username: 'svc', password: 'svc-viewer-password' });
    t = await createTestApp({
      IMGSRV_URL: orthanc.url,
      IMGSRV_USERNAME: orthanc.username,
      IMGSRV_PASSWORD: orthanc.password,
    });
    await t.app.listen(0, '127.0.0.1');
    const apiPort = (t.app.getHttpServer().address() as AddressInfo).port;
    nginx = await startNginx({
      apiPort,
      orthancPort: orthanc.httpPort,
      orthancUser: orthanc.viewerUsername,
      orthancPassword: orthanc.viewerPassword,
    });

    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    const ourUpload = await upload(path.join(workDir, 'ours'), 'OURS-1');
    const ourRows = await seed(clinic.tenant.id, clinic.unit1.id, ourUpload);
    // An instance row whose image-server id Orthanc does not know (deleted there, say).
    const bogus = await createInstance(t.db, ourRows.series.id, { instance_number: 99 });
    ours = { study: ourRows.study, instanceId: ourRows.instances[0].id, bogusInstanceId: bogus.id, upload: ourUpload };
    const theirUpload = await upload(path.join(workDir, 'theirs'), 'THEIRS-1');
    theirs = { study: (await seed(other.tenant.id, other.unit1.id, theirUpload)).study, upload: theirUpload };
  });

  afterAll(async () => {
    await nginx?.stop();
    await t?.close();
    await orthanc?.destroy();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  });

  const viewerToken = async (bearer: string, studyId: string): Promise<string> => {
    const res = await t.http.post('/api/viewer/token', { token: bearer, body: { study_id: studyId } });
    expect(res.status).toBe(200);
    return res.body.token;
  };

  describe('GET /api/studies/{id}/instances/{instance}/rendered', () => {
    it("streams Orthanc's JPEG rendering with image/jpeg and no-cache, private", async () => {
      const res = await t.http.get(`/api/studies/${ours.study.id}/instances/${ours.instanceId}/rendered`, {
        token: clinic.token1,
      });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('image/jpeg');
      expect(res.headers['cache-control']).toBe('no-cache, private');
      expect(res.raw.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));
      const meta = await sharp(res.raw).metadata();
      expect([meta.format, meta.width, meta.height]).toEqual(['jpeg', 128, 96]);
    });

    it('is served on the same origin as the viewer, through nginx', async () => {
      const response = await fetch(`${nginx.url}/api/studies/${ours.study.id}/instances/${ours.instanceId}/rendered`, {
        headers: { Authorization: `Bearer ${clinic.token1}` },
      });
      expect(response.status).toBe(200);
      expect(response.headers.get('content-type')).toBe('image/jpeg');
      expect(response.headers.get('cache-control')).toBe('no-cache, private');
      expect((await sharp(Buffer.from(await response.arrayBuffer())).metadata()).width).toBe(128);
    });

    it('answers 404 {message: Image not available} for an instance Orthanc does not know', async () => {
      const res = await t.http.get(`/api/studies/${ours.study.id}/instances/${ours.bogusInstanceId}/rendered`, {
        token: clinic.token1,
      });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Image not available' });
    });

    it("answers 404 for another tenant's caller, without asking Orthanc", async () => {
      const res = await t.http.get(`/api/studies/${ours.study.id}/instances/${ours.instanceId}/rendered`, {
        token: other.adminToken,
      });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Image not available' });
    });
  });

  describe('DICOMweb through nginx', () => {
    let token: string;
    beforeAll(async () => {
      token = await viewerToken(clinic.token1, ours.study.id);
    });
    const dicomweb = (pathAndQuery: string, headers: Record<string, string> = {}) =>
      fetch(`${nginx.url}${pathAndQuery}`, { headers });

    it('reaches Orthanc with a valid token for the study (WADO-RS path form)', async () => {
      const response = await dicomweb(`/dicom-web/studies/${ours.upload.written.studyInstanceUid}/series`, {
        'X-Viewer-Token': token,
      });
      expect(response.status).toBe(200);
      const series = (await response.json()) as Array<Record<string, { Value?: unknown[] }>>;
      expect(series.map((s) => s['0020000E'].Value?.[0])).toEqual(ours.upload.written.seriesUids);
    });

    it('reaches Orthanc for a QIDO search naming the study (StudyInstanceUID=, as OHIF sends)', async () => {
      const uid = ours.upload.written.studyInstanceUid;
      const response = await dicomweb(`/dicom-web/studies?StudyInstanceUID=${uid}&includefield=00081030`, {
        'X-Viewer-Token': token,
      });
      expect(response.status).toBe(200);
      const studies = (await response.json()) as Array<Record<string, { Value?: unknown[] }>>;
      expect(studies.map((s) => s['0020000D'].Value?.[0])).toEqual([uid]);
    });

    it("reaches Orthanc for the study's metadata", async () => {
      const uid = ours.upload.written.studyInstanceUid;
      const response = await dicomweb(`/dicom-web/studies/${uid}/metadata`, { 'X-Viewer-Token': token });
      expect(response.status).toBe(200);
      expect(((await response.json()) as unknown[]).length).toBe(2);
    });

    it("answers 403 for another tenant's study UID, in the path and in the query", async () => {
      const foreign = theirs.upload.written.studyInstanceUid;
      for (const uri of [
        `/dicom-web/studies/${foreign}/series`,
        `/dicom-web/studies?StudyInstanceUID=${foreign}`,
        `/dicom-web/studies?StudyInstanceUID=${ours.upload.written.studyInstanceUid},${foreign}`,
      ]) {
        const response = await dicomweb(uri, { 'X-Viewer-Token': token });
        expect({ uri, status: response.status }).toEqual({ uri, status: 403 });
      }
    });

    it("answers 403 for a search that names no study (it would list every tenant's studies)", async () => {
      expect((await dicomweb('/dicom-web/studies?limit=10', { 'X-Viewer-Token': token })).status).toBe(403);
    });

    it('answers 401 without a token or with an unknown one', async () => {
      const uid = ours.upload.written.studyInstanceUid;
      expect((await dicomweb(`/dicom-web/studies/${uid}/series`)).status).toBe(401);
      expect(
        (await dicomweb(`/dicom-web/studies/${uid}/series`, { 'X-Viewer-Token': '00000000-0000-4000-8000-000000000000' }))
          .status,
      ).toBe(401);
    });

    it("opens another tenant's study only with a token of that tenant", async () => {
      const theirToken = await viewerToken(other.adminToken, theirs.study.id);
      const response = await dicomweb(`/dicom-web/studies/${theirs.upload.written.studyInstanceUid}/series`, {
        'X-Viewer-Token': theirToken,
      });
      expect(response.status).toBe(200);
      expect(nginx.errorLog()).not.toMatch(/auth request unexpected status/);
    });
  });

  it('answers 404 {message: Image not available} when Orthanc is down', async () => {
    await orthanc.stop();
    const res = await t.http.get(`/api/studies/${ours.study.id}/instances/${ours.instanceId}/rendered`, {
      token: clinic.token1,
    });
    expect(res.status).toBe(404);
    expect(res.body).toEqual({ message: 'Image not available' });
  });
});
