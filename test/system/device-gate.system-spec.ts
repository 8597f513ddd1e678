/**
 * The device gate end to end (decisions.md, "A device is its AE title and its address"): devices
 * (storescu, from 127.0.0.1 or, through a relay, from 127.0.0.2) send to the real Orthanc configured
 * from docker/orthanc (its shipped webhook.lua, ReceivedInstanceFilter included); the API's webhook
 * and a worker place the studies. Assertions are on PostgreSQL, on Orthanc's stored files and
 * metadata, on the job results and on the API's /metrics.
 */
import { getQueueToken } from '@nestjs/bull';
import { TestingModule } from '@nestjs/testing';
import type { Queue } from 'bull';
import { execFile } from 'child_process';
import { createHash, randomBytes } from 'crypto';
import { promises as fs } from 'fs';
import * as os from 'os';
import * as path from 'path';
import { DataSource } from 'typeorm';
import { RECONCILE_QUEUE, STUDY_QUEUE } from '../../src/common/queues/queues.module';
import { TestApp } from '../support/app';
import { sendWithStorescu, writeStudy, WrittenStudy } from '../../scripts/stack/dicom';
import { ArchivelessDoor, startArchivelessDoor } from '../../scripts/stack/door';
import { createTenant, createUnit } from '../support/factories';
import { basicAuth, OrthancInstance, startOrthanc, waitFor, WEBHOOK_LUA } from '../../scripts/stack/orthanc';
import { startOrthancAndApi, startWorkerModule } from '../support/stack';

jest.setTimeout(120_000);

const suffix = randomBytes(3).toString('hex').toUpperCase();
const CLINIC_A_AET = `CT_A_${suffix}`;
const CLINIC_B_AET = `CT_B_${suffix}`;
const STRANGER_AET = `EVIL_${suffix}`;
const METRICS_TOKEN = 'device-gate-metrics-token-0123456789';
/** The test's second device address: loopback, so it exists on any Linux machine. */
const OTHER_ADDRESS = '127.0.0.2';

/** A copy of `file` in `dir` (named `name`), changed by dcmtk's dcmodify with `args`. */
async function modifiedCopy(file: string, dir: string, name: string, args: string[]): Promise<string> {
  await fs.mkdir(dir, { recursive: true });
  const copy = path.join(dir, name);
  await fs.copyFile(file, copy);
  await new Promise<void>((resolve, reject) =>
    execFile('dcmodify', ['-nb', ...args, copy], (error, _out, stderr) =>
      error ? reject(new Error(`dcmodify failed: ${stderr}`)) : resolve(),
    ),
  );
  return copy;
}

/** A copy of `file` with other content but the same UIDs. */
const alteredCopy = (file: string, dir: string): Promise<string> =>
  modifiedCopy(file, dir, path.basename(file), ['-m', '(0010,0010)=EVIL^EVE', '-i', '(0008,0080)=Not the clinic']);

/** A new instance (new SOP Instance UID) of the study of `file`, same patient. */
const newInstanceCopy = (file: string, dir: string): Promise<string> => modifiedCopy(file, dir, 'new.dcm', ['-gin']);

/** A new instance (new SOP Instance UID) with the study UID of `file` and another patient ID. */
const otherPatientCopy = (file: string, dir: string): Promise<string> =>
  modifiedCopy(file, dir, 'new.dcm', ['-gin', '-m', '(0010,0020)=OTHER-PATIENT']);

describe('Device gate: a device is its AE title and its address', () => {
  let workDir: string;
  let orthanc: OrthancInstance;
  let t: TestApp;
  let db: DataSource;
  let worker: TestingModule;
  let clinicA: { tenant: string; unit: string };
  let clinicB: { tenant: string; unit: string };
  let quarantineTenant: string;
  let apiUrl: string;

  const orthancFetch = (pathAndQuery: string, init: RequestInit = {}, server = orthanc) =>
    fetch(`${server.url}${pathAndQuery}`, {
      ...init,
      headers: { Authorization: basicAuth(server.username, server.password), ...(init.headers ?? {}) },
    });
  const orthancJson = async (pathAndQuery: string, init: RequestInit = {}, server = orthanc) => {
    const response = await orthancFetch(pathAndQuery, init, server);
    expect(response.status).toBe(200);
    return response.json() as Promise<any>;
  };

  async function lookup(uid: string, type: 'Study' | 'Instance', server = orthanc): Promise<string | undefined> {
    const found = (await orthancJson('/tools/lookup', { method: 'POST', body: uid }, server)) as Array<{
      ID: string;
      Type: string;
    }>;
    return found.find((entry) => entry.Type === type)?.ID;
  }

  /** What the archive holds for an instance: the stored file's SHA-256, its PatientName, its sender. */
  async function archived(sopInstanceUid: string) {
    const id = (await lookup(sopInstanceUid, 'Instance'))!;
    const file = Buffer.from(await (await orthancFetch(`/instances/${id}/file`)).arrayBuffer());
    const tags = await orthancJson(`/instances/${id}/simplified-tags`);
    const metadata = await orthancJson(`/instances/${id}/metadata?expand`);
    return {
      sha256: createHash('sha256').update(file).digest('hex'),
      patientName: tags.PatientName,
      institution: tags.InstitutionName ?? null,
      remoteAet: metadata.RemoteAET,
      remoteIp: metadata.RemoteIP,
    };
  }

  const studyQueue = (): Queue => worker.get<Queue>(getQueueToken(STUDY_QUEUE));

  /** The result of the latest completed study job of the study, once it finished after `after`. */
  async function studyJob(imgsrvStudyId: string, after = 0): Promise<Record<string, any>> {
    return waitFor(`a study job of ${imgsrvStudyId} to complete`, async () => {
      const jobs = (await studyQueue().getJobs(['completed'])).filter(
        (job) => job?.data?.imgsrvStudyId === imgsrvStudyId && (job.finishedOn ?? 0) > after,
      );
      return jobs.sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0))[0]?.returnvalue;
    });
  }

  async function studyRow(imgsrvStudyId: string) {
    const [row] = await db.query(
      `SELECT s.id, s.tenant_id, s.unit_id, s.report_status, s.patient_uuid, y.remote_aet, y.remote_ip
       FROM studies s LEFT JOIN imgsrv_study_sync y ON y.imgsrv_study_id = s.imgsrv_study_id WHERE s.imgsrv_study_id = $1`,
      [imgsrvStudyId],
    );
    return row as Record<string, any> | undefined;
  }

  /** A counter's value on the API's /metrics, for one reason. */
  async function counted(metric: string, reason: string): Promise<number> {
    const res = await t.http.get('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.status).toBe(200);
    const line = (res.body as string).split('\n').find((l) => l.startsWith(`${metric}{reason="${reason}"} `));
    return line ? Number(line.split(' ')[1]) : 0;
  }
  const untrustedCount = (reason: string) => counted('pacs_ingestion_untrusted_sender_total', reason);
  const doorRefusals = (reason: string) => counted('pacs_dicom_door_refused_total', reason);

  let studyCounter = 0;
  const newStudy = (patientId: string): Promise<WrittenStudy> =>
    writeStudy(path.join(workDir, `study-${++studyCounter}`), {
      patientId,
      patientName: 'DOE^JANE',
      series: [{ modality: 'CT', seriesNumber: 1, instances: 2, rows: 32, columns: 32 }],
    });

  /** Sends and waits for the study job that follows (Orthanc's stable event, then the webhook). */
  async function sendAndPlace(study: WrittenStudy, aet: string, fromAddress?: string) {
    const started = Date.now();
    await sendWithStorescu(study.files, { aet, port: orthanc.dicomPort, fromAddress });
    const imgsrvStudyId = (await lookup(study.studyInstanceUid, 'Study'))!;
    const result = await studyJob(imgsrvStudyId, started);
    return { imgsrvStudyId, result, row: (await studyRow(imgsrvStudyId))! };
  }

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-device-gate-'));
    ({ t, orthanc, apiUrl } = await startOrthancAndApi({
      stableAge: 1,
      env: { RECONCILE_INTERVAL: '1', METRICS_TOKEN, QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}:device-gate` },
    }));
    db = t.db;
    worker = await startWorkerModule(t.config);

    [{ id: quarantineTenant }] = await db.query(`SELECT id FROM tenants WHERE slug = 'quarantine'`);
    const register = async (aet: string, ipAddress: string) => {
      const tenant = await createTenant(db);
      const unit = await createUnit(db, tenant.id);
      await db.query(`INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, $5)`, [
        tenant.id,
        unit.id,
        `Device ${aet}`,
        aet,
        ipAddress,
      ]);
      return { tenant: tenant.id, unit: unit.id };
    };
    clinicA = await register(CLINIC_A_AET, '127.0.0.1');
    // Registered in the IPv4-mapped IPv6 spelling of the address Orthanc reports (127.0.0.1).
    clinicB = await register(CLINIC_B_AET, '::ffff:127.0.0.1');
  }, 120_000);

  afterAll(async () => {
    await worker?.close().catch(() => undefined);
    await t?.close().catch(() => undefined);
    await orthanc?.destroy();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  });

  it('places a study sent with a registered AE title from the registered address, in any spelling of it', async () => {
    const { row, result } = await sendAndPlace(await newStudy(`B1-${suffix}`), CLINIC_B_AET.toLowerCase());
    expect(row).toMatchObject({
      tenant_id: clinicB.tenant,
      unit_id: clinicB.unit,
      remote_aet: CLINIC_B_AET,
      remote_ip: '127.0.0.1',
    });
    expect(result).toMatchObject({ outcome: 'saved', quarantined: false, remoteIp: '127.0.0.1' });
    expect(result.untrusted).toBeUndefined();
  });

  it('quarantines a study sent with a registered AE title from another address, says why, and never releases it', async () => {
    const before = await untrustedCount('address_mismatch');
    const { imgsrvStudyId, row, result } = await sendAndPlace(await newStudy(`Q1-${suffix}`), CLINIC_A_AET, OTHER_ADDRESS);
    expect(row).toMatchObject({ tenant_id: quarantineTenant, remote_aet: CLINIC_A_AET, remote_ip: OTHER_ADDRESS });
    expect(result).toMatchObject({
      quarantined: true,
      untrusted: 'address_mismatch',
      remoteAet: CLINIC_A_AET,
      remoteIp: OTHER_ADDRESS,
    });
    // Orthanc recorded the address the device connected from: the one an operator registers.
    const instance = (await orthancJson(`/studies/${imgsrvStudyId}/instances`))[0];
    expect(await (await orthancFetch(`/instances/${instance.ID}/metadata/RemoteIP`)).text()).toBe(OTHER_ADDRESS);
    expect(await untrustedCount('address_mismatch')).toBe(before + 1);

    // The reconciliation (every second here) releases quarantined studies of registered devices:
    // not this one, whose AE title is registered at another address.
    const reconcileQueue = worker.get<Queue>(getQueueToken(RECONCILE_QUEUE));
    const runs = async () => (await reconcileQueue.getJobs(['completed'])).length;
    const start = await runs();
    await waitFor('three reconciliation runs', async () => (await runs()) >= start + 3);
    expect((await studyRow(imgsrvStudyId))!.tenant_id).toBe(quarantineTenant);
  });

  it('reads once the address of a quarantined study kept before addresses were, and keeps it quarantined', async () => {
    const { imgsrvStudyId } = await sendAndPlace(await newStudy(`Q3-${suffix}`), CLINIC_A_AET, OTHER_ADDRESS);
    const reconcileQueue = worker.get<Queue>(getQueueToken(RECONCILE_QUEUE));
    const runs = async () => (await reconcileQueue.getJobs(['completed'])).length;
    // Indexed, and seen by a reconciliation since: nothing else would queue it again.
    await waitFor('the study to be indexed', async () => {
      const [sync] = await db.query(`SELECT indexed_at FROM imgsrv_study_sync WHERE imgsrv_study_id = $1`, [imgsrvStudyId]);
      return sync?.indexed_at;
    });
    const indexedRuns = await runs();
    await waitFor('a reconciliation run', async () => (await runs()) >= indexedRuns + 2);

    const since = Date.now();
    await db.query(`UPDATE imgsrv_study_sync SET remote_ip = NULL WHERE imgsrv_study_id = $1`, [imgsrvStudyId]);
    await waitFor('the address to be read again', async () => (await studyRow(imgsrvStudyId))?.remote_ip === OTHER_ADDRESS);
    const start = await runs();
    await waitFor('three more reconciliation runs', async () => (await runs()) >= start + 3);
    const jobs = (await studyQueue().getJobs(['completed'])).filter(
      (job) => job?.data?.imgsrvStudyId === imgsrvStudyId && (job.finishedOn ?? 0) > since,
    );
    expect(jobs.map((job) => job.data.source)).toEqual(['reconcile']);
    expect((await studyRow(imgsrvStudyId))!.tenant_id).toBe(quarantineTenant);
  });

  it('quarantines a study from an unregistered AE title with the reason unknown_aet', async () => {
    const before = await untrustedCount('unknown_aet');
    const { row, result } = await sendAndPlace(await newStudy(`Q2-${suffix}`), STRANGER_AET);
    expect(row.tenant_id).toBe(quarantineTenant);
    expect(result).toMatchObject({ quarantined: true, untrusted: 'unknown_aet', remoteAet: STRANGER_AET });
    expect(await untrustedCount('unknown_aet')).toBe(before + 1);
  });

  it("refuses a device of clinic B sending a study of clinic A, even once the image server's copy is gone", async () => {
    const study = await newStudy(`A1-${suffix}`);
    const placed = await sendAndPlace(study, CLINIC_A_AET);
    expect(placed.row).toMatchObject({ tenant_id: clinicA.tenant, unit_id: clinicA.unit });
    await db.query(`UPDATE studies SET report_status = 'final' WHERE id = $1`, [placed.row.id]);

    // Gone from the image server, the study is still archived: the index places it in clinic A.
    expect((await orthancFetch(`/studies/${placed.imgsrvStudyId}`, { method: 'DELETE' })).status).toBe(200);
    const before = await doorRefusals('other_clinic');
    await expect(sendWithStorescu(study.files, { aet: CLINIC_B_AET, port: orthanc.dicomPort, verbose: true })).rejects.toThrow(
      'Received Store Response (Refused: OutOfResources)',
    );
    expect(await lookup(study.studyInstanceUid, 'Study')).toBeUndefined();
    // storescu stops at the first refusal.
    expect(await doorRefusals('other_clinic')).toBe(before + 1);
    expect(await studyRow(placed.imgsrvStudyId)).toMatchObject({
      id: placed.row.id,
      tenant_id: clinicA.tenant,
      unit_id: clinicA.unit,
      report_status: 'final',
    });
    const [{ count }] = await db.query(`SELECT count(*)::int AS count FROM patients WHERE tenant_id = $1 AND patient_id = $2`, [
      clinicB.tenant,
      `A1-${suffix}`,
    ]);
    expect(count).toBe(0);
  });

  it('moves a quarantined study only out of quarantine, to the clinic of a device matching AE title and address', async () => {
    const study = await newStudy(`R1-${suffix}`);
    const held = await sendAndPlace(study, STRANGER_AET);
    expect(held.row.tenant_id).toBe(quarantineTenant);
    // The same study from clinic A's device (right AE title, right address), once the stranger's
    // copy is gone from the image server: the study leaves quarantine for clinic A.
    expect((await orthancFetch(`/studies/${held.imgsrvStudyId}`, { method: 'DELETE' })).status).toBe(200);
    const moved = await sendAndPlace(study, CLINIC_A_AET);
    expect(moved.row).toMatchObject({ id: held.row.id, tenant_id: clinicA.tenant, unit_id: clinicA.unit });
    expect(moved.result).toMatchObject({ quarantined: false });
    expect(moved.result.untrusted).toBeUndefined();
  });

  describe("the study's door: an archived study takes instances only from its own clinic's devices and the service", () => {
    const refused = 'Received Store Response (Refused: OutOfResources)';
    let study: WrittenStudy;
    let imgsrvStudyId: string;
    let doorDir: string;
    let copies = 0;
    const instanceCount = async () =>
      (await orthancJson(`/studies/${imgsrvStudyId}`)).Series.length > 0
        ? ((await orthancJson(`/studies/${imgsrvStudyId}/instances`)) as unknown[]).length
        : 0;
    const newInstance = () => newInstanceCopy(study.files[0], path.join(doorDir, `copy-${++copies}`));

    beforeAll(async () => {
      doorDir = path.join(workDir, 'door');
      study = await newStudy(`D1-${suffix}`);
      ({ imgsrvStudyId } = await sendAndPlace(study, CLINIC_A_AET));
      expect((await studyRow(imgsrvStudyId))!.tenant_id).toBe(clinicA.tenant);
    });

    it.each([
      ['an unregistered AE title', STRANGER_AET, undefined, 'unregistered_sender'],
      ["its own clinic's AE title from another address", CLINIC_A_AET, OTHER_ADDRESS, 'unregistered_sender'],
      ["another clinic's registered device", CLINIC_B_AET, undefined, 'other_clinic'],
    ])(
      'refuses a new instance from %s (0xA700, logged, counted), with the same Patient ID',
      async (_label, aet, fromAddress, reason) => {
        const before = { count: await instanceCount(), refusals: await doorRefusals(reason) };
        const copy = await newInstance();
        await expect(sendWithStorescu([copy], { aet, port: orthanc.dicomPort, fromAddress, verbose: true })).rejects.toThrow(
          refused,
        );
        expect(await instanceCount()).toBe(before.count);
        expect(await doorRefusals(reason)).toBe(before.refusals + 1);
        expect(orthanc.log()).toContain(`of study ${study.studyInstanceUid}: study belongs to`);
        expect(orthanc.log()).toContain(`(${reason})`);
      },
    );

    it("refuses a stranger's instance under another Patient ID too", async () => {
      const before = { count: await instanceCount(), refusals: await doorRefusals('other_patient') };
      const copy = await otherPatientCopy(study.files[0], path.join(doorDir, `copy-${++copies}`));
      await expect(sendWithStorescu([copy], { aet: STRANGER_AET, port: orthanc.dicomPort, verbose: true })).rejects.toThrow(
        refused,
      );
      expect(await instanceCount()).toBe(before.count);
      expect(await doorRefusals('other_patient')).toBe(before.refusals + 1);
      const found = (await orthancJson('/tools/lookup', { method: 'POST', body: study.studyInstanceUid })) as Array<{
        Type: string;
      }>;
      expect(found.filter((entry) => entry.Type === 'Study')).toHaveLength(1);
    });

    it("takes a new instance from the study's own device", async () => {
      const before = await instanceCount();
      await sendWithStorescu([await newInstance()], { aet: CLINIC_A_AET, port: orthanc.dicomPort });
      expect(await instanceCount()).toBe(before + 1);
    });

    it("takes an instance written through the REST API with the service's account, and no other account's", async () => {
      const before = await instanceCount();
      const upload = async (username: string, password: string) =>
        fetch(`${orthanc.url}/instances`, {
          method: 'POST',
          headers: { Authorization: basicAuth(username, password) },
          body: await fs.readFile(await newInstance()),
        });
      expect((await upload(orthanc.viewerUsername, orthanc.viewerPassword)).status).toBe(403);
      expect(await instanceCount()).toBe(before);
      expect((await upload(orthanc.username, orthanc.password)).status).toBe(200);
      expect(await instanceCount()).toBe(before + 1);
    });

    it('refuses a stranger joining a study a registered device has just sent, before the index has it', async () => {
      // Sent and asked about at once: the door knows the study's clinic from its sender on the image server.
      const fresh = await newStudy(`D2-${suffix}`);
      await sendWithStorescu(fresh.files.slice(0, 1), { aet: CLINIC_A_AET, port: orthanc.dicomPort });
      const before = await doorRefusals('unregistered_sender');
      const copy = await newInstanceCopy(fresh.files[0], path.join(doorDir, `copy-${++copies}`));
      await expect(sendWithStorescu([copy], { aet: STRANGER_AET, port: orthanc.dicomPort, verbose: true })).rejects.toThrow(
        refused,
      );
      expect(await doorRefusals('unregistered_sender')).toBe(before + 1);
      await sendWithStorescu(fresh.files.slice(1), { aet: CLINIC_A_AET, port: orthanc.dicomPort });
      const id = (await lookup(fresh.studyInstanceUid, 'Study'))!;
      expect(((await orthancJson(`/studies/${id}/instances`)) as unknown[]).length).toBe(fresh.files.length);
    });

    it("does not let a stranger who sent a UID first claim it: its study stays its own, in quarantine, and nobody else's joins it", async () => {
      const claimed = await newStudy(`D3-${suffix}`);
      const held = await sendAndPlace({ ...claimed, files: claimed.files.slice(0, 1) }, STRANGER_AET);
      expect(held.row.tenant_id).toBe(quarantineTenant);
      const before = await doorRefusals('quarantined_study');
      await expect(
        sendWithStorescu(claimed.files.slice(1), { aet: CLINIC_A_AET, port: orthanc.dicomPort, verbose: true }),
      ).rejects.toThrow(refused);
      expect(await doorRefusals('quarantined_study')).toBe(before + 1);
      expect(((await orthancJson(`/studies/${held.imgsrvStudyId}/instances`)) as unknown[]).length).toBe(1);
      expect((await studyRow(held.imgsrvStudyId))!.tenant_id).toBe(quarantineTenant);
    });

    it("quarantines, uncut, a study whose UID is over 64 characters, even one that starts with a clinic's study's UID", async () => {
      // Clinic A's study with a UID of exactly 64 characters, then a stranger's whose first 64 are the same.
      const uid64 = `2.25.${'1'.repeat(59)}`;
      const own = await writeStudy(path.join(workDir, 'uid64'), {
        patientId: `U1-${suffix}`,
        patientName: 'DOE^JANE',
        studyInstanceUid: uid64,
        series: [{ modality: 'CT', seriesNumber: 1, instances: 1, rows: 32, columns: 32 }],
      });
      const placed = await sendAndPlace(own, CLINIC_A_AET);
      expect(placed.row.tenant_id).toBe(clinicA.tenant);
      // 256 characters, the longest StudyInstanceUID Orthanc 1.10.1 stores: past that it refuses the
      // instance itself ("Bad type for a parameter"), whatever the door answers (docs/dicom-door.md).
      const longUid = `${uid64}.${'7'.repeat(191)}`;
      expect(longUid).toHaveLength(256);
      const long = await writeStudy(path.join(workDir, 'uid256'), {
        patientId: `U1-${suffix}`,
        patientName: 'DOE^JANE',
        studyInstanceUid: longUid,
        series: [{ modality: 'CT', seriesNumber: 1, instances: 1, rows: 32, columns: 32 }],
      });
      const before = await untrustedCount('invalid_uid');
      const held = await sendAndPlace(long, CLINIC_A_AET);
      expect(held.result).toMatchObject({ quarantined: true, untrusted: 'invalid_uid' });
      const [row] = await db.query(`SELECT tenant_id, study_instance_uid FROM studies WHERE imgsrv_study_id = $1`, [
        held.imgsrvStudyId,
      ]);
      expect(row).toEqual({ tenant_id: quarantineTenant, study_instance_uid: longUid });
      expect(await untrustedCount('invalid_uid')).toBe(before + 1);
      const [{ count }] = await db.query(`SELECT count(*)::int AS count FROM studies WHERE study_instance_uid = $1`, [uid64]);
      expect(count).toBe(1);
    });

    it('refuses every instance when the door cannot answer: wrong secret, or nothing listening', async () => {
      for (const [env, secret] of [
        [{ PACS_DOOR_URL: `${apiUrl}/api/imgsrv/door` }, 'not-the-secret'],
        [{ PACS_DOOR_URL: 'http://127.0.0.1:9/api/imgsrv/door' }, undefined],
      ] as const) {
        const closed = await startOrthanc({ env, webhookSecret: secret });
        try {
          const fresh = await newStudy(`D4-${suffix}`);
          await expect(
            sendWithStorescu(fresh.files, { aet: CLINIC_A_AET, port: closed.dicomPort, verbose: true }),
          ).rejects.toThrow(refused);
          expect(await orthancJson('/instances', {}, closed)).toEqual([]);
          expect(closed.log()).toContain(
            `webhook.lua: refused instance ${fresh.sopInstanceUids[0]} of study ${fresh.studyInstanceUid}: the door`,
          );
        } finally {
          await closed.destroy();
        }
      }
    });
  });

  describe('an archived instance', () => {
    let study: WrittenStudy;
    let original: Awaited<ReturnType<typeof archived>>;
    let altered: string[];

    beforeAll(async () => {
      study = await newStudy(`I1-${suffix}`);
      await sendAndPlace(study, CLINIC_A_AET);
      original = await archived(study.sopInstanceUids[0]);
      altered = [await alteredCopy(study.files[0], path.join(workDir, 'altered'))];
      expect(
        createHash('sha256')
          .update(await fs.readFile(altered[0]))
          .digest('hex'),
      ).not.toBe(original.sha256);
    });

    it.each([
      ['an unregistered AE title', STRANGER_AET, undefined],
      ["another clinic's registered device", CLINIC_B_AET, undefined],
      ['its own AE title from another address', CLINIC_A_AET, OTHER_ADDRESS],
    ])(
      'is not replaced by other content with the same UIDs from %s: the C-STORE is refused',
      async (_label, aet, fromAddress) => {
        await expect(sendWithStorescu(altered, { aet, port: orthanc.dicomPort, fromAddress, verbose: true })).rejects.toThrow(
          'Received Store Response (Refused: OutOfResources)',
        );
        expect(await archived(study.sopInstanceUids[0])).toEqual(original);
        expect(orthanc.log()).toContain(
          `webhook.lua: refused instance ${study.sopInstanceUids[0]} of study ${study.studyInstanceUid}: AE title "${aet}" from ${fromAddress ?? '127.0.0.1'} would replace an instance stored by AE title "${CLINIC_A_AET}" from 127.0.0.1 (replaces_instance)`,
        );
      },
    );

    it('is replaced by its own device (AE title in any case, same address)', async () => {
      await sendWithStorescu(altered, { aet: CLINIC_A_AET.toLowerCase(), port: orthanc.dicomPort });
      const now = await archived(study.sopInstanceUids[0]);
      expect(now).toMatchObject({ patientName: 'EVIL^EVE', institution: 'Not the clinic', remoteIp: '127.0.0.1' });
      expect(now.sha256).not.toBe(original.sha256);
      // The other instance of the study was never touched.
      expect((await archived(study.sopInstanceUids[1])).patientName).toBe('DOE^JANE');
    });

    it("is not joined under another patient ID by another device: DICOMweb would serve both under the study's UID", async () => {
      // A new instance (new SOP Instance UID) with the archived study's UID and another patient ID.
      const intruder = await otherPatientCopy(study.files[1], path.join(workDir, 'intruder'));
      await expect(sendWithStorescu([intruder], { aet: CLINIC_B_AET, port: orthanc.dicomPort, verbose: true })).rejects.toThrow(
        'Received Store Response (Refused: OutOfResources)',
      );
      expect(orthanc.log()).toMatch(
        new RegExp(
          `webhook\\.lua: refused instance [0-9.]+ of study ${study.studyInstanceUid.replace(/\./g, '\\.')}: study is held for another Patient ID`,
        ),
      );
      const found = (await orthancJson('/tools/lookup', { method: 'POST', body: study.studyInstanceUid })) as Array<{
        Type: string;
      }>;
      expect(found.filter((entry) => entry.Type === 'Study')).toHaveLength(1);
    });
  });

  it('refuses, loudly, every instance when the check itself fails: nothing is stored unchecked', async () => {
    // The shipped script, plus one that breaks the Orthanc API call the filter relies on.
    const breaker = path.join(workDir, 'broken-lookup.lua');
    await fs.writeFile(breaker, 'function RestApiPost(uri, body, builtin) return nil end\n');
    const broken = await startOrthanc({ extraConfig: { LuaScripts: [WEBHOOK_LUA, breaker] } });
    try {
      const study = await newStudy(`F1-${suffix}`);
      await expect(sendWithStorescu(study.files, { aet: CLINIC_A_AET, port: broken.dicomPort, verbose: true })).rejects.toThrow(
        'Received Store Response (Refused: OutOfResources)',
      );
      expect(await orthancJson('/instances', {}, broken)).toEqual([]);
      expect(broken.log()).toContain(`webhook.lua: refused instance ${study.sopInstanceUids[0]}: /tools/lookup did not answer`);
    } finally {
      await broken.destroy();
    }
  });
});

/**
 * The filter's memory of studies of one device (webhook.lua, "A study of one device"): the instances of
 * a new study that only one device sends skip the archive lookups; everything else gets the full check.
 * A probe script loaded after webhook.lua logs every `/tools/lookup` the filter makes, so each test
 * sees whether an instance was checked against the archive. No API here: Orthanc and storescu only.
 */
describe('Device gate: the filter remembers the studies of one device, and nothing else', () => {
  const DEVICE = `CT_M_${suffix}`;
  const STRANGER = `EVIL_M_${suffix}`;
  const PROBE = 'gate-probe lookup';
  let workDir: string;
  let orthanc: OrthancInstance;
  let door: ArchivelessDoor;

  const orthancFetch = (server: OrthancInstance, pathAndQuery: string, init: RequestInit = {}) =>
    fetch(`${server.url}${pathAndQuery}`, {
      ...init,
      headers: { Authorization: basicAuth(server.username, server.password), ...(init.headers ?? {}) },
    });
  const instanceOf = async (server: OrthancInstance, sopInstanceUid: string) => {
    const found = (await (
      await orthancFetch(server, '/tools/lookup', { method: 'POST', body: sopInstanceUid })
    ).json()) as Array<{ ID: string; Type: string }>;
    const id = found.find((entry) => entry.Type === 'Instance')?.ID;
    if (!id) return undefined;
    const metadata = (await (await orthancFetch(server, `/instances/${id}/metadata?expand`)).json()) as Record<string, string>;
    const tags = (await (await orthancFetch(server, `/instances/${id}/simplified-tags`)).json()) as Record<string, string>;
    return { origin: metadata.Origin, remoteAet: metadata.RemoteAET, patientName: tags.PatientName };
  };
  /** The lookups the filter made while `work` ran. */
  async function lookupsDuring(server: OrthancInstance, work: () => Promise<unknown>): Promise<number> {
    const before = server.log().split(PROBE).length;
    await work();
    return server.log().split(PROBE).length - before;
  }
  const refused = 'Received Store Response (Refused: OutOfResources)';

  let counter = 0;
  const newStudy = (instances = 4): Promise<WrittenStudy> =>
    writeStudy(path.join(workDir, `memory-${++counter}`), {
      patientId: `M${counter}-${suffix}`,
      patientName: 'DOE^JANE',
      series: [{ modality: 'CT', seriesNumber: 1, instances, rows: 32, columns: 32 }],
    });

  async function startProbed(env: NodeJS.ProcessEnv = {}): Promise<OrthancInstance> {
    const probe = path.join(workDir, 'probe.lua');
    await fs.writeFile(
      probe,
      [
        'local post = RestApiPost',
        'function RestApiPost(uri, body, builtin)',
        `  if uri == '/tools/lookup' then print('${PROBE} ' .. body) end`,
        '  return post(uri, body, builtin)',
        'end',
        '',
      ].join('\n'),
    );
    return startOrthanc({ env: { PACS_DOOR_URL: door.url, ...env }, extraConfig: { LuaScripts: [WEBHOOK_LUA, probe] } });
  }

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-device-memory-'));
    door = await startArchivelessDoor();
    orthanc = await startProbed();
  });

  afterAll(async () => {
    await orthanc?.destroy();
    await door?.close();
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
  });

  it("checks a new study's first instance only, and lets its device send it again without a lookup", async () => {
    const study = await newStudy(6);
    const send = () => sendWithStorescu(study.files, { aet: DEVICE, port: orthanc.dicomPort });
    // The first instance: its own lookup and its study's; then none.
    expect(await lookupsDuring(orthanc, send)).toBe(2);
    // The same device replacing its own instances, in any spelling of its AE title.
    expect(
      await lookupsDuring(orthanc, () => sendWithStorescu(study.files, { aet: DEVICE.toLowerCase(), port: orthanc.dicomPort })),
    ).toBe(0);
    expect((await instanceOf(orthanc, study.sopInstanceUids[5]))?.remoteAet).toBe(DEVICE.toLowerCase());
  });

  it('refuses a stranger replacing an instance of a study its device is still sending; the rest of the study gets the full check', async () => {
    const study = await newStudy(6);
    await sendWithStorescu(study.files.slice(0, 3), { aet: DEVICE, port: orthanc.dicomPort });
    const altered = await alteredCopy(study.files[1], path.join(workDir, `altered-${counter}`));
    for (const [aet, fromAddress] of [
      [STRANGER, undefined],
      [DEVICE, '127.0.0.2'],
    ] as const) {
      await expect(sendWithStorescu([altered], { aet, port: orthanc.dicomPort, fromAddress, verbose: true })).rejects.toThrow(
        refused,
      );
    }
    expect(orthanc.log()).toContain(
      `webhook.lua: refused instance ${study.sopInstanceUids[1]} of study ${study.studyInstanceUid}`,
    );
    expect(orthanc.log()).toContain('would replace an instance stored by');
    // The device goes on: its instances pass, each checked against the archive now.
    expect(
      await lookupsDuring(orthanc, () => sendWithStorescu(study.files.slice(3), { aet: DEVICE, port: orthanc.dicomPort })),
    ).toBe(3 * 2);
    for (const uid of study.sopInstanceUids) expect(await instanceOf(orthanc, uid)).toMatchObject({ remoteAet: DEVICE });
    expect((await instanceOf(orthanc, study.sopInstanceUids[1]))?.patientName).toBe('DOE^JANE');
  });

  it('refuses a stranger joining a study its device is sending under another patient ID', async () => {
    const study = await newStudy(2);
    await sendWithStorescu(study.files.slice(0, 1), { aet: DEVICE, port: orthanc.dicomPort });
    const intruder = await otherPatientCopy(study.files[1], path.join(workDir, `intruder-${counter}`));
    await expect(sendWithStorescu([intruder], { aet: STRANGER, port: orthanc.dicomPort, verbose: true })).rejects.toThrow(
      refused,
    );
    expect(orthanc.log()).toContain(`of study ${study.studyInstanceUid}: study is held for another Patient ID`);
  });

  it('sees instances stored through the REST API: the device no longer replaces them over DICOM', async () => {
    const study = await newStudy(4);
    await sendWithStorescu(study.files.slice(0, 2), { aet: DEVICE, port: orthanc.dicomPort });
    // An upload through Orthanc's REST API (RequestOrigin RestApi) replacing one of them.
    const altered = await alteredCopy(study.files[0], path.join(workDir, `altered-${counter}`));
    const upload = await orthancFetch(orthanc, '/instances', { method: 'POST', body: await fs.readFile(altered) });
    expect(upload.status).toBe(200);
    expect(await instanceOf(orthanc, study.sopInstanceUids[0])).toMatchObject({ origin: 'RestApi', patientName: 'EVIL^EVE' });

    await expect(
      sendWithStorescu(study.files.slice(0, 1), { aet: DEVICE, port: orthanc.dicomPort, verbose: true }),
    ).rejects.toThrow(refused);
    expect(orthanc.log()).toContain(
      `webhook.lua: refused instance ${study.sopInstanceUids[0]} of study ${study.studyInstanceUid}: AE title "${DEVICE}" from 127.0.0.1 would replace an instance stored by the service (origin RestApi)`,
    );
    expect((await instanceOf(orthanc, study.sopInstanceUids[0]))?.patientName).toBe('EVIL^EVE');
    // The rest of the study still comes in from its device, checked.
    expect(
      await lookupsDuring(orthanc, () => sendWithStorescu(study.files.slice(2), { aet: DEVICE, port: orthanc.dicomPort })),
    ).toBe(2 * 2);
  });

  it('after the study is deleted and a stranger sends it, refuses its first device replacing the stranger’s copy', async () => {
    const study = await newStudy(3);
    await sendWithStorescu(study.files, { aet: DEVICE, port: orthanc.dicomPort });
    const [{ ID: studyId }] = (await (
      await orthancFetch(orthanc, '/tools/lookup', { method: 'POST', body: study.studyInstanceUid })
    ).json()) as Array<{ ID: string }>;
    expect((await orthancFetch(orthanc, `/studies/${studyId}`, { method: 'DELETE' })).status).toBe(200);

    await sendWithStorescu(study.files, { aet: STRANGER, port: orthanc.dicomPort });
    expect(await instanceOf(orthanc, study.sopInstanceUids[2])).toMatchObject({ remoteAet: STRANGER });
    const altered = await alteredCopy(study.files[2], path.join(workDir, `altered-${counter}`));
    await expect(sendWithStorescu([altered], { aet: DEVICE, port: orthanc.dicomPort, verbose: true })).rejects.toThrow(refused);
    expect(orthanc.log()).toContain(
      `webhook.lua: refused instance ${study.sopInstanceUids[2]} of study ${study.studyInstanceUid}: AE title "${DEVICE}" from 127.0.0.1 would replace an instance stored by AE title "${STRANGER}" from 127.0.0.1 (replaces_instance)`,
    );
    expect((await instanceOf(orthanc, study.sopInstanceUids[2]))?.patientName).toBe('DOE^JANE');
  });

  it('forgets everything when Orthanc restarts: a study it already holds gets the full check from then on', async () => {
    const study = await newStudy(3);
    await sendWithStorescu(study.files.slice(0, 2), { aet: DEVICE, port: orthanc.dicomPort });
    await orthanc.stop();
    await orthanc.start();
    const altered = await alteredCopy(study.files[0], path.join(workDir, `altered-${counter}`));
    await expect(sendWithStorescu([altered], { aet: STRANGER, port: orthanc.dicomPort, verbose: true })).rejects.toThrow(
      refused,
    );
    // The device's own instances are checked (the study existed before this Lua state saw it), and pass.
    expect(await lookupsDuring(orthanc, () => sendWithStorescu(study.files, { aet: DEVICE, port: orthanc.dicomPort }))).toBe(
      3 * 2,
    );
  });

  it('remembers at most PACS_DEVICE_GATE_STUDIES studies a generation (0: none); a forgotten study is checked again', async () => {
    const small = await startProbed({ PACS_DEVICE_GATE_STUDIES: '1' });
    const off = await startProbed({ PACS_DEVICE_GATE_STUDIES: '0' });
    try {
      const [first, second, third] = [await newStudy(2), await newStudy(2), await newStudy(2)];
      const send = (server: OrthancInstance, study: WrittenStudy) => () =>
        sendWithStorescu(study.files, { aet: DEVICE, port: server.dicomPort });
      expect(await lookupsDuring(small, send(small, first))).toBe(2);
      expect(await lookupsDuring(small, send(small, second))).toBe(2);
      // Two generations of one study each: the first is still remembered...
      expect(await lookupsDuring(small, send(small, first))).toBe(0);
      // ...until two more studies came after it (first, then third, pushed second out: it is checked).
      expect(await lookupsDuring(small, send(small, third))).toBe(2);
      expect(await lookupsDuring(small, send(small, second))).toBe(2 * 2);
      const altered = await alteredCopy(second.files[0], path.join(workDir, `altered-${counter}`));
      await expect(sendWithStorescu([altered], { aet: STRANGER, port: small.dicomPort, verbose: true })).rejects.toThrow(
        refused,
      );

      expect(await lookupsDuring(off, send(off, first))).toBe(2 * 2);
      expect(await lookupsDuring(off, send(off, first))).toBe(2 * 2);
    } finally {
      await small.destroy();
      await off.destroy();
    }
  });
});
