/**
 * Breaks things on purpose while devices send studies and workers index them: (a) a worker is
 * SIGKILLed mid-study and started again, (b) the image server stops for 30 s, (c) Redis restarts,
 * (d) PostgreSQL restarts. The API and the worker run as real processes (the build in dist/) on a
 * PostgreSQL and a Redis of this test's own, so nothing shared on the machine is restarted.
 *
 * After each fault every study the image server holds must be in the database exactly once and
 * complete (series, instances, thumbnails), and during the whole run the API answers 200, or 503
 * with a JSON body while a dependency is down: never a 500, never a hang, never a bogus 401, and it
 * recovers without being restarted. The time each fault costs is printed at the end.
 */
import * as bcrypt from 'bcryptjs';
import { randomBytes } from 'crypto';
import { promises as fs } from 'fs';
import Redis from 'ioredis';
import * as os from 'os';
import * as path from 'path';
import { Pool } from 'pg';
import { sendWithStorescu, writeStudy } from '../../scripts/stack/dicom';
import { basicAuth, delay, getFreePort, OrthancInstance, startOrthanc } from '../../scripts/stack/orthanc';
import { OwnPostgres, OwnRedis } from './support/servers';
import { Service, startService } from './support/service';

jest.setTimeout(600_000);

const DEVICE_AET = 'FAULT_CT';
const PASSWORD = 'fault-test-password';

interface ProbeRecord {
  at: number;
  name: string;
  status: number;
  body: string;
  json: boolean;
}

interface Cycle {
  start: number;
  allOk: boolean;
}

interface FaultReport {
  fault: string;
  downMs: number;
  /** From the dependency being back (or the worker restarted) to every API probe answering 200. */
  apiRecoveryMs: number | null;
  /** From the same moment to every study of the image server complete in the database. */
  ingestRecoveryMs: number;
  studiesInImageServer: number;
  answers: Record<string, number>;
}

describe('faults while studies are sent and indexed', () => {
  const runId = randomBytes(3).toString('hex');
  let workDir: string;
  let pg: OwnPostgres;
  let redis: OwnRedis;
  let orthanc: OrthancInstance;
  let api: Service;
  let worker: Service;
  let pool: Pool;
  let queueRedis: Redis;
  let env: Record<string, string>;
  let token = '';
  let viewerToken = '';
  let knownStudy: { id: string; uid: string } | null = null;
  const reports: FaultReport[] = [];

  const probes: ProbeRecord[] = [];
  const cycles: Cycle[] = [];
  let probing = false;
  let prober: Promise<void> | null = null;

  // ---------------------------------------------------------------------------------------------
  // Devices: small two-series studies, one after another, while a phase runs.

  let sent = 0;
  let sendFailures = 0;
  let sending = false;
  let sender: Promise<void> | null = null;

  async function sendOne(series = 2, instances = 2, size = 64): Promise<void> {
    const n = ++sent;
    const written = await writeStudy(path.join(workDir, `s${n}`), {
      patientId: `FLT-${runId}-${n}`,
      patientName: `FAULT^${n}`,
      studyDate: '20240301',
      series: Array.from({ length: series }, (_, i) => ({
        modality: 'CT',
        seriesNumber: i + 1,
        instances,
        rows: size,
        columns: size,
      })),
    });
    await sendWithStorescu(written.files, { aet: DEVICE_AET, port: orthanc.dicomPort, timeoutMs: 30_000 });
  }

  function startSending(): void {
    sending = true;
    sender = (async () => {
      while (sending) {
        // The image server may be down: a device would retry later; the study is simply not there.
        await sendOne().catch(() => sendFailures++);
        await delay(700);
      }
    })();
  }

  async function stopSending(): Promise<void> {
    sending = false;
    await sender;
  }

  // ---------------------------------------------------------------------------------------------
  // Clients: what the API answers, all along.

  async function probe(name: string, method: string, url: string, init: RequestInit = {}): Promise<boolean> {
    let status = 0;
    let body = '';
    let json = false;
    try {
      const response = await fetch(`${api.url}${url}`, { method, ...init, signal: AbortSignal.timeout(15_000) });
      status = response.status;
      body = await response.text();
      json = String(response.headers.get('content-type')).includes('application/json') && isJson(body);
    } catch (error) {
      body = (error as Error).message;
    }
    probes.push({ at: Date.now(), name, status, body: body.slice(0, 300), json });
    return status === 200;
  }

  const isJson = (text: string) => {
    try {
      JSON.parse(text);
      return true;
    } catch {
      return false;
    }
  };

  function startProbing(): void {
    probing = true;
    let round = 0;
    prober = (async () => {
      while (probing) {
        const start = Date.now();
        const auth = { authorization: `Bearer ${token}` };
        const results: boolean[] = [];
        results.push(await probe('health', 'GET', '/api/health'));
        results.push(await probe('studies list', 'GET', '/api/studies', { headers: auth }));
        if (knownStudy) {
          results.push(await probe('study detail', 'GET', `/api/studies/${knownStudy.id}`, { headers: auth }));
          results.push(await probe('study thumbnail', 'GET', `/api/studies/${knownStudy.id}/thumbnail`, { headers: auth }));
          results.push(
            await probe('viewer token', 'POST', '/api/viewer/token', {
              headers: { ...auth, 'content-type': 'application/json' },
              body: JSON.stringify({ study_id: knownStudy.id }),
            }),
          );
          results.push(
            await probe('viewer validate', 'GET', '/api/viewer/token/validate', {
              headers: { 'x-viewer-token': viewerToken, 'x-original-uri': `/dicom-web/studies/${knownStudy.uid}/series` },
            }),
          );
        }
        if (round++ % 5 === 0) {
          results.push(
            await probe('login', 'POST', '/api/login', {
              headers: { 'content-type': 'application/json', 'x-forwarded-for': `198.51.100.${(round % 250) + 1}` },
              body: JSON.stringify({ email: `clinician-${runId}@example.test`, password: PASSWORD }),
            }),
          );
        }
        cycles.push({ start, allOk: results.every(Boolean) });
        await delay(150);
      }
    })();
  }

  /** While a dependency is down, and a few seconds after, for reconnections. */
  const outages: Array<[number, number]> = [];
  const inOutage = (at: number) => outages.some(([from, to]) => at >= from && at <= to);

  /**
   * Anything but 200, or 503 with a JSON body, is a failure of the service. One exception: during an
   * outage the proxy's check fails closed with its documented answers (nginx turns any other answer
   * of an auth subrequest into a 500 for the viewer): 401 while it cannot read the token, 403 while
   * it cannot read where the study is (its place, cached 10 s, expired inside the outage).
   */
  function badAnswers(since = 0): ProbeRecord[] {
    return probes.filter(
      (p) =>
        p.at >= since &&
        !(p.status === 200 || (p.status === 503 && p.json)) &&
        !(p.name === 'viewer validate' && (p.status === 401 || p.status === 403) && p.json && inOutage(p.at)),
    );
  }

  function answersSince(since: number): Record<string, number> {
    const counts: Record<string, number> = {};
    for (const p of probes.filter((r) => r.at >= since)) counts[p.status] = (counts[p.status] ?? 0) + 1;
    return counts;
  }

  async function apiRecoveredAfter(moment: number, timeoutMs = 60_000): Promise<number | null> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const cycle = cycles.find((c) => c.start >= moment && c.allOk);
      if (cycle) return cycle.start - moment;
      if (Date.now() > deadline) return null;
      await delay(200);
    }
  }

  // ---------------------------------------------------------------------------------------------
  // The invariant: what the image server holds is in the database once, complete.

  const orthancJson = async <T>(url: string): Promise<T> => {
    const response = await fetch(`${orthanc.url}${url}`, {
      headers: { authorization: basicAuth(orthanc.username, orthanc.password) },
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`image server ${url}: ${response.status}`);
    return (await response.json()) as T;
  };

  async function differences(): Promise<string[]> {
    const ids = await orthancJson<string[]>('/studies');
    const expected = new Map<string, { series: number; instances: number }>();
    for (const id of ids) {
      const stats = await orthancJson<{ CountSeries: number; CountInstances: number }>(`/studies/${id}/statistics`);
      expected.set(id, { series: stats.CountSeries, instances: stats.CountInstances });
    }
    const { rows } = await pool.query<{
      imgsrv_study_id: string;
      copies: number;
      series: number;
      instances: number;
      thumbnails: number;
      series_thumbnails: number;
    }>(
      `SELECT s.imgsrv_study_id,
              count(*) OVER (PARTITION BY s.imgsrv_study_id)::int AS copies,
              (SELECT count(*) FROM series se WHERE se.study_id = s.id)::int AS series,
              (SELECT count(*) FROM instances i JOIN series se ON se.id = i.series_id WHERE se.study_id = s.id)::int AS instances,
              (SELECT count(*) FROM thumbnails th WHERE th.study_id = s.id AND th.series_id IS NULL)::int AS thumbnails,
              (SELECT count(*) FROM thumbnails th WHERE th.study_id = s.id AND th.series_id IS NOT NULL)::int AS series_thumbnails
         FROM studies s`,
    );
    const problems: string[] = [];
    const stored = new Map(rows.map((r) => [r.imgsrv_study_id, r]));
    for (const [id, want] of expected) {
      const row = stored.get(id);
      if (!row) problems.push(`${id}: not in the database`);
      else if (row.copies !== 1) problems.push(`${id}: ${row.copies} copies`);
      else if (row.series !== want.series || row.instances !== want.instances) {
        problems.push(
          `${id}: ${row.series} series / ${row.instances} instances, image server has ${want.series} / ${want.instances}`,
        );
      } else if (row.thumbnails !== 1 || row.series_thumbnails !== want.series) {
        problems.push(`${id}: ${row.thumbnails} study and ${row.series_thumbnails} series thumbnails`);
      }
    }
    for (const id of stored.keys()) if (!expected.has(id)) problems.push(`${id}: in the database, not in the image server`);
    return problems;
  }

  /** Waits until the invariant holds; returns how long that took from `moment`. */
  async function converged(moment: number, timeoutMs = 180_000): Promise<number> {
    const deadline = Date.now() + timeoutMs;
    let last: string[] = ['never checked'];
    for (;;) {
      try {
        last = await differences();
        if (last.length === 0) return Date.now() - moment;
      } catch (error) {
        last = [`check failed: ${(error as Error).message}`];
      }
      if (Date.now() > deadline) {
        const jobs = await queueState().catch((e) => (e as Error).message);
        throw new Error(
          `not converged after ${timeoutMs} ms:\n  ${last.slice(0, 10).join('\n  ')}\nqueues: ${JSON.stringify(jobs)}\nworker: ${worker.output().slice(-3000)}\napi: ${api.output().slice(-2000)}`,
        );
      }
      await delay(500);
    }
  }

  async function queueState(): Promise<Record<string, number>> {
    const out: Record<string, number> = {};
    for (const queue of ['study', 'index']) {
      for (const list of ['wait', 'active']) out[`${queue}:${list}`] = await queueRedis.llen(`bull:${queue}:${list}`);
      for (const set of ['delayed', 'failed']) out[`${queue}:${set}`] = await queueRedis.zcard(`bull:${queue}:${set}`);
    }
    return out;
  }

  async function recordFault(fault: string, faultStart: number, back: number, phaseStart: number): Promise<FaultReport> {
    outages.push([faultStart, back + 10_000]);
    const apiRecoveryMs = await apiRecoveredAfter(back);
    await stopSending();
    const ingestRecoveryMs = await converged(back);
    const report: FaultReport = {
      fault,
      downMs: back - faultStart,
      apiRecoveryMs,
      ingestRecoveryMs,
      studiesInImageServer: (await orthancJson<string[]>('/studies')).length,
      answers: answersSince(phaseStart),
    };
    reports.push(report);
    return report;
  }

  // ---------------------------------------------------------------------------------------------

  beforeAll(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-faults-'));
    [pg, redis] = await Promise.all([OwnPostgres.create(), OwnRedis.create()]);
    const apiPort = await getFreePort();
    orthanc = await startOrthanc({
      stableAge: 2,
      webhookUrl: `http://127.0.0.1:${apiPort}/api/imgsrv/webhook`,
      webhookSecret: process.env.WEBHOOK_SECRET,
    });
    const prefix = `pacs_faults_${runId}`;
    env = {
      NODE_ENV: 'test',
      DATABASE_URL: pg.url('pacs_faults'),
      REDIS_URL: redis.url,
      QUEUE_PREFIX: prefix,
      IMGSRV_URL: orthanc.url,
      IMGSRV_USERNAME: orthanc.username,
      IMGSRV_PASSWORD: orthanc.password,
      RECONCILE_INTERVAL: '2',
      WORKER_CONCURRENCY: '2',
      // Probes name their client address (the login limit is per IP), as nginx would.
      TRUST_PROXY: '127.0.0.1',
      LOG_LEVEL: 'warn',
    };
    api = await startService('main', env, apiPort);
    worker = await startService('worker', env);
    queueRedis = new Redis(redis.url, { keyPrefix: `${prefix}:`, maxRetriesPerRequest: null, lazyConnect: false });
    queueRedis.on('error', () => undefined);
    pool = new Pool({ connectionString: env.DATABASE_URL, max: 3 });
    pool.on('error', () => undefined);

    const {
      rows: [tenant],
    } = await pool.query(`INSERT INTO tenants (name, slug) VALUES ($1, $1) RETURNING id`, [`fault-${runId}`]);
    const {
      rows: [unit],
    } = await pool.query(`INSERT INTO units (tenant_id, name, slug) VALUES ($1, $2, $2) RETURNING id`, [
      tenant.id,
      `fault-unit-${runId}`,
    ]);
    await pool.query(
      `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, 'Fault CT', $3, '127.0.0.1')`,
      [tenant.id, unit.id, DEVICE_AET],
    );
    await pool.query(`INSERT INTO users (tenant_id, unit_id, name, email, password) VALUES ($1, $2, 'Clinician', $3, $4)`, [
      tenant.id,
      unit.id,
      `clinician-${runId}@example.test`,
      bcrypt.hashSync(PASSWORD, 4),
    ]);
    const session = await fetch(`${api.url}/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': '203.0.113.1' },
      body: JSON.stringify({ email: `clinician-${runId}@example.test`, password: PASSWORD }),
    });
    token = ((await session.json()) as { access_token: string }).access_token;
  }, 180_000);

  afterAll(async () => {
    probing = false;
    sending = false;
    await Promise.allSettled([prober, sender]);
    await Promise.allSettled([api?.stop(), worker?.stop()]);
    await pool?.end().catch(() => undefined);
    queueRedis?.disconnect();
    await Promise.allSettled([orthanc?.destroy(), pg?.destroy(), redis?.destroy()]);
    if (workDir) await fs.rm(workDir, { recursive: true, force: true });
    if (reports.length > 0) {
      const lines = reports.map(
        (r) =>
          `  ${r.fault.padEnd(28)} down ${(r.downMs / 1000).toFixed(1).padStart(5)} s | API back after ` +
          `${r.apiRecoveryMs === null ? 'never' : `${(r.apiRecoveryMs / 1000).toFixed(1)} s`} | ingestion complete after ` +
          `${(r.ingestRecoveryMs / 1000).toFixed(1)} s | ${r.studiesInImageServer} studies | answers ${JSON.stringify(r.answers)}`,
      );
      const bad = badAnswers();
      console.log(
        [
          `faults survived: ${reports.length}; studies sent ${sent} (${sendFailures} refused while the image server was down); ` +
            `API probes ${probes.length}, 5xx other than 503: ${probes.filter((p) => p.status >= 500 && p.status !== 503).length}, ` +
            `bad answers: ${bad.length}`,
          ...lines,
        ].join('\n'),
      );
    }
  }, 120_000);

  it('indexes studies before any fault (baseline) and answers every probe with 200', async () => {
    startProbing();
    const start = Date.now();
    await sendOne();
    await sendOne();
    const took = await converged(start, 60_000);
    const { rows } = await pool.query(`SELECT id, study_instance_uid FROM studies ORDER BY created_at LIMIT 1`);
    knownStudy = { id: rows[0].id, uid: rows[0].study_instance_uid };
    const issued = await fetch(`${api.url}/api/viewer/token`, {
      method: 'POST',
      headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
      body: JSON.stringify({ study_id: knownStudy.id }),
    });
    viewerToken = ((await issued.json()) as { token: string }).token;
    await delay(1500);
    console.log(`baseline: 2 studies indexed and thumbnailed ${(took / 1000).toFixed(1)} s after sending began`);
    expect(badAnswers()).toEqual([]);
    expect(cycles.at(-1)?.allOk).toBe(true);
  });

  it('(a) survives a worker killed with SIGKILL in the middle of a study (no reconciliation to help)', async () => {
    const phaseStart = Date.now();
    startSending();
    // A larger study, so that the kill lands while it is being indexed.
    const big = sendOne(4, 10, 256);
    const deadline = Date.now() + 60_000;
    let killed: string[] = [];
    while (killed.length === 0) {
      if (Date.now() > deadline) throw new Error('no job became active');
      killed = [
        ...(await queueRedis.lrange('bull:index:active', 0, -1)),
        ...(await queueRedis.lrange('bull:study:active', 0, -1)),
      ];
      if (killed.length === 0) await delay(20);
    }
    const faultStart = Date.now();
    await worker.kill();
    console.log(`worker ${worker.pid} killed with SIGKILL while running ${killed.join(', ')}`);
    await delay(1000);
    // Without the periodic reconciliation (which would queue the study again within seconds), the
    // job the dead worker held must come back by itself: Bull's stalled-job check, once its lock expires.
    worker = await startService('worker', { ...env, RECONCILE_INTERVAL: '0' });
    const back = Date.now();
    await big;
    const report = await recordFault('worker SIGKILL mid-study', faultStart, back, phaseStart);
    expect(report.apiRecoveryMs).not.toBeNull();
    expect(badAnswers(phaseStart)).toEqual([]);
    // Back to the normal schedule for the next faults.
    await worker.stop();
    worker = await startService('worker', env);
  });

  it('(b) survives the image server stopping for 30 s', async () => {
    const phaseStart = Date.now();
    startSending();
    await delay(2500);
    const faultStart = Date.now();
    await orthanc.stop();
    await delay(30_000);
    await orthanc.start();
    const back = Date.now();
    await delay(3000);
    const report = await recordFault('image server down 30 s', faultStart, back, phaseStart);
    expect(report.apiRecoveryMs).not.toBeNull();
    expect(badAnswers(phaseStart)).toEqual([]);
  });

  it('(c) survives a Redis restart, answering 200 or 503 (JSON) meanwhile and recovering by itself', async () => {
    const phaseStart = Date.now();
    startSending();
    await delay(2500);
    const faultStart = Date.now();
    await redis.stop();
    await delay(5000);
    await redis.start();
    const back = Date.now();
    await delay(3000);
    const report = await recordFault('Redis restart', faultStart, back, phaseStart);
    expect(report.apiRecoveryMs).not.toBeNull();
    // How many requests meet the outage depends on timing (ioredis queues commands while it
    // reconnects); what matters is that none gets anything but 200 or a JSON 503.
    expect(badAnswers(phaseStart)).toEqual([]);
  });

  it('(d) survives a PostgreSQL restart, answering 503 (JSON) meanwhile and recovering by itself', async () => {
    const phaseStart = Date.now();
    startSending();
    await delay(2500);
    const faultStart = Date.now();
    await pg.stop();
    await delay(3000);
    await pg.start();
    const back = Date.now();
    await delay(3000);
    const report = await recordFault('PostgreSQL restart', faultStart, back, phaseStart);
    expect(report.apiRecoveryMs).not.toBeNull();
    expect(report.answers['503'] ?? 0).toBeGreaterThan(0);
    expect(badAnswers(phaseStart)).toEqual([]);
  });

  it('never answered a 500, hung, or refused a valid session during the whole run', async () => {
    probing = false;
    await prober;
    const bad = badAnswers();
    expect(bad.map((p) => `${p.name} ${p.status} ${p.body.slice(0, 120)}`)).toEqual([]);
    expect(probes.filter((p) => p.status === 200).length).toBeGreaterThan(100);
  });
});
