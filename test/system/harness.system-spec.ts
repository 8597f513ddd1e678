/**
 * Proves the native harness end to end: a device (storescu) sends a study to
 * the real Orthanc configured from docker/orthanc, whose Lua hook calls a fake
 * API webhook; DICOMweb and rendering answer what ingestion needs; the shipped
 * nginx proxy guards DICOMweb with the viewer-token subrequest.
 */
import { randomBytes } from 'crypto';
import { promises as fs } from 'fs';
import * as http from 'http';
import * as os from 'os';
import * as path from 'path';
import sharp from 'sharp';
import { sendWithStorescu, writeNonImageStudy, writeStudy, WrittenStudy } from '../../scripts/stack/dicom';
import { startNginx, NginxInstance } from '../../scripts/stack/nginx';
import { basicAuth, delay, getFreePort, OrthancInstance, startOrthanc } from '../../scripts/stack/orthanc';

jest.setTimeout(60_000);

interface RecordedRequest {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
  body: string;
  at: number;
}

/** Stands in for the API: records every request, answers the webhook and the token validation. */
/** A viewer token the fake API accepts (viewer tokens are UUIDs: the proxy routes on that shape). */
const GOOD = '00000000-0000-4000-8000-00000000600d';

function startFakeApi(port: number): Promise<{ server: http.Server; requests: RecordedRequest[] }> {
  const requests: RecordedRequest[] = [];
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const recorded: RecordedRequest = {
        method: req.method ?? '',
        url: req.url ?? '',
        headers: req.headers,
        body: Buffer.concat(chunks).toString(),
        at: Date.now(),
      };
      requests.push(recorded);
      const json = (status: number, body: unknown): void => {
        res.writeHead(status, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify(body));
      };
      if (recorded.url === '/api/imgsrv/webhook') return json(200, { status: 'queued' });
      // The study's door: this harness tests the transport, not who may send.
      if (recorded.url === '/api/imgsrv/door') return json(200, { allow: true });
      if (recorded.url.startsWith('/api/viewer/token/validate')) {
        return req.headers['x-viewer-token'] === GOOD
          ? json(200, { ok: true })
          : json(401, { error: 'Invalid or expired token' });
      }
      json(200, { echo: { url: recorded.url, headers: recorded.headers } });
    });
  });
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve({ server, requests })));
}

async function waitFor<T>(what: string, probe: () => T | undefined, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await delay(100);
  }
}

describe('native harness: Orthanc + storescu + webhook + nginx', () => {
  const secret = `secret-${randomBytes(8).toString('hex')}`;
  let workDir: string;
  let api: { server: http.Server; requests: RecordedRequest[] };
  let orthanc: OrthancInstance;
  let nginx: NginxInstance | undefined;
  let study: WrittenStudy;
  let orthancStudyId: string;

  const orthancGet = async (pathAndQuery: string, headers: Record<string, string> = {}): Promise<Response> =>
    fetch(`${orthanc.url}${pathAndQuery}`, {
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password), ...headers },
    });
  const orthancJson = async <T>(pathAndQuery: string): Promise<T> => {
    const response = await orthancGet(pathAndQuery);
    expect(response.status).toBe(200);
    return (await response.json()) as T;
  };
  const lookupStudy = async (studyInstanceUid: string): Promise<string> => {
    const response = await fetch(`${orthanc.url}/tools/lookup`, {
      method: 'POST',
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password) },
      body: studyInstanceUid,
    });
    const found = (await response.json()) as Array<{ ID: string; Type: string }>;
    const hit = found.find((entry) => entry.Type === 'Study');
    if (!hit) throw new Error(`study ${studyInstanceUid} not in Orthanc`);
    return hit.ID;
  };
  const webhooksFor = (id: string): RecordedRequest[] =>
    api.requests.filter((r) => r.url === '/api/imgsrv/webhook' && r.body.includes(id));

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-harness-'));
    const apiPort = await getFreePort();
    api = await startFakeApi(apiPort);
    orthanc = await startOrthanc({
      stableAge: 2,
      username: 'svc',
      password: 'svc-password',
      webhookUrl: `http://127.0.0.1:${apiPort}/api/imgsrv/webhook`,
      webhookSecret: secret,
    });
  });

  afterAll(async () => {
    await nginx?.stop();
    await orthanc?.destroy();
    await new Promise((resolve) => api?.server.close(resolve));
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  });

  it('receives a 2-series study from a device and posts the JSON webhook with the secret', async () => {
    study = await writeStudy(path.join(workDir, 'ct'), {
      patientId: 'HARNESS-1',
      patientName: 'DOE^JANE',
      patientBirthDate: '19800214',
      patientSex: 'F',
      accessionNumber: 'ACC-H1',
      studyDate: '20240115',
      studyDescription: 'CT harness',
      series: [
        { modality: 'CT', seriesNumber: 1, manufacturer: 'ACME', instances: 3, rows: 192, columns: 256, sliceThickness: 1.25 },
        { modality: 'CT', seriesNumber: 2, manufacturer: 'ACME', instances: 2, rows: 32, columns: 32, sliceThickness: 5 },
      ],
    });
    expect(study.files).toHaveLength(5);
    expect(study.studyInstanceUid).toMatch(/^2\.25\.\d+$/);

    await sendWithStorescu(study.files, { aet: 'CT_ROOM_1', port: orthanc.dicomPort });
    const sentAt = Date.now();
    orthancStudyId = await lookupStudy(study.studyInstanceUid);

    const [hook] = await waitFor(
      'the webhook',
      () => {
        const hooks = webhooksFor(orthancStudyId);
        return hooks.length ? hooks : undefined;
      },
      10_000,
    );
    expect(hook.method).toBe('POST');
    expect(hook.headers['x-webhook-secret']).toBe(secret);
    expect(hook.headers['content-type']).toBe('application/json');
    expect(JSON.parse(hook.body)).toEqual({ ID: orthancStudyId });
    // StableAge is 2 s: the hook cannot fire before that.
    expect(hook.at - sentAt).toBeGreaterThanOrEqual(1500);

    const details = await orthancJson<{ IsStable: boolean; Series: string[]; MainDicomTags: Record<string, string> }>(
      `/studies/${orthancStudyId}`,
    );
    expect(details.IsStable).toBe(true);
    expect(details.Series).toHaveLength(2);
    expect(details.MainDicomTags.AccessionNumber).toBe('ACC-H1');
  });

  it('records the calling AE title and address as instance metadata', async () => {
    const instances = await orthancJson<Array<{ ID: string }>>(`/studies/${orthancStudyId}/instances`);
    expect(instances).toHaveLength(5);
    const metadata = await orthancJson<Record<string, string>>(`/instances/${instances[0].ID}/metadata?expand`);
    expect(metadata.RemoteAET).toBe('CT_ROOM_1');
    expect(metadata.RemoteIP).toBe('127.0.0.1');
    expect(metadata.Origin).toBe('DicomProtocol');
  });

  it('answers Rows, Columns and SliceThickness per series over DICOMweb', async () => {
    const expected = [
      { rows: 192, columns: 256, thickness: 1.25, count: 3 },
      { rows: 32, columns: 32, thickness: 5, count: 2 },
    ];
    for (const [index, seriesUid] of study.seriesUids.entries()) {
      const instances = await orthancJson<Array<Record<string, { Value?: unknown[] }>>>(
        `/dicom-web/studies/${study.studyInstanceUid}/series/${seriesUid}/instances?includefield=00280010,00280011,00180050`,
      );
      expect(instances).toHaveLength(expected[index].count);
      for (const instance of instances) {
        expect(instance['00280010'].Value).toEqual([expected[index].rows]);
        expect(instance['00280011'].Value).toEqual([expected[index].columns]);
        expect(Number(instance['00180050'].Value?.[0])).toBe(expected[index].thickness);
      }
    }
  });

  it('renders the generated pixel data as a JPEG (thumbnail source)', async () => {
    const series = await orthancJson<Array<{ ID: string; Instances: string[]; MainDicomTags: { SeriesInstanceUID: string } }>>(
      `/studies/${orthancStudyId}/series`,
    );
    const first = series.find((s) => s.MainDicomTags.SeriesInstanceUID === study.seriesUids[0]);
    const instances = [{ ID: first!.Instances[0] }];
    const response = await orthancGet(`/instances/${instances[0].ID}/rendered`, { Accept: 'image/jpeg' });
    expect(response.status).toBe(200);
    expect(response.headers.get('content-type')).toBe('image/jpeg');
    const jpeg = Buffer.from(await response.arrayBuffer());
    expect(jpeg.subarray(0, 3)).toEqual(Buffer.from([0xff, 0xd8, 0xff]));

    const decoded = await sharp(jpeg).raw().toBuffer({ resolveWithObject: true });
    const size = [decoded.info.width, decoded.info.height];
    expect(size).toEqual([256, 192]);
    // The gradient and the bright square must survive windowing: not a flat image.
    const stats = await sharp(jpeg).stats();
    expect(stats.channels[0].max - stats.channels[0].min).toBeGreaterThan(100);
  });

  it('archives studies without pixel data (PDF, text SR) and notifies them too', async () => {
    const pdf = await writeNonImageStudy(path.join(workDir, 'pdf'), { patientId: 'HARNESS-2', patientName: 'ROE^RICHARD' });
    const sr = await writeNonImageStudy(path.join(workDir, 'sr'), {
      patientId: 'HARNESS-2',
      patientName: 'ROE^RICHARD',
      kind: 'sr',
    });
    await sendWithStorescu([...pdf.files, ...sr.files], { aet: 'DOC_ROOM', port: orthanc.dicomPort });

    for (const written of [pdf, sr]) {
      const id = await lookupStudy(written.studyInstanceUid);
      await waitFor(`the webhook of ${id}`, () => (webhooksFor(id).length ? true : undefined), 10_000);
      const instances = await orthancJson<Array<{ ID: string }>>(`/studies/${id}/instances`);
      expect(instances).toHaveLength(1);
      // No pixel data: Orthanc 1.10 answers 415, which the worker must treat as "no thumbnail".
      const rendered = await orthancGet(`/instances/${instances[0].ID}/rendered`, { Accept: 'image/jpeg' });
      expect(rendered.status).toBe(415);
    }
  });

  it('proxies DICOMweb through nginx only with a valid viewer token', async () => {
    const apiPort = (api.server.address() as { port: number }).port;
    nginx = await startNginx({
      apiPort,
      orthancPort: orthanc.httpPort,
      orthancUser: orthanc.viewerUsername,
      orthancPassword: orthanc.viewerPassword,
    });
    // Orthanc itself refuses anonymous requests: nginx must add the credentials.
    expect((await fetch(`${orthanc.url}/dicom-web/studies`)).status).toBe(401);

    const granted = await fetch(`${nginx.url}/dicom-web/studies?limit=10`, { headers: { 'X-Viewer-Token': GOOD } });
    expect(granted.status).toBe(200);
    const studies = (await granted.json()) as Array<Record<string, { Value?: unknown[] }>>;
    expect(studies.map((s) => s['0020000D'].Value?.[0])).toContain(study.studyInstanceUid);

    const validations = api.requests.filter((r) => r.url.startsWith('/api/viewer/token/validate'));
    const validation = validations[validations.length - 1];
    expect(validation.method).toBe('GET');
    expect(validation.url).toBe('/api/viewer/token/validate');
    expect(validation.headers['x-original-uri']).toBe('/dicom-web/studies?limit=10');
    expect(validation.headers['x-viewer-token']).toBe(GOOD);
    expect(validation.body).toBe('');

    const series = `${nginx.url}/dicom-web/studies/${study.studyInstanceUid}/series`;
    expect((await fetch(series)).status).toBe(401);
    expect((await fetch(series, { headers: { 'X-Viewer-Token': 'bad' } })).status).toBe(401);
    const unknownToken = GOOD.replace(/d$/, 'e');
    expect((await fetch(`${nginx.url}/dicom-web/studies`, { headers: { 'X-Viewer-Token': unknownToken } })).status).toBe(401);

    // Without a viewer token, the study search is the worklist's: the API's QIDO-RS endpoint.
    const search = (await (await fetch(`${nginx.url}/dicom-web/studies?PatientName=*doe*&limit=5`)).json()) as {
      echo: { url: string };
    };
    expect(search.echo.url).toBe('/api/dicom-web/studies?PatientName=*doe*&limit=5');
  });

  it('serves large WADO-RS answers and writes BulkDataURIs for the proxy origin', async () => {
    const headers = { 'X-Viewer-Token': GOOD };
    const base = `${nginx!.url}/dicom-web/studies/${study.studyInstanceUid}/series/${study.seriesUids[0]}`;

    const retrieve = await fetch(base, { headers: { ...headers, Accept: 'multipart/related; type="application/dicom"' } });
    expect(retrieve.status).toBe(200);
    expect(retrieve.headers.get('content-type')).toContain('multipart/related');
    const body = Buffer.from(await retrieve.arrayBuffer());
    // ~300 KB: more than nginx's in-memory proxy buffers, so its temp folder is used.
    expect(body.length).toBeGreaterThan(3 * 192 * 256 * 2);
    expect(nginx!.errorLog()).not.toMatch(/\[(crit|alert|emerg)\]|Permission denied/);

    const metadata = await fetch(`${base}/metadata`, { headers });
    expect(metadata.status).toBe(200);
    const [first] = (await metadata.json()) as Array<Record<string, { BulkDataURI?: string }>>;
    expect(first['7FE00010'].BulkDataURI).toMatch(new RegExp(`^${nginx!.url}/dicom-web/studies/`));
  });

  it('refuses path tricks, writes and unknown paths at the proxy', async () => {
    const headers = { 'X-Viewer-Token': GOOD };
    const other = study.studyInstanceUid;
    for (const trick of [
      `/dicom-web/studies/1.2.3/../${other}/series`,
      `/dicom-web/studies/1.2.3%2F..%2F${other}/series`,
      `/dicom-web//studies/${other}/series`,
    ]) {
      const status = await rawStatus(nginx!.port, trick, headers);
      expect({ trick, status }).toEqual({ trick, status: 400 });
    }
    // A STOW-RS upload goes to the API (which checks the session and the walls), never to Orthanc.
    const stow = await fetch(`${nginx!.url}/dicom-web/studies`, { method: 'POST', headers, body: 'x' });
    expect(stow.status).toBe(200);
    expect(((await stow.json()) as { echo: { url: string } }).echo.url).toBe('/api/dicom-web/studies');
    // Any other write under /dicom-web/ is refused before the image server.
    const write = await fetch(`${nginx!.url}/dicom-web/studies/${other}`, { method: 'POST', headers, body: 'x' });
    expect(write.status).toBe(403);
    expect((await fetch(`${nginx!.url}/_viewer_auth`, { headers })).status).toBe(404);
    expect((await fetch(`${nginx!.url}/app/orthanc/`, { headers })).status).toBe(404);
  });

  it('proxies /api/ to the API with the client address', async () => {
    const response = await fetch(`${nginx!.url}/api/health?x=1`, { headers: { 'X-Forwarded-For': '6.6.6.6' } });
    expect(response.status).toBe(200);
    const { echo } = (await response.json()) as { echo: { url: string; headers: Record<string, string> } };
    expect(echo.url).toBe('/api/health?x=1');
    expect(echo.headers['x-real-ip']).toBe('127.0.0.1');
    expect(echo.headers['x-forwarded-for']).toBe('127.0.0.1');
    // Queries are not logged (they may carry a viewer token: the viewer URL's token=).
    expect(nginx!.accessLog()).toContain('GET /api/health?- ');
  });

  it('keeps its storage across stop() and start()', async () => {
    await orthanc.stop();
    await expect(fetch(`${orthanc.url}/system`)).rejects.toThrow();
    await orthanc.start();
    const studies = await orthancJson<string[]>('/studies');
    expect(studies).toContain(orthancStudyId);
  });
});

/** fetch() normalises "..", so path tricks go over a raw socket. */
function rawStatus(port: number, requestPath: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path: requestPath, headers }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    req.end();
  });
}
