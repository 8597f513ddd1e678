/**
 * The viewer gate against the real image server: the validator must read every URI exactly as
 * Orthanc does, since the proxy forwards the URI unchanged. A differential test generates URIs from a
 * fixed seed, asks the validator (the real API, on its socket) with a unit doctor's viewer token, a
 * share's viewer token and a session of clinic A, sends the same raw bytes to Orthanc (holding
 * studies of clinics A and B and one the archive does not know), and fails on any URI the validator
 * allows for which Orthanc returns a study outside the caller's reach. Then the spellings that once
 * leaked, through the shipped nginx.
 */
import { promises as fs } from 'fs';
import * as http from 'http';
import { AddressInfo, connect } from 'net';
import * as os from 'os';
import * as path from 'path';
import { ViewerService } from '../../src/viewer';
import { createTestApp, TestApp } from '../support/app';
import { createImagedStudy, createStudy } from '../support/clinical-factories';
import { writeStudy, WrittenStudy } from '../../scripts/stack/dicom';
import { createClinic } from '../support/factories';
import { NginxInstance, startNginx } from '../../scripts/stack/nginx';
import { basicAuth, getFreePort, OrthancInstance, startOrthanc, waitFor } from '../../scripts/stack/orthanc';
import { startBuiltProcess } from '../../scripts/stack/processes';

jest.setTimeout(600_000);

const SEED = 0x5eed12;
const URI_COUNT = 2_400;
const CONCURRENCY = 8;
const VALIDATE = '/api/viewer/token/validate';
// Fixed study UIDs: the generated URIs are the same on every run.
const ROOT_UID = '1.2.826.0.1.3680043.10.1207';
const STUDY_UIDS = {
  A1: `${ROOT_UID}.1.1`,
  A2: `${ROOT_UID}.1.2`,
  // Clinic A, unit 2, the same patient as A1: a prior that A1's doctor reads.
  A3: `${ROOT_UID}.1.3`,
  B1: `${ROOT_UID}.2.1`,
  B2: `${ROOT_UID}.2.2`,
  U: `${ROOT_UID}.3.1`,
};
type StudyName = keyof typeof STUDY_UIDS;

interface RawResponse {
  status: number;
  body: Buffer;
}

/** GET with the path sent byte for byte as given (a raw `#` or `\` included), on a keep-alive agent. */
function rawGet(agent: http.Agent, port: number, rawPath: string, headers: Record<string, string>): Promise<RawResponse> {
  return new Promise((resolve, reject) => {
    const request = http.request(
      // Node sends a latin1 string's bytes as they are: the UTF-8 bytes of a Unicode look-alike arrive raw.
      { host: '127.0.0.1', port, path: Buffer.from(rawPath, 'utf8').toString('latin1'), headers, agent },
      (response) => {
        const chunks: Buffer[] = [];
        response.on('data', (chunk: Buffer) => chunks.push(chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: Buffer.concat(chunks) }));
        response.on('error', reject);
      },
    );
    request.on('error', reject);
    request.end();
  });
}

/** mulberry32: a small seeded generator, so the URI set is the same on every run. */
function seeded(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The study UIDs (0020000D) and patient ids (00100020) of a DICOM JSON answer, wherever they are. */
function studiesIn(body: Buffer): { uids: Set<string>; patients: Set<string> } {
  const uids = new Set<string>();
  const patients = new Set<string>();
  let json: unknown;
  try {
    json = JSON.parse(body.toString('utf8'));
  } catch {
    return { uids, patients };
  }
  const walk = (value: unknown): void => {
    if (Array.isArray(value)) return value.forEach(walk);
    if (!value || typeof value !== 'object') return;
    for (const [key, element] of Object.entries(value as Record<string, unknown>)) {
      const first = (element as { Value?: unknown[] })?.Value?.[0];
      if (key === '0020000D' && typeof first === 'string') uids.add(first);
      if (key === '00100020' && typeof first === 'string') patients.add(first);
      walk(element);
    }
  };
  walk(json);
  return { uids, patients };
}

/**
 * The URI generator. Each URI is a path (a QIDO-RS root, or under /studies/<uid>, or a path trick)
 * and a query of study filters in many spellings, other keys, and characters Orthanc reads its own
 * way (`#`, `\`, `;`, `+`, percent-encodings, Unicode look-alikes).
 */
function generateUris(
  random: () => number,
  uids: Record<StudyName, string>,
  seriesOf: Record<StudyName, string>,
  sopOf: Record<StudyName, string>,
): string[] {
  const pick = <T>(items: readonly T[]): T => items[Math.floor(random() * items.length)];
  const chance = (p: number) => random() < p;
  const randomCase = (text: string) => [...text].map((c) => (chance(0.5) ? c.toUpperCase() : c.toLowerCase())).join('');
  const percentEncodeSome = (text: string) =>
    [...text].map((c) => (chance(0.3) ? `%${c.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}` : c)).join('');
  const studyName = (): StudyName => pick<StudyName>(['A1', 'A1', 'A2', 'A3', 'B1', 'B2', 'U']);
  const uid = (): string => (chance(0.9) ? uids[studyName()] : `${ROOT_UID}.9.${Math.floor(random() * 1000)}`);

  // A third of the URIs are well formed (the forms viewers send), so that the allowed side is exercised
  // as much as the refused one; the rest mix in every oddity.
  let clean = false;
  const CANONICAL_KEYS = ['StudyInstanceUID', '0020000D', '0020000d', '0020,000D', '0020-000d'];
  const filterKey = (): string =>
    clean
      ? pick(CANONICAL_KEYS)
      : pick([
          () => 'StudyInstanceUID',
          () => 'StudyInstanceUID',
          () => 'StudyInstanceUIDs',
          () => randomCase('StudyInstanceUID'),
          () => pick(['0020000D', '0020000d', '0020,000D', '0020,000d', '0020-000D', '0020-000d', '0020000D']),
          () =>
            pick([
              '20,d',
              '0x20,0xd',
              '0X20,0XD',
              '0x0020,0x000D',
              '+20,+d',
              '10020,d',
              '20,1000d',
              '-ffe0,d',
              '0020,000Dx',
              '20,d,',
              '0020,000D)',
            ]),
          () =>
            pick([
              '(0020,000D)',
              '(0020,000d)',
              '0020:000D',
              '0020.000D',
              '00020000D',
              '0020000D0',
              '0020 000D'.replace(' ', '%20'),
            ]),
          () => percentEncodeSome('StudyInstanceUID'),
          () => percentEncodeSome(pick(['0020000D', '0020,000D', '20,d'])),
          () =>
            pick([
              '\u0405tudyInstanceUID',
              '\uff33tudyInstanceUID',
              'StudyInstanceU\u0399D',
              '0020000\u0044',
              '0020000\uff24',
              '\u2070020000D',
            ]),
          () =>
            pick(['StudyInstanceUID+', '+StudyInstanceUID', 'StudyInstanceUID%20', 'StudyInstanceUID;', 'StudyInstanceUID%00']),
        ])();

  const separator = (): string =>
    clean ? pick([',', '%2C']) : pick([',', ',', '%2C', '%2c', '\\', '%5C', '+', ';', '%20', ',,']);
  const filterValue = (): string => {
    const count = chance(0.7) ? 1 : 2 + Math.floor(random() * 2);
    let value = Array.from({ length: count }, uid).join(separator());
    if (clean) return value;
    if (chance(0.1)) value = '';
    if (chance(0.05)) value = `${uid().slice(0, -2)}*`;
    if (chance(0.08)) value = percentEncodeSome(value);
    if (chance(0.05)) value = value.replace(/\./, '\\.');
    if (chance(0.04)) value = `${value}#`;
    return value;
  };

  const otherParameter = (): string =>
    pick([
      () => `limit=${pick(['1', '10', '101', '0', ''])}`,
      () => `offset=${pick(['0', '1', '5'])}`,
      () => `fuzzymatching=${pick(['false', 'true'])}`,
      () =>
        `includefield=${pick(['all', '00081030', '00081030%2C00080060', '00081030,00080060', '0020000D', 'StudyInstanceUID'])}`,
      () => `PatientID=${pick(['A-1', 'B-1', 'B-*', '*', '', `B-1%26StudyInstanceUID%3D${uids.B1}`])}`,
      () => `PatientName=${pick(['DOE^A*', 'THEIRS*', '*'])}`,
      () => `ModalitiesInStudy=${pick(['CT', 'MR'])}`,
      () => `StudyDate=${pick(['20240115', '20200101-', ''])}`,
      () => `SeriesInstanceUID=${seriesOf[studyName()]}`,
      () => `SOPInstanceUID=${sopOf[studyName()]}`,
      () => `quality=${pick(['90', '100'])}`,
      () => `accept=${pick(['application/dicom%2Bjson', 'image/jpeg'])}`,
      () => (clean ? 'limit=5' : pick(['foo=1', 'token=abc', 'studyinstanceuids=1', '=x', 'limit', ''])),
    ])();

  const studyPath = (): string => {
    const name = studyName();
    const own = uids[name];
    const other = studyName();
    return pick(
      clean
        ? [
            () => `/dicom-web/studies/${own}/series`,
            () => `/dicom-web/studies/${own}/metadata`,
            () => `/dicom-web/studies/${own}/series/${seriesOf[other]}/metadata`,
            () => `/dicom-web/studies/${own}/series/${seriesOf[name]}/instances/${sopOf[other]}/metadata`,
          ]
        : [
            () => `/dicom-web/studies/${own}`,
            () => `/dicom-web/studies/${own}/series`,
            () => `/dicom-web/studies/${own}/instances`,
            () => `/dicom-web/studies/${own}/metadata`,
            () => `/dicom-web/studies/${own}/series/${seriesOf[other]}/metadata`,
            () => `/dicom-web/studies/${own}/series/${seriesOf[other]}/instances`,
            () => `/dicom-web/studies/${own}/series/${seriesOf[name]}/instances/${sopOf[other]}/metadata`,
            () => `/dicom-web/studies/${own}/../${uids[other]}/series`,
            () => `/dicom-web/studies/${own}/series/..`,
            () => `/dicom-web/studies/${own}%2F..%2F${uids[other]}/series`,
            () => `/dicom-web/studies/${own}#/../${uids[other]}/series`,
            () => `/dicom-web/studies/${own}\\/series`,
          ],
    )();
  };
  const searchPath = (): string =>
    clean
      ? pick(['/dicom-web/studies', '/dicom-web/series', '/dicom-web/instances'])
      : pick([
          '/dicom-web/studies',
          '/dicom-web/studies',
          '/dicom-web/series',
          '/dicom-web/instances',
          '/dicom-web//studies',
          '/dicom-web/studies/',
          '/dicom-web/Studies',
          '/dicom-web/studies;x',
          '/dicom-web/servers',
        ]);

  const uris = new Set<string>();
  while (uris.size < URI_COUNT) {
    clean = chance(1 / 3);
    const parts: string[] = [];
    const filters = clean ? (chance(0.9) ? 1 : 0) : chance(0.15) ? 0 : chance(0.7) ? 1 : 2 + Math.floor(random() * 2);
    for (let i = 0; i < filters; i++) parts.push(`${filterKey()}=${filterValue()}`);
    const others = Math.floor(random() * 4);
    for (let i = 0; i < others; i++) parts.push(otherParameter());
    // Shuffle, so that the filter is sometimes first, sometimes last (Orthanc: the last one wins).
    for (let i = parts.length - 1; i > 0; i--) {
      const j = Math.floor(random() * (i + 1));
      [parts[i], parts[j]] = [parts[j], parts[i]];
    }
    let query = parts.join(!clean && chance(0.05) ? ';' : '&');
    if (!clean && chance(0.06)) query = query.replace('&', '#&');
    if (!clean && chance(0.03)) query = `&${query}&&`;
    const base = chance(0.45) ? studyPath() : searchPath();
    uris.add(query === '' && chance(0.5) ? base : `${base}?${query}`);
  }
  return [...uris];
}

describe('the viewer gate against the real image server', () => {
  let workDir: string;
  let orthanc: OrthancInstance;
  let t: TestApp;
  let apiPort: number;
  let clinicA: Awaited<ReturnType<typeof createClinic>>;
  let viewerToken: string;
  let shareToken: string;
  let shareViewerToken: string;
  const written = {} as Record<StudyName, WrittenStudy>;
  const patientOf = {} as Record<StudyName, string>;
  const apiAgent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });
  const orthancAgent = new http.Agent({ keepAlive: true, maxSockets: CONCURRENCY });

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-gate-'));
    orthanc = await startOrthanc({ username: 'svc', password: 'svc-gate-password' });
    t = await createTestApp({
      IMGSRV_URL: orthanc.url,
      IMGSRV_USERNAME: orthanc.username,
      IMGSRV_PASSWORD: orthanc.password,
      // Thousands of refused URIs per token: the refused-UID limit has its own tests.
      VIEWER_REFUSED_UIDS_PER_MINUTE: '1000000',
    });
    await t.app.listen(0, '127.0.0.1');
    apiPort = (t.app.getHttpServer().address() as AddressInfo).port;
    clinicA = await createClinic(t.db, t.http);
    const clinicB = await createClinic(t.db, t.http);
    const places: Record<StudyName, { tenant_id: string; unit_id: string } | null> = {
      A1: { tenant_id: clinicA.tenant.id, unit_id: clinicA.unit1.id },
      A2: { tenant_id: clinicA.tenant.id, unit_id: clinicA.unit2.id },
      A3: { tenant_id: clinicA.tenant.id, unit_id: clinicA.unit2.id },
      B1: { tenant_id: clinicB.tenant.id, unit_id: clinicB.unit1.id },
      B2: { tenant_id: clinicB.tenant.id, unit_id: clinicB.unit2.id },
      // In the image server, not in the archive (sent by nobody the archive knows).
      U: null,
    };
    const authorization = basicAuth(orthanc.username, orthanc.password);
    for (const name of Object.keys(STUDY_UIDS) as StudyName[]) {
      patientOf[name] = name === 'A3' ? 'A-1' : `${name[0]}-${name.slice(1)}`;
      written[name] = await writeStudy(path.join(workDir, name), {
        patientId: patientOf[name],
        patientName: name.startsWith('A') ? `DOE^${name}` : `THEIRS^${name}`,
        studyInstanceUid: STUDY_UIDS[name],
        studyDate: '20240115',
        series: [{ modality: 'CT', seriesNumber: 1, instances: 1, rows: 16, columns: 16 }],
      });
      for (const file of written[name].files) {
        const response = await fetch(`${orthanc.url}/instances`, {
          method: 'POST',
          headers: { Authorization: authorization },
          body: await fs.readFile(file),
        });
        expect(response.status).toBe(200);
      }
      const place = places[name];
      if (place) await createStudy(t.db, { ...place, study_instance_uid: STUDY_UIDS[name], patient_id: patientOf[name] });
    }
    const [a1] = await t.db.query(
      `SELECT id, tenant_id, study_instance_uid, patient_id FROM studies WHERE study_instance_uid = $1`,
      [STUDY_UIDS.A1],
    );
    // User 1 is a doctor of unit 1.
    const issued = await t.http.post('/api/viewer/token', { token: clinicA.token1, body: { study_id: a1.id } });
    expect(issued.status).toBe(200);
    viewerToken = issued.body.token;
    // A share's token, issued as the shares feature issues it (through the one issuing path), by the clinic's admin.
    shareToken = (await t.app.get(ViewerService).issueForShare(
      {
        share_id: '5a1e0000-0000-4000-8000-0000000000a1',
        created_by: clinicA.admin.id,
        tenant_id: a1.tenant_id,
        unit_id: clinicA.unit1.id,
        study_id: a1.id,
        study_instance_uid: a1.study_instance_uid,
      },
      600,
    ))!.token;
    const share = await t.http.post(`/api/studies/${a1.id}/shares`, { token: clinicA.token1, body: { max_uses: 1 } });
    expect(share.status).toBe(201);
    const opened = await t.http.post('/api/shares/open', { body: { token: share.body.token } });
    expect(opened.status).toBe(200);
    shareViewerToken = opened.body.viewer_token;
  });

  afterAll(async () => {
    apiAgent.destroy();
    orthancAgent.destroy();
    await t?.close();
    await orthanc?.destroy();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  });

  it(`lets no generated URI (${URI_COUNT}, seed ${SEED}) that the validator allows reach a study outside the caller's scope`, async () => {
    const seriesOf = {} as Record<StudyName, string>;
    const sopOf = {} as Record<StudyName, string>;
    for (const name of Object.keys(written) as StudyName[]) {
      seriesOf[name] = written[name].seriesUids[0];
      sopOf[name] = written[name].sopInstanceUids[0];
    }
    const uris = generateUris(seeded(SEED), STUDY_UIDS, seriesOf, sopOf);
    // User 1's viewer token for A1 reads unit 1 (A1) and the patient's prior in unit 2 (A3), not A2;
    // a share's token (issued directly, or through a share link opened as a recipient does) reads A1
    // only; user 1's session, unit 1 only (A1).
    const callers: Array<{ name: string; headers: Record<string, string>; scope: Set<string> }> = [
      {
        name: "unit doctor's viewer token",
        headers: { 'x-viewer-token': viewerToken },
        scope: new Set([STUDY_UIDS.A1, STUDY_UIDS.A3]),
      },
      { name: "share's viewer token", headers: { 'x-viewer-token': shareToken }, scope: new Set([STUDY_UIDS.A1]) },
      { name: 'session', headers: { authorization: `Bearer ${clinicA.token1}` }, scope: new Set([STUDY_UIDS.A1]) },
      { name: 'share token', headers: { 'x-viewer-token': shareViewerToken }, scope: new Set([STUDY_UIDS.A1]) },
    ];
    // A patient id in an answer that carries no study UID stands for its patient's first study (A-1: A1).
    const foreignPatients = new Map<string, string>();
    for (const [name, uid] of Object.entries(STUDY_UIDS)) {
      if (!foreignPatients.has(patientOf[name as StudyName])) foreignPatients.set(patientOf[name as StudyName], uid);
    }
    const counts = Object.fromEntries(
      callers.map(({ name }) => [name, { allowed: 0, refused: 0, leaks: 0, refusedThatWouldLeak: 0 }]),
    );
    const leaks: string[] = [];
    let orthancReturnedForeign = 0;

    let next = 0;
    const worker = async () => {
      while (next < uris.length) {
        const uri = uris[next++];
        const image = await rawGet(orthancAgent, orthanc.httpPort, uri, {
          Authorization: basicAuth(orthanc.username, orthanc.password),
          Accept: 'application/dicom+json',
        });
        const returned = studiesIn(image.status === 200 ? image.body : Buffer.alloc(0));
        for (const patient of returned.patients) returned.uids.add(foreignPatients.get(patient) ?? `patient:${patient}`);
        for (const caller of callers) {
          const wireUri = Buffer.from(uri, 'utf8').toString('latin1');
          const verdict = await rawGet(apiAgent, apiPort, VALIDATE, { ...caller.headers, 'x-original-uri': wireUri });
          expect({ uri, status: [200, 403].includes(verdict.status) ? 'ok' : verdict.status }).toEqual({ uri, status: 'ok' });
          const outside = [...returned.uids].filter((uid) => !caller.scope.has(uid));
          const tally = counts[caller.name];
          if (verdict.status === 200) {
            tally.allowed++;
            if (outside.length > 0) {
              tally.leaks++;
              leaks.push(`${caller.name}: ${uri} -> ${outside.join(' ')}`);
            }
          } else {
            tally.refused++;
            if (outside.length > 0) tally.refusedThatWouldLeak++;
          }
        }
        if ([...returned.uids].some((uid) => !uid.startsWith(`${ROOT_UID}.1.`))) orthancReturnedForeign++;
      }
    };
    await Promise.all(Array.from({ length: CONCURRENCY }, worker));

    process.stdout.write(
      `\nviewer gate differential (seed ${SEED}, ${uris.length} URIs, Orthanc returned another clinic's study for ` +
        `${orthancReturnedForeign}):\n` +
        callers
          .map(({ name }) => {
            const c = counts[name];
            return `  ${name}: allowed ${c.allowed}, refused ${c.refused} (of which Orthanc would have leaked ${c.refusedThatWouldLeak}), leaks ${c.leaks}`;
          })
          .join('\n') +
        '\n',
    );
    expect(leaks).toEqual([]);
    // The test must exercise both sides: URIs that pass, and URIs that would have leaked.
    for (const { name } of callers) {
      expect(counts[name].allowed).toBeGreaterThan(100);
      expect(counts[name].refusedThatWouldLeak).toBeGreaterThan(100);
    }
  });

  describe('through the shipped nginx', () => {
    let nginx: NginxInstance;
    const agent = new http.Agent({ keepAlive: false });
    beforeAll(async () => {
      nginx = await startNginx({
        apiPort,
        orthancPort: orthanc.httpPort,
        orthancUser: orthanc.viewerUsername,
        orthancPassword: orthanc.viewerPassword,
      });
    });
    afterAll(async () => {
      agent.destroy();
      await nginx?.stop();
    });
    const viaNginx = async (uri: string, headers: Record<string, string>) => {
      const response = await rawGet(agent, Number(new URL(nginx.url).port), uri, headers);
      return { status: response.status, studies: [...studiesIn(response.body).uids].sort() };
    };

    it("refuses each spelling that once leaked, or answers with the caller's study only", async () => {
      const own = STUDY_UIDS.A1;
      const other = STUDY_UIDS.B1;
      const spellings = [
        `/dicom-web/studies?StudyInstanceUIDs=${own}`,
        `/dicom-web/studies?studyinstanceuid=${own}`,
        `/dicom-web/studies?(0020,000D)=${own}`,
        `/dicom-web/studies?%53tudyInstanceUID=${own}`,
        `/dicom-web/studies?StudyInstanceUID=${own}&0020-000D=${other}`,
        `/dicom-web/studies?StudyInstanceUID=${own}&20,d=${other}`,
        `/dicom-web/studies?StudyInstanceUID=${own}&0x20,0xd=${other}`,
        `/dicom-web/studies?StudyInstanceUID=${own}#&StudyInstanceUID=${other}`,
        `/dicom-web/studies?StudyInstanceUID=${own}&StudyInstanceUID=`,
        `/dicom-web/studies?StudyInstanceUID=${own}&StudyInstanceUID=${other}`,
        `/dicom-web/studies?StudyInstanceUID=${own}\\${other}`,
        `/dicom-web/studies?limit=10`,
        `/dicom-web/series?PatientID=${patientOf.B1}`,
      ];
      // A viewer token's search goes through the validator to Orthanc: every spelling is refused.
      const viewerTokenSets: Array<Record<string, string>> = [
        { 'x-viewer-token': viewerToken },
        { authorization: `Bearer ${viewerToken}` },
      ];
      for (const credentials of viewerTokenSets) {
        for (const uri of spellings) {
          const answer = await viaNginx(uri, credentials);
          expect({ uri, answer }).toEqual({ uri, answer: { status: 403, studies: [] } });
        }
        const allowed = await viaNginx(`/dicom-web/studies?StudyInstanceUID=${own}&includefield=00081030`, credentials);
        expect(allowed).toEqual({ status: 200, studies: [own] });
      }
      // A session's study search at /dicom-web/studies is the archive's own QIDO-RS search
      // (decisions.md 3b): whatever the spelling, it answers within user 1's scope (unit 1: A1), or
      // refuses; every other root still goes through the validator to Orthanc.
      const session = { authorization: `Bearer ${clinicA.token1}` };
      for (const uri of spellings) {
        const answer = await viaNginx(uri, session);
        if (uri.startsWith('/dicom-web/studies?')) {
          expect({
            uri,
            ok: [200, 400, 403].includes(answer.status),
            outside: answer.studies.filter((uid) => uid !== own),
          }).toEqual({ uri, ok: true, outside: [] });
        } else {
          expect({ uri, answer }).toEqual({ uri, answer: { status: 403, studies: [] } });
        }
      }
      expect(await viaNginx(`/dicom-web/studies?StudyInstanceUID=${own}&includefield=00081030`, session)).toEqual({
        status: 200,
        studies: [own],
      });
      expect(await viaNginx(`/dicom-web/studies?StudyInstanceUID=${other}`, session)).toEqual({ status: 200, studies: [] });
      expect(nginx.errorLog()).not.toMatch(/auth request unexpected status/);
    });

    it('renders within the bounds and refuses a rendering out of them before the image server allocates it', async () => {
      const instance = `/dicom-web/studies/${STUDY_UIDS.A1}/series/${written.A1.seriesUids[0]}/instances/${written.A1.sopInstanceUids[0]}/rendered`;
      const render = async (query: string) => {
        const response = await rawGet(agent, Number(new URL(nginx.url).port), `${instance}?${query}`, {
          'x-viewer-token': viewerToken,
          accept: 'image/jpeg',
        });
        return {
          status: response.status,
          jpeg: response.body.subarray(0, 2).toString('hex') === 'ffd8',
          bytes: response.body.length,
        };
      };
      const small = await render('viewport=64,64&quality=80');
      expect({ status: small.status, jpeg: small.jpeg }).toEqual({ status: 200, jpeg: true });
      for (const query of ['viewport=8000,8000', 'viewport=30000,30000', 'quality=1000', 'window=40,400,cubic']) {
        expect({ query, answer: await render(query) }).toEqual({
          query,
          answer: { status: 403, jpeg: false, bytes: expect.any(Number) },
        });
      }
    });

    it("refuses a rendering the image server's decoders are unsafe on, and a study's or a series' rendering; their metadata still reads", async () => {
      // Clinic A, unit 1 (the doctor's token reads it): a normal image, Rows and Columns as UL, PALETTE COLOR.
      const crafted = await writeStudy(path.join(workDir, 'crafted'), {
        patientId: 'A-9',
        patientName: 'DOE^CRAFTED',
        studyDate: '20240115',
        series: [
          { modality: 'CT', seriesNumber: 1, instances: 1, rows: 16, columns: 16 },
          { modality: 'CT', seriesNumber: 2, instances: 1, rows: 16, columns: 16, dimensionsVr: 'UL' },
          { modality: 'CT', seriesNumber: 3, instances: 1, rows: 16, columns: 16, photometric: 'PALETTE COLOR' },
        ],
      });
      const service = { Authorization: basicAuth(orthanc.username, orthanc.password) };
      for (const file of crafted.files) {
        const stored = await fetch(`${orthanc.url}/instances`, {
          method: 'POST',
          headers: service,
          body: await fs.readFile(file),
        });
        expect(stored.status).toBe(200);
      }
      const uid = crafted.studyInstanceUid;
      await createStudy(t.db, {
        tenant_id: clinicA.tenant.id,
        unit_id: clinicA.unit1.id,
        study_instance_uid: uid,
        patient_id: 'A-9',
      });
      const instance = (k: number) =>
        `/dicom-web/studies/${uid}/series/${crafted.seriesUids[k]}/instances/${crafted.sopInstanceUids[k]}`;
      // The image server renders the UL one when asked directly: the gate is what keeps it away.
      expect((await fetch(`${orthanc.url}${instance(1)}/rendered`, { headers: service })).status).toBe(200);
      const statusOf = async (uri: string, accept = 'image/jpeg') =>
        (await rawGet(agent, Number(new URL(nginx.url).port), uri, { 'x-viewer-token': viewerToken, accept })).status;
      const answers: Record<string, number> = {};
      for (const uri of [
        `${instance(0)}/rendered`,
        `${instance(0)}/frames/1/rendered?quality=80`,
        `${instance(1)}/rendered`,
        `${instance(1)}/frames/1/rendered`,
        `${instance(2)}/rendered`,
        `/dicom-web/studies/${uid}/rendered`,
        `/dicom-web/studies/${uid}/series/${crafted.seriesUids[0]}/rendered`,
      ]) {
        answers[uri] = await statusOf(uri);
      }
      expect(answers).toEqual({
        [`${instance(0)}/rendered`]: 200,
        [`${instance(0)}/frames/1/rendered?quality=80`]: 200,
        [`${instance(1)}/rendered`]: 403,
        [`${instance(1)}/frames/1/rendered`]: 403,
        [`${instance(2)}/rendered`]: 403,
        [`/dicom-web/studies/${uid}/rendered`]: 403,
        [`/dicom-web/studies/${uid}/series/${crafted.seriesUids[0]}/rendered`]: 403,
      });
      expect(await statusOf(`${instance(1)}/metadata`, 'application/dicom+json')).toBe(200);
      expect(nginx.errorLog()).not.toMatch(/auth request unexpected status/);
    });

    it("keeps tokens out of the access log: the viewer URL's token=, a bearer, X-Viewer-Token", async () => {
      const secret = 'f00dcafe-0000-4000-8000-00000000beef';
      await viaNginx(`/viewer?StudyInstanceUIDs=${STUDY_UIDS.A1}&token=${secret}`, {});
      await viaNginx(`/viewer?%74oken=${secret}`, {});
      await viaNginx(`/dicom-web/studies/${STUDY_UIDS.A1}/series?token=${secret}`, { authorization: `Bearer ${viewerToken}` });
      await viaNginx(`/dicom-web/studies/${STUDY_UIDS.A1}/series`, { 'x-viewer-token': viewerToken });
      await viaNginx(`/api/studies?token=${secret}`, { authorization: `Bearer ${clinicA.token1}` });
      // nginx writes a request's log line when it ends: the last line is there once it has answered.
      const log = nginx.accessLog();
      expect(log).toContain(`"GET /viewer?- HTTP/1.1"`);
      expect(log).toContain(`"GET /dicom-web/studies/${STUDY_UIDS.A1}/series HTTP/1.1" 200`);
      for (const token of [secret, viewerToken, clinicA.token1]) expect(log).not.toContain(token);
    });
  });

  it("keeps tokens and search text out of the API's request log: path and query keys only (the built API, logging every request)", async () => {
    const api = await startBuiltProcess(
      'main',
      { QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}_log`, LOG_LEVEL: 'info' },
      { port: await getFreePort() },
    );
    try {
      const secret = 'f00dcafe-0000-4000-8000-00000000beef';
      await fetch(`${api.url}/api/studies?page=1&search=THEIRS%5EPATIENT&token=${secret}&%74oken=${secret}`, {
        headers: { authorization: `Bearer ${clinicA.token1}` },
      });
      await fetch(`${api.url}/api/health?access_token=${secret}`, {
        headers: { 'x-viewer-token': viewerToken, cookie: `pacs_access_token=${clinicA.token1}` },
      });
      // A request is logged when its response has gone, and the line reaches this process through
      // the child's stdout some time after the client has the answer: wait for both lines.
      const logged = await waitFor(
        'both requests in the log',
        async () => {
          const output = api.output();
          return output.includes('/api/studies?') && output.includes('/api/health?') && output;
        },
        10_000,
      );
      expect(logged).toContain('/api/studies?page&search&token&[key]');
      expect(logged).toContain('/api/health?access_token');
      for (const text of [secret, viewerToken, clinicA.token1, 'THEIRS', 'PATIENT']) expect(logged).not.toContain(text);
    } finally {
      await api.stop();
    }
  });

  it('logs a client that hangs up before a streamed answer starts at info, not as a server error (the built API)', async () => {
    const { series } = await createImagedStudy(t.db, clinicA.tenant.id, clinicA.unit1.id);
    await t.db.query(
      `INSERT INTO instances (series_id, imgsrv_instance_id, sop_instance_uid, instance_number)
       SELECT $1::uuid, 'gone-' || $1::text || '-' || n, '1.2.4.' || n, n FROM generate_series(1, 300) AS n`,
      [series.id],
    );
    const api = await startBuiltProcess(
      'main',
      { QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}_gone`, LOG_LEVEL: 'info' },
      { port: await getFreePort() },
    );
    try {
      const request = `GET /api/series/${series.id}/instances HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${clinicA.token1}\r\n\r\n`;
      // The whole request, then the connection closed at once: the API answers a socket that is gone.
      for (let n = 0; n < 5; n++) {
        await new Promise<void>((resolve, reject) => {
          const socket = connect(Number(new URL(api.url).port), '127.0.0.1', () =>
            socket.end(request, () => {
              socket.destroy();
              resolve();
            }),
          );
          socket.on('error', reject);
        });
      }
      const answered = await fetch(`${api.url}/api/series/${series.id}/instances`, {
        headers: { authorization: `Bearer ${clinicA.token1}` },
      });
      expect(answered.status).toBe(200);
      expect(await answered.json()).toHaveLength(301);
      const logged = await waitFor(
        'the hang-ups in the log',
        async () => {
          const output = api.output();
          return (output.match(/client closed the connection before the answer started/g) ?? []).length >= 5 && output;
        },
        10_000,
      ).catch(() => api.output());
      expect(logged).not.toContain('"level":50');
      expect(logged).not.toContain('"statusCode":500');
      expect((logged.match(/client closed the connection before the answer started/g) ?? []).length).toBe(5);
    } finally {
      await api.stop();
    }
  });
});
