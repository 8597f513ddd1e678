/**
 * STOW-RS (POST /api/dicom-web/studies) against the real Orthanc, with the worker indexing what
 * arrives: the study lands in the uploader's unit (not quarantine) and stays there when a device
 * sends it later; what is refused leaves nothing in the image server; the shipped nginx sends the
 * viewer's upload to the API.
 */
import { TestingModule } from '@nestjs/testing';
import { randomBytes } from 'crypto';
import { promises as fs } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { AuditService } from '../../src/audit/audit.service';
import { TestApp } from '../support/app';
import { sendWithStorescu, writeStudy, WrittenStudy } from '../../scripts/stack/dicom';
import { createClinic, createSuperAdminUser } from '../support/factories';
import { NginxInstance, startNginx } from '../../scripts/stack/nginx';
import { basicAuth, OrthancInstance, waitFor } from '../../scripts/stack/orthanc';
import { startOrthancAndApi, startWorkerModule } from '../support/stack';

jest.setTimeout(180_000);

type StowItem = Record<string, { vr: string; Value?: unknown[] }>;

function multipart(parts: Array<{ data: Buffer; type?: string }>, boundary = `b-${randomBytes(8).toString('hex')}`) {
  const chunks: Buffer[] = [];
  for (const part of parts) {
    chunks.push(
      Buffer.from(`--${boundary}\r\nContent-Type: ${part.type ?? 'application/dicom'}\r\n\r\n`),
      part.data,
      Buffer.from('\r\n'),
    );
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`));
  return { body: Buffer.concat(chunks), contentType: `multipart/related; type="application/dicom"; boundary=${boundary}` };
}

describe('STOW-RS upload through the real Orthanc', () => {
  let workDir: string;
  let orthanc: OrthancInstance;
  let t: TestApp;
  let apiUrl: string;
  let worker: TestingModule;
  let nginx: NginxInstance;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let superAdmin: Awaited<ReturnType<typeof createSuperAdminUser>>;
  let n = 0;

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-stow-'));
    ({ t, orthanc, apiUrl } = await startOrthancAndApi({
      stableAge: 1,
      env: { RECONCILE_INTERVAL: '0', QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}:stow` },
    }));
    worker = await startWorkerModule(t.config);
    nginx = await startNginx({
      apiPort: Number(new URL(apiUrl).port),
      orthancPort: orthanc.httpPort,
      orthancUser: orthanc.username,
      orthancPassword: orthanc.password,
    });
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    superAdmin = await createSuperAdminUser(t.db, t.http);
  });

  afterAll(async () => {
    await nginx?.stop();
    await worker?.close();
    await t?.close();
    await orthanc?.destroy();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  });

  const study = async (instances = 2, studyInstanceUid?: string, patientId?: string): Promise<WrittenStudy> =>
    writeStudy(path.join(workDir, `s${n++}`), {
      patientId: patientId ?? `UP-${n}`,
      patientName: `UPLOAD^${n}`,
      studyInstanceUid,
      studyDate: '20240301',
      series: [{ modality: 'MR', seriesNumber: 1, instances, rows: 16, columns: 16 }],
    });
  const filesOf = (written: WrittenStudy) => Promise.all(written.files.map((file) => fs.readFile(file)));

  const stow = async (
    parts: Array<{ data: Buffer; type?: string }>,
    token: string,
    options: { query?: string; base?: string; contentType?: string; raw?: Buffer } = {},
  ) => {
    const { body, contentType } = multipart(parts);
    const response = await fetch(`${options.base ?? `${apiUrl}/api`}/dicom-web/studies${options.query ?? ''}`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': options.contentType ?? contentType },
      body: new Uint8Array(options.raw ?? body),
    });
    const text = await response.text();
    let json: Record<string, { Value?: StowItem[] }> = {};
    try {
      json = JSON.parse(text);
    } catch {
      // not JSON
    }
    return { status: response.status, type: response.headers.get('content-type'), json };
  };
  const storedUids = (json: Record<string, { Value?: StowItem[] }>) =>
    (json['00081199']?.Value ?? []).map((item) => item['00081155'].Value?.[0]);
  const refused = (json: Record<string, { Value?: StowItem[] }>) =>
    (json['00081198']?.Value ?? []).map((item) => ({
      uid: item['00081155'].Value?.[0],
      code: item['00081197'].Value?.[0],
      reason: item['00000902'].Value?.[0],
    }));
  const orthancHas = async (sopUid: string) => {
    const response = await fetch(`${orthanc.url}/tools/lookup`, {
      method: 'POST',
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password) },
      body: sopUid,
    });
    return ((await response.json()) as unknown[]).length > 0;
  };
  const placeOf = (uid: string) =>
    waitFor(`study ${uid} indexed`, async () => {
      const [row] = await t.db.query(`SELECT id, tenant_id, unit_id FROM studies WHERE study_instance_uid = $1`, [uid]);
      return row;
    });

  it("stores a regular user's study and places it in their unit; a device sending to it later does not move it", async () => {
    const written = await study(3, undefined, 'UP-DEVICE');
    const res = await stow(
      (await filesOf(written)).map((data) => ({ data })),
      clinic.token1,
    );
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^application\/dicom\+json\b/);
    expect(storedUids(res.json)).toEqual(written.sopInstanceUids);
    expect(res.json['00081198']).toBeUndefined();
    const stored = (res.json['00081199']!.Value as StowItem[])[0];
    expect(stored['00081150'].Value).toEqual(['1.2.840.10008.5.1.4.1.1.4']);
    expect(stored['00081190'].Value).toEqual([
      `/dicom-web/studies/${written.studyInstanceUid}/series/${written.seriesUids[0]}/instances/${written.sopInstanceUids[0]}`,
    ]);
    const place = await placeOf(written.studyInstanceUid);
    expect(place).toMatchObject({ tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
    const list = await t.http.get('/api/studies', { token: clinic.token1 });
    expect(list.body.data.map((s: { id: string }) => s.id)).toContain(place.id);

    // A stranger is refused at the study's door; a device of the clinic's other unit adds to the
    // study (its own clinic's device), and the study stays in the uploader's unit.
    const stranger = await study(1, written.studyInstanceUid, 'UP-DEVICE');
    await expect(sendWithStorescu(stranger.files, { aet: 'STRANGER', port: orthanc.dicomPort })).rejects.toThrow();
    expect(await orthancHas(stranger.sopInstanceUids[0])).toBe(false);
    const aet = `UP_${randomBytes(3).toString('hex').toUpperCase()}`;
    await t.db.query(
      `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, '127.0.0.1')`,
      [clinic.tenant.id, clinic.unit2.id, `MR ${aet}`, aet],
    );
    const fromDevice = await study(1, written.studyInstanceUid, 'UP-DEVICE');
    await sendWithStorescu(fromDevice.files, { aet, port: orthanc.dicomPort });
    expect(await orthancHas(fromDevice.sopInstanceUids[0])).toBe(true);
    // Indexed again, with the device as its latest sender.
    await waitFor('the device instance indexed', async () => {
      const rows = await t.db.query(`SELECT 1 FROM instances WHERE sop_instance_uid = $1`, [fromDevice.sopInstanceUids[0]]);
      return rows.length > 0;
    });
    const [after] = await t.db.query(`SELECT tenant_id, unit_id FROM studies WHERE study_instance_uid = $1`, [
      written.studyInstanceUid,
    ]);
    expect(after).toEqual({ tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });

    await t.app.get(AuditService).flush();
    const logged = await t.db.query(
      `SELECT user_id, tenant_id, patient_id FROM access_logs WHERE action = 'study.upload' AND user_id = $1`,
      [clinic.user1.id],
    );
    expect(logged.length).toBeGreaterThan(0);
    expect(logged[0].tenant_id).toBe(clinic.tenant.id);
    // Recorded before ingestion indexes the new study: the Patient ID comes from the uploaded files.
    expect(logged[0].patient_id).toBe('UP-DEVICE');
  });

  it("places an instance uploaded into a device's study under another Patient ID beside that study, not in quarantine", async () => {
    const aet = `UP_${randomBytes(3).toString('hex').toUpperCase()}`;
    await t.db.query(
      `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, '127.0.0.1')`,
      [clinic.tenant.id, clinic.unit1.id, `CT ${aet}`, aet],
    );
    const sent = await study(1, undefined, `PID-DEVICE-${n}`);
    await sendWithStorescu(sent.files, { aet, port: orthanc.dicomPort });
    expect(await placeOf(sent.studyInstanceUid)).toMatchObject({ tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
    // The same study as another hospital's CD carries it: another Patient ID (the image server files it apart).
    const copy = await study(1, sent.studyInstanceUid, `PID-OTHER-${n}`);
    const res = await stow([{ data: (await filesOf(copy))[0] }], clinic.adminToken, { query: `?unit_id=${clinic.unit2.id}` });
    expect(storedUids(res.json)).toEqual(copy.sopInstanceUids);
    await waitFor('the uploaded instance indexed', async () => {
      const rows = await t.db.query(`SELECT 1 FROM instances WHERE sop_instance_uid = $1`, [copy.sopInstanceUids[0]]);
      return rows.length > 0;
    });
    const places = await t.db.query(`SELECT tenant_id, unit_id FROM studies WHERE study_instance_uid = $1`, [
      sent.studyInstanceUid,
    ]);
    expect(places).toEqual([
      { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id },
      { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id },
    ]);
    // The unit's users still open the study in the viewer.
    const gate = await t.http.get('/api/viewer/token/validate', {
      token: clinic.token1,
      headers: { 'x-original-uri': `/dicom-web/studies/${sent.studyInstanceUid}/series` },
    });
    expect(gate.status).toBe(200);
  });

  it("places a tenant admin's upload in the unit named by unit_id", async () => {
    const written = await study(1);
    const res = await stow([{ data: (await filesOf(written))[0] }], clinic.adminToken, {
      query: `?unit_id=${clinic.unit2.id}`,
    });
    expect(res.status).toBe(200);
    expect(storedUids(res.json)).toEqual(written.sopInstanceUids);
    expect(await placeOf(written.studyInstanceUid)).toMatchObject({ tenant_id: clinic.tenant.id, unit_id: clinic.unit2.id });
  });

  it.each([
    ['no unit_id', '', 'The unit id field is required.'],
    ['a unit of another clinic', () => `?unit_id=${other.unit1.id}`, 'The selected unit id is invalid.'],
    ['an unknown unit', '?unit_id=00000000-0000-4000-8000-000000000000', 'The selected unit id is invalid.'],
    ['a unit_id that is not a uuid', '?unit_id=nope', 'The unit id field must be a valid UUID.'],
  ])('answers 422 errors.unit_id to a tenant admin with %s', async (_, query, message) => {
    const written = await study(1);
    const res = await stow([{ data: (await filesOf(written))[0] }], clinic.adminToken, {
      query: typeof query === 'function' ? query() : query,
    });
    expect(res.status).toBe(422);
    expect(res.json).toEqual({ message, errors: { unit_id: [message] } });
    expect(await orthancHas(written.sopInstanceUids[0])).toBe(false);
  });

  it.each([
    ['no unit_id', '', 'The unit id field is required.'],
    ['an unknown unit', '?unit_id=00000000-0000-4000-8000-000000000000', 'The selected unit id is invalid.'],
  ])('answers 422 errors.unit_id to a super admin with %s', async (_, query, message) => {
    const written = await study(1);
    const res = await stow([{ data: (await filesOf(written))[0] }], superAdmin.token, { query });
    expect(res.status).toBe(422);
    expect(res.json).toEqual({ message, errors: { unit_id: [message] } });
    expect(await orthancHas(written.sopInstanceUids[0])).toBe(false);
  });

  it("places a super admin's upload in the unit named by unit_id, of any clinic", async () => {
    const written = await study(1);
    const res = await stow([{ data: (await filesOf(written))[0] }], superAdmin.token, { query: `?unit_id=${other.unit2.id}` });
    expect(res.status).toBe(200);
    expect(storedUids(res.json)).toEqual(written.sopInstanceUids);
    expect(await placeOf(written.studyInstanceUid)).toMatchObject({ tenant_id: other.tenant.id, unit_id: other.unit2.id });
  });

  it("refuses, storing nothing, an instance of another clinic's study, and for a regular user one of another unit", async () => {
    const written = await study(1);
    expect((await stow([{ data: (await filesOf(written))[0] }], clinic.token1)).status).toBe(200);
    await placeOf(written.studyInstanceUid);
    const more = await study(2, written.studyInstanceUid);
    const [first, second] = await filesOf(more);

    const foreign = await stow([{ data: first }], other.adminToken, { query: `?unit_id=${other.unit1.id}` });
    expect(foreign.status).toBe(200);
    expect(refused(foreign.json)).toEqual([
      { uid: more.sopInstanceUids[0], code: 0x0124, reason: 'the study is archived outside what this upload may add to' },
    ]);
    expect(foreign.json['00081199']).toBeUndefined();

    const otherUnit = await stow([{ data: first }], clinic.token2);
    expect(refused(otherUnit.json)).toEqual([
      { uid: more.sopInstanceUids[0], code: 0x0124, reason: 'the study is archived outside what this upload may add to' },
    ]);
    expect(await orthancHas(more.sopInstanceUids[0])).toBe(false);

    // The clinic's admin may add to it, whatever unit they name: the study stays in its unit.
    const admin = await stow([{ data: second }], clinic.adminToken, { query: `?unit_id=${clinic.unit2.id}` });
    expect(storedUids(admin.json)).toEqual([more.sopInstanceUids[1]]);
  });

  it('refuses an instance that would replace an archived one with other content; the same content again is stored', async () => {
    const written = await study(1);
    const [original] = await filesOf(written);
    expect(storedUids((await stow([{ data: original }], clinic.token1)).json)).toEqual(written.sopInstanceUids);
    const tampered = Buffer.from(original);
    tampered[tampered.length - 1] ^= 0xff;
    const res = await stow([{ data: tampered }, { data: original }], clinic.token1);
    expect(res.status).toBe(200);
    expect(refused(res.json)).toEqual([
      { uid: written.sopInstanceUids[0], code: 0x0124, reason: 'it would replace an archived instance with other content' },
    ]);
    expect(storedUids(res.json)).toEqual(written.sopInstanceUids);
    const md5 = await fetch(`${orthanc.url}/tools/lookup`, {
      method: 'POST',
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password) },
      body: written.sopInstanceUids[0],
    }).then((r) => r.json() as Promise<Array<{ ID: string }>>);
    const file = await fetch(`${orthanc.url}/instances/${md5[0].ID}/file`, {
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password) },
    });
    expect(Buffer.from(await file.arrayBuffer())).toEqual(original);
  });

  it('takes two parts of one instance in one body in turn: the second, with other content, is refused', async () => {
    const written = await study(1);
    const [original] = await filesOf(written);
    const tampered = Buffer.from(original);
    tampered[tampered.length - 1] ^= 0xff;
    const res = await stow([{ data: original }, { data: tampered }], clinic.token1);
    expect(storedUids(res.json)).toEqual(written.sopInstanceUids);
    expect(refused(res.json)).toEqual([
      { uid: written.sopInstanceUids[0], code: 0x0124, reason: 'it would replace an archived instance with other content' },
    ]);
  });

  // Two uploads of one instance with other content, at once: checked apart, each found it not
  // archived and the second replaced the first. One is stored, the others refused, and the image
  // server holds the content of the one stored.
  it.each([
    ['in a new study, from two bodies of one user', 1],
    ['in a new study, from 6 bodies at once', 5],
  ])('takes concurrent uploads of one instance in turn %s', async (_, tampered) => {
    const written = await study(3);
    const files = await filesOf(written);
    const versions = [files[0]];
    for (let i = 0; i < tampered; i++) {
      const copy = Buffer.from(files[0]);
      copy[copy.length - 1 - i] ^= 0xff;
      versions.push(copy);
    }
    // Each body also carries the study's other instances, so each may be the one that brings the study.
    const answers = await Promise.all(
      versions.map((version) => stow([{ data: files[1] }, { data: version }, { data: files[2] }], clinic.token1)),
    );
    const storedBy = answers.map((answer) => storedUids(answer.json).includes(written.sopInstanceUids[0]));
    expect(storedBy.filter(Boolean)).toHaveLength(1);
    for (const [i, answer] of answers.entries()) {
      expect(answer.status).toBe(200);
      expect(storedUids(answer.json)).toEqual(expect.arrayContaining([written.sopInstanceUids[1], written.sopInstanceUids[2]]));
      if (!storedBy[i]) {
        expect(refused(answer.json)).toEqual([
          { uid: written.sopInstanceUids[0], code: 0x0124, reason: 'it would replace an archived instance with other content' },
        ]);
      }
    }
    const [found] = await fetch(`${orthanc.url}/tools/lookup`, {
      method: 'POST',
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password) },
      body: written.sopInstanceUids[0],
    }).then((r) => r.json() as Promise<Array<{ ID: string }>>);
    const file = await fetch(`${orthanc.url}/instances/${found.ID}/file`, {
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password) },
    });
    expect(Buffer.from(await file.arrayBuffer())).toEqual(versions[storedBy.indexOf(true)]);
  });

  it('refuses a study the image server holds that the archive has not placed yet: its sender decides where it goes', async () => {
    const written = await study(2);
    const [first, second] = await filesOf(written);
    // Straight into the image server (as a device's C-STORE lands), not yet indexed: the study
    // becomes stable only after a second without instances.
    const direct = await fetch(`${orthanc.url}/instances`, {
      method: 'POST',
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password), 'Content-Type': 'application/dicom' },
      body: new Uint8Array(first),
    });
    expect(direct.status).toBe(200);
    const res = await stow([{ data: second }], clinic.token1);
    expect(res.status).toBe(200);
    expect(refused(res.json)).toEqual([
      {
        uid: written.sopInstanceUids[1],
        code: 0x0124,
        reason: 'the study is being received from another source: try again in a minute',
      },
    ]);
    expect(await orthancHas(written.sopInstanceUids[1])).toBe(false);
    const placements = await t.db.query(`SELECT 1 FROM upload_placements WHERE study_instance_uid = $1`, [
      written.studyInstanceUid,
    ]);
    expect(placements).toEqual([]);
  });

  it("takes back a new study's placement when the image server refuses its only instance", async () => {
    const written = await study(1);
    const [data] = await filesOf(written);
    // Cut in its pixel data: the identifiers read, the image server answers 400.
    const cut = data.subarray(0, data.length - 100);
    const res = await stow([{ data: cut }], clinic.token1);
    expect(res.status).toBe(200);
    expect(refused(res.json)).toEqual([
      { uid: written.sopInstanceUids[0], code: 0xc000, reason: 'the image server could not read it' },
    ]);
    const placements = await t.db.query(`SELECT 1 FROM upload_placements WHERE study_instance_uid = $1`, [
      written.studyInstanceUid,
    ]);
    expect(placements).toEqual([]);
    // Nothing holds the UID for the uploader's clinic: another clinic may bring that study.
    const elsewhere = await stow([{ data }], other.adminToken, { query: `?unit_id=${other.unit1.id}` });
    expect(storedUids(elsewhere.json)).toEqual(written.sopInstanceUids);
    expect(await placeOf(written.studyInstanceUid)).toMatchObject({ tenant_id: other.tenant.id, unit_id: other.unit1.id });
  });

  it('records the upload of the instances stored before the body broke off', async () => {
    const patientId = `UP-BROKEN-${randomBytes(4).toString('hex')}`;
    const written = await study(1, undefined, patientId);
    const [data] = await filesOf(written);
    const whole = multipart([{ data }], 'broken-off');
    // The closing delimiter replaced by a part that never ends.
    const raw = Buffer.concat([
      whole.body.subarray(0, whole.body.length - '--broken-off--\r\n'.length),
      Buffer.from('--broken-off\r\nContent-Type: application/dicom\r\n\r\nDICM'),
    ]);
    const audit = t.app.get(AuditService);
    const uploadsOf = async () => {
      await audit.flush();
      return t.db.query(
        `SELECT user_id, tenant_id, patient_id FROM access_logs WHERE action = 'study.upload' AND user_id = $1`,
        [clinic.user1.id],
      );
    };
    const before = await uploadsOf();
    const res = await stow([], clinic.token1, { contentType: whole.contentType, raw });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ message: 'Malformed multipart body: the body ended before its closing delimiter.' });
    expect(await orthancHas(written.sopInstanceUids[0])).toBe(true);
    const after = await uploadsOf();
    expect(after.length).toBe(before.length + 1);
    expect(after).toContainEqual({ user_id: clinic.user1.id, tenant_id: clinic.tenant.id, patient_id: patientId });
  });

  it('refuses parts that are not DICOM, with the reason, and stores the others', async () => {
    const written = await study(1);
    // Not a UID (PS3.5 9.1: at most 64 characters): refused as such, not as a failure to try again.
    const overlong = await study(1, `1.2.${'3'.repeat(63)}`);
    const res = await stow(
      [
        { data: Buffer.from('just some text') },
        { data: (await filesOf(written))[0] },
        { data: Buffer.from('{"a":1}'), type: 'application/json' },
        { data: (await filesOf(overlong))[0] },
      ],
      clinic.token1,
    );
    expect(res.status).toBe(200);
    expect(refused(res.json)).toEqual([
      { uid: undefined, code: 0xc000, reason: 'not a DICOM file (no "DICM" prefix)' },
      { uid: undefined, code: 0xc000, reason: 'a part of type application/json, not application/dicom' },
      { uid: undefined, code: 0xc000, reason: 'a StudyInstanceUID longer than 64 characters' },
    ]);
    expect(await orthancHas(overlong.sopInstanceUids[0])).toBe(false);
    expect(storedUids(res.json)).toEqual(written.sopInstanceUids);
  });

  it('answers 415 to a body that is not multipart/related of DICOM, 400 to a broken one, 401 without a session', async () => {
    const data = (await filesOf(await study(1)))[0];
    for (const contentType of [
      'application/dicom',
      'multipart/form-data; boundary=x',
      'multipart/related; type="application/json"; boundary=x',
    ]) {
      const res = await stow([{ data }], clinic.token1, { contentType });
      expect([res.status, res.json]).toEqual([415, { message: 'Unsupported media type.' }]);
    }
    const broken = await stow([{ data }], clinic.token1, {
      contentType: 'multipart/related; boundary=zz',
      raw: Buffer.from('--zz\r\n\r\nabc'),
    });
    expect(broken.status).toBe(400);
    expect(broken.json).toEqual({ message: 'Malformed multipart body: the body ended before its closing delimiter.' });
    const anonymous = await fetch(`${apiUrl}/api/dicom-web/studies`, {
      method: 'POST',
      headers: multipartHeaders(),
      body: 'x',
    });
    expect(anonymous.status).toBe(401);
    expect(await anonymous.json()).toEqual({ message: 'Unauthenticated.' });
  });

  it('answers 413 past 2 GiB by its declared length, without reading it', async () => {
    const { status, body } = await new Promise<{ status: number; body: string }>((resolve, reject) => {
      const url = new URL(`${apiUrl}/api/dicom-web/studies`);
      const request = require('http').request(
        {
          host: url.hostname,
          port: url.port,
          path: url.pathname,
          method: 'POST',
          headers: {
            ...multipartHeaders(),
            authorization: `Bearer ${clinic.token1}`,
            'content-length': String(2 * 1024 ** 3 + 1),
          },
        },
        (response: import('http').IncomingMessage) => {
          let text = '';
          response.on('data', (chunk) => (text += chunk));
          response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }));
        },
      );
      request.on('error', reject);
      request.write('--x\r\n');
      request.end();
    });
    expect(status).toBe(413);
    expect(JSON.parse(body)).toEqual({ message: 'Payload too large.' });
  });

  it("takes the viewer's upload through the shipped nginx", async () => {
    const written = await study(2);
    const res = await stow(
      (await filesOf(written)).map((data) => ({ data })),
      clinic.token1,
      { base: nginx.url },
    );
    expect(res.status).toBe(200);
    expect(storedUids(res.json)).toEqual(written.sopInstanceUids);
    expect(await placeOf(written.studyInstanceUid)).toMatchObject({ unit_id: clinic.unit1.id });
  });
});

function multipartHeaders() {
  return { 'content-type': 'multipart/related; type="application/dicom"; boundary=x' };
}
