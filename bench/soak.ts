/**
 * `npm run bench:soak [-- --seconds 300 --connections 64 --own-seed --refresh]` (or SOAK_SECONDS=60)
 *
 * A long run of mixed traffic against the built API (`<dist>/src/main.js`, NODE_ENV=production)
 * while a worker process ingests studies a device keeps sending to a real Orthanc:
 *  - 64 keep-alive connections of study lists (pages, searches), study details, series, patients,
 *    viewer-token validations (as nginx sends them), viewer-token issues and sign-ins;
 *  - zero errors allowed: any status other than the expected one, or a network error, fails the run;
 *  - the API's resident memory after warm-up must not grow by 20% or more;
 *  - p50/p99 per request kind, throughput, and every study sent indexed by the end.
 *
 * Data: a copy (`CREATE DATABASE pacs_soak TEMPLATE pacs_bench`) of the benchmark seed when it exists
 * (`npm run bench:seed`), kept for later runs, so the soak never writes into the seed itself; else a
 * small seed of its own (database pacs_soak_small). The build is PACS_DIST_DIR or dist/ (`npm run
 * build` first). Results go to bench/results/soak-<time>.json; the exit code is 1 when a rule fails.
 */
import * as bcrypt from 'bcryptjs';
import { ChildProcess, spawn } from 'child_process';
import { Command } from 'commander';
import { randomBytes, randomInt } from 'crypto';
import { existsSync, mkdirSync, promises as fs, writeFileSync } from 'fs';
import * as http from 'http';
import * as os from 'os';
import { join } from 'path';
import { Client } from 'pg';
import { openDataSource, runMigrations } from '../src/database/data-source-options';
import { sendWithStorescu, writeStudy } from '../scripts/stack/dicom';
import { startOrthanc } from '../scripts/stack/orthanc';
import { DEFAULT_BENCH_DATABASE, databaseUrl, quoteIdent, seconds } from './lib/db';
import { API_NODE_FLAGS, freePort, memoryOf } from './lib/processes';
import { percentile, round, textTable } from './lib/stats';

const ROOT = join(__dirname, '..');
const DIST = process.env.PACS_DIST_DIR ?? join(ROOT, 'dist');
const RESULTS_DIR = join(__dirname, 'results');
const BENCH_PASSWORD = 'bench-password';
const OWN_PASSWORD = 'soak-password';
const DEVICE_AET = 'SOAK_CT';
const MAX_MEMORY_GROWTH = 0.2;

interface Options {
  seconds: number;
  connections: number;
  warmup?: number;
  source: string;
  database: string;
  ownSeed: boolean;
  refresh: boolean;
  ingestEvery: number;
}

function parseOptions(): Options {
  return new Command()
    .option(
      '--seconds <n>',
      'duration (default SOAK_SECONDS or 300)',
      (v) => Number(v),
      Number(process.env.SOAK_SECONDS ?? 300),
    )
    .option('--connections <n>', 'concurrent keep-alive connections', (v) => Number(v), 64)
    .option('--warmup <n>', 'seconds before memory is measured (default 20% of the run, 10-60 s)', (v) => Number(v))
    .option('--source <name>', 'the benchmark seed to copy', DEFAULT_BENCH_DATABASE)
    .option('--database <name>', 'the copy the soak runs on', 'pacs_soak')
    .option('--own-seed', 'use a small seed of its own even when the benchmark seed exists', false)
    .option('--refresh', 'copy the benchmark seed again', false)
    .option('--ingest-every <ms>', 'a device sends a study this often', (v) => Number(v), 2000)
    .parse(process.argv)
    .opts<Options>();
}

// -------------------------------------------------------------------------------------------------
// Data

interface Dataset {
  database: string;
  origin: string;
  password: string;
  studies: number;
}

async function exists(admin: Client, database: string): Promise<boolean> {
  return (await admin.query('SELECT 1 FROM pg_database WHERE datname = $1', [database])).rowCount === 1;
}

async function hasBenchUsers(database: string): Promise<boolean> {
  const client = new Client({ connectionString: databaseUrl(database) });
  await client.connect();
  try {
    const { rows } = await client.query(`SELECT password FROM users WHERE email = 'super@pacs.bench'`);
    return rows.length === 1 && bcrypt.compareSync(BENCH_PASSWORD, rows[0].password);
  } catch {
    return false;
  } finally {
    await client.end();
  }
}

/** The benchmark seed's copy when the seed exists, else a small seed of our own. */
async function prepareDataset(options: Options): Promise<Dataset> {
  const admin = new Client({ connectionString: databaseUrl('postgres') });
  await admin.connect();
  try {
    const useBench = !options.ownSeed && (await exists(admin, options.source)) && (await hasBenchUsers(options.source));
    if (useBench) {
      if (options.refresh || !(await exists(admin, options.database))) {
        const started = Date.now();
        await admin.query(`DROP DATABASE IF EXISTS ${quoteIdent(options.database)}`);
        // A template copy needs the seed idle for a moment: retry while a benchmark is connected.
        for (let attempt = 1; ; attempt++) {
          try {
            await admin.query(`CREATE DATABASE ${quoteIdent(options.database)} TEMPLATE ${quoteIdent(options.source)}`);
            break;
          } catch (error) {
            if (attempt >= 20 || !/being accessed by other users/.test((error as Error).message)) throw error;
            await new Promise((resolve) => setTimeout(resolve, 3000));
          }
        }
        console.log(`copied ${options.source} to ${options.database} in ${seconds(started)}`);
      }
      await migrate(options.database);
      return {
        database: options.database,
        origin: `copy of ${options.source}`,
        password: BENCH_PASSWORD,
        studies: await countStudies(options.database),
      };
    }
  } finally {
    await admin.end();
  }
  const database = `${options.database}_small`;
  await seedOwn(database);
  return { database, origin: 'own small seed', password: OWN_PASSWORD, studies: await countStudies(database) };
}

/**
 * Brings a copy made from an older build's seed up to this build's schema before the API starts (the
 * API would migrate it itself, but a migration that backfills a million rows outlasts the start-up
 * wait). The copy is kept, so a schema change is paid once.
 */
async function migrate(database: string): Promise<void> {
  const started = Date.now();
  const dataSource = await openDataSource(databaseUrl(database), { migrate: false });
  try {
    const applied = await runMigrations(dataSource);
    if (applied.length) console.log(`migrated ${database} (${applied.join(', ')}) in ${seconds(started)}`);
  } finally {
    await dataSource.destroy();
  }
}

async function countStudies(database: string): Promise<number> {
  const client = new Client({ connectionString: databaseUrl(database) });
  await client.connect();
  try {
    // The planner's estimate: exact counts of a million rows are not worth the wait here.
    const { rows } = await client.query(`SELECT count(*)::int AS n FROM (SELECT 1 FROM studies LIMIT 2000000) s`);
    return rows[0].n;
  } finally {
    await client.end();
  }
}

/** One clinic, two units, an admin and four users, 20,000 studies with patients and series. */
async function seedOwn(database: string): Promise<void> {
  const dataSource = await openDataSource(databaseUrl(database), { migrate: true });
  await dataSource.destroy();
  const db = new Client({ connectionString: databaseUrl(database) });
  await db.connect();
  try {
    const { rows } = await db.query(`SELECT 1 FROM tenants WHERE slug = 'soak-clinic'`);
    if (rows.length > 0) return;
    const started = Date.now();
    const hash = bcrypt.hashSync(OWN_PASSWORD, 10);
    await db.query('BEGIN');
    const {
      rows: [tenant],
    } = await db.query(`INSERT INTO tenants (name, slug) VALUES ('Soak Clinic', 'soak-clinic') RETURNING id`);
    const units: string[] = [];
    for (const n of [1, 2]) {
      const {
        rows: [unit],
      } = await db.query(`INSERT INTO units (tenant_id, name, slug) VALUES ($1, $2, $3) RETURNING id`, [
        tenant.id,
        `Soak Unit ${n}`,
        `soak-unit-${n}`,
      ]);
      units.push(unit.id);
    }
    await db.query(
      `INSERT INTO users (tenant_id, unit_id, name, email, password, is_tenant_admin)
       VALUES ($1, $2, 'Soak Admin', 'admin@soak.bench', $3, true)`,
      [tenant.id, units[0], hash],
    );
    for (let n = 1; n <= 4; n++) {
      await db.query(`INSERT INTO users (tenant_id, unit_id, name, email, password) VALUES ($1, $2, $3, $4, $5)`, [
        tenant.id,
        units[n % 2],
        `Soak User ${n}`,
        `user${n}@soak.bench`,
        hash,
      ]);
    }
    await db.query(
      `INSERT INTO users (name, email, password, is_super_admin) VALUES ('Soak Root', 'super@soak.bench', $1, true)`,
      [hash],
    );
    await db.query(
      `INSERT INTO patients (tenant_id, patient_id, patient_name, patient_birth_date, patient_sex)
       SELECT $1, 'SP' || lpad(g::text, 6, '0'),
              (ARRAY['SILVA','SANTOS','OLIVEIRA','SOUZA','LIMA','COSTA'])[1 + g % 6] || '^' || (ARRAY['ANA','JOSE','MARIA','JOAO'])[1 + g % 4] || g,
              date '1950-01-01' + g % 20000, (ARRAY['M','F'])[1 + g % 2]
         FROM generate_series(1, 7000) g`,
      [tenant.id],
    );
    await db.query(
      `INSERT INTO studies (tenant_id, unit_id, patient_uuid, imgsrv_study_id, study_instance_uid, patient_id, patient_name,
                            patient_birth_date, patient_sex, accession_number, study_date, study_description, modalities,
                            report_status, created_at)
       SELECT $1, ($2::uuid[])[1 + g % 2], p.id, md5('soak-' || g), '2.25.888.' || g, p.patient_id, p.patient_name,
              p.patient_birth_date, p.patient_sex, 'SK' || lpad(g::text, 8, '0'), date '2016-01-01' + g % 3000,
              'Exam ' || g % 7, ARRAY[(ARRAY['CT','MR','CR','US'])[1 + g % 4]], 'pending', now() - (g || ' seconds')::interval
         FROM generate_series(1, 20000) g
         JOIN (SELECT id, patient_id, patient_name, patient_birth_date, patient_sex, row_number() OVER (ORDER BY patient_id) - 1 AS rn
                 FROM patients WHERE tenant_id = $1) p ON p.rn = g % 7000`,
      [tenant.id, units],
    );
    await db.query(
      `INSERT INTO series (study_id, imgsrv_series_id, series_instance_uid, modality, series_number, manufacturer, instance_count)
       SELECT s.id, md5(s.id::text || n), s.study_instance_uid || '.' || n, s.modalities[1], n, 'ACME', 50
         FROM studies s, generate_series(1, 2) n WHERE s.tenant_id = $1`,
      [tenant.id],
    );
    await db.query('COMMIT');
    await db.query('VACUUM ANALYZE');
    console.log(`seeded ${database} (20,000 studies) in ${seconds(started)}`);
  } catch (error) {
    await db.query('ROLLBACK').catch(() => undefined);
    throw error;
  } finally {
    await db.end();
  }
}

// -------------------------------------------------------------------------------------------------
// Who reads what

interface Reader {
  email: string;
  token: string;
  studies: Array<{ id: string; uid: string }>;
  viewer: Array<{ token: string; uid: string }>;
}

interface Plan {
  tenantId: string;
  unitId: string;
  emails: string[];
  searches: string[];
}

async function plan(database: string): Promise<Plan> {
  const db = new Client({ connectionString: databaseUrl(database) });
  await db.connect();
  try {
    const {
      rows: [tenant],
    } = await db.query(
      `SELECT t.id, (SELECT u.id FROM units u WHERE u.tenant_id = t.id ORDER BY u.name LIMIT 1) AS unit_id
         FROM tenants t WHERE t.slug <> 'quarantine'
        ORDER BY (SELECT count(*) FROM users WHERE tenant_id = t.id) DESC, t.name LIMIT 1`,
    );
    // The biggest clinic by studies, from the planner's per-tenant index statistics, is costly on a
    // million rows; the seeds give the biggest clinic the most users too, which is cheap to count.
    const { rows: admins } = await db.query(
      `SELECT email FROM users WHERE tenant_id = $1 AND is_tenant_admin AND is_active LIMIT 1`,
      [tenant.id],
    );
    const { rows: users } = await db.query(
      `SELECT email FROM users WHERE tenant_id = $1 AND NOT is_tenant_admin AND is_active AND unit_id IS NOT NULL ORDER BY email LIMIT 6`,
      [tenant.id],
    );
    const { rows: roots } = await db.query(`SELECT email FROM users WHERE is_super_admin AND is_active ORDER BY email LIMIT 1`);
    const { rows: names } = await db.query(
      `SELECT DISTINCT split_part(patient_name, '^', 1) AS surname FROM (SELECT patient_name FROM studies WHERE tenant_id = $1 LIMIT 5000) s`,
      [tenant.id],
    );
    return {
      tenantId: tenant.id,
      unitId: tenant.unit_id,
      emails: [...admins, ...users, ...roots].map((r) => r.email),
      searches: names
        .map((r) => r.surname.slice(0, 4))
        .filter((s: string) => s.length >= 3)
        .slice(0, 30),
    };
  } finally {
    await db.end();
  }
}

// -------------------------------------------------------------------------------------------------
// HTTP

const agent = new http.Agent({ keepAlive: true, maxSockets: 256 });

interface Answer {
  status: number;
  body: string;
  ms: number;
}

function request(
  base: URL,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
  keepBody = false,
): Promise<Answer> {
  const started = performance.now();
  return new Promise((resolve) => {
    const req = http.request(
      {
        host: base.hostname,
        port: base.port,
        method,
        path,
        agent,
        headers: body ? { ...headers, 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) } : headers,
        timeout: 30_000,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (chunk: Buffer) => keepBody && chunks.push(chunk));
        res.on('end', () =>
          resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), ms: performance.now() - started }),
        );
        res.on('error', () => resolve({ status: 0, body: 'response error', ms: performance.now() - started }));
      },
    );
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', (error) => resolve({ status: 0, body: error.message, ms: performance.now() - started }));
    req.end(body);
  });
}

const clientIp = () => `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`;

async function signIn(base: URL, email: string, password: string): Promise<string> {
  const answer = await request(
    base,
    'POST',
    '/api/login',
    { 'x-forwarded-for': clientIp() },
    JSON.stringify({ email, password }),
    true,
  );
  if (answer.status !== 200) throw new Error(`sign-in of ${email}: ${answer.status} ${answer.body}`);
  return JSON.parse(answer.body).access_token;
}

async function studiesOf(base: URL, token: string): Promise<Array<{ id: string; uid: string }>> {
  const out: Array<{ id: string; uid: string }> = [];
  for (const page of [1, 2, 3, 5, 8, 13]) {
    const answer = await request(
      base,
      'GET',
      `/api/studies?page=${page}`,
      { authorization: `Bearer ${token}` },
      undefined,
      true,
    );
    if (answer.status !== 200) throw new Error(`studies page ${page}: ${answer.status} ${answer.body}`);
    for (const s of JSON.parse(answer.body).data) out.push({ id: s.id, uid: s.study_instance_uid });
  }
  return out;
}

async function viewerTokens(base: URL, reader: Reader, count: number): Promise<Array<{ token: string; uid: string }>> {
  const out: Array<{ token: string; uid: string }> = [];
  for (const study of reader.studies.slice(0, count)) {
    const answer = await request(
      base,
      'POST',
      '/api/viewer/token',
      { authorization: `Bearer ${reader.token}` },
      JSON.stringify({ study_id: study.id }),
      true,
    );
    if (answer.status !== 200) throw new Error(`viewer token: ${answer.status} ${answer.body}`);
    out.push({ token: JSON.parse(answer.body).token, uid: study.uid });
  }
  return out;
}

// -------------------------------------------------------------------------------------------------
// Processes

function spawnBuilt(entry: 'main' | 'worker', env: Record<string, string>): ChildProcess & { output(): string } {
  const file = join(DIST, 'src', `${entry}.js`);
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` first (or set PACS_DIST_DIR)`);
  const args = entry === 'main' ? [...API_NODE_FLAGS, file] : [file];
  const child = spawn(process.execPath, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  const keep = (chunk: Buffer) => (output = (output + chunk.toString()).slice(-30_000));
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return Object.assign(child, { output: () => output });
}

function stop(child: ChildProcess): Promise<void> {
  return new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve();
    const timer = setTimeout(() => child.kill('SIGKILL'), 15_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

// -------------------------------------------------------------------------------------------------

type Kind =
  | 'studies page'
  | 'studies search'
  | 'study detail'
  | 'study series'
  | 'patients page'
  | 'viewer validate'
  | 'viewer token'
  | 'login';

const MIX: Array<[Kind, number]> = [
  ['studies page', 22],
  ['studies search', 8],
  ['study detail', 20],
  ['study series', 6],
  ['patients page', 8],
  ['viewer validate', 30],
  ['viewer token', 4],
  ['login', 2],
];
const MIX_TOTAL = MIX.reduce((sum, [, w]) => sum + w, 0);

function pickKind(): Kind {
  let roll = Math.random() * MIX_TOTAL;
  for (const [kind, weight] of MIX) {
    roll -= weight;
    if (roll < 0) return kind;
  }
  return 'studies page';
}

async function main(): Promise<void> {
  const options = parseOptions();
  const warmup = options.warmup ?? Math.min(60, Math.max(10, Math.round(options.seconds * 0.2)));
  const started = Date.now();
  const dataset = await prepareDataset(options);
  const who = await plan(dataset.database);
  console.log(
    `soak on ${dataset.database} (${dataset.origin}, ${dataset.studies.toLocaleString('en')} studies): ${options.seconds} s, ${options.connections} connections, warm-up ${warmup} s`,
  );

  const workDir = await fs.mkdtemp(join(os.tmpdir(), 'pacs-soak-'));
  const apiPort = await freePort();
  const secret = randomBytes(24).toString('hex');
  const orthanc = await startOrthanc({
    stableAge: 2,
    webhookUrl: `http://127.0.0.1:${apiPort}/api/imgsrv/webhook`,
    webhookSecret: secret,
  });
  const prefix = `pacs_soak_${randomBytes(3).toString('hex')}`;
  const env: Record<string, string> = {
    NODE_ENV: 'production',
    PORT: String(apiPort),
    DATABASE_URL: databaseUrl(dataset.database),
    QUEUE_PREFIX: prefix,
    JWT_SECRET: randomBytes(32).toString('hex'),
    WEBHOOK_SECRET: secret,
    IMGSRV_URL: orthanc.url,
    IMGSRV_USERNAME: orthanc.username,
    IMGSRV_PASSWORD: orthanc.password,
    TRUST_PROXY: '127.0.0.1',
    RECONCILE_INTERVAL: '10',
    LOG_LEVEL: 'warn',
  };
  const api = spawnBuilt('main', env);
  const worker = spawnBuilt('worker', env);
  const base = new URL(`http://127.0.0.1:${apiPort}`);
  const cleanup = async () => {
    await Promise.allSettled([stop(api), stop(worker)]);
    await orthanc.destroy().catch(() => undefined);
    await fs.rm(workDir, { recursive: true, force: true });
    agent.destroy();
  };

  try {
    for (const deadline = Date.now() + 120_000; ;) {
      if (api.exitCode !== null) throw new Error(`API exited: ${api.output()}`);
      if ((await request(base, 'GET', '/api/health')).status === 200) break;
      if (Date.now() > deadline) throw new Error(`API did not come up: ${api.output()}`);
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
    // The device the worker ingests from, registered to the clinic being read.
    const db = new Client({ connectionString: databaseUrl(dataset.database) });
    await db.connect();
    await db.query(
      `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, 'Soak CT', $3, '127.0.0.1')
       ON CONFLICT (aet) DO UPDATE SET tenant_id = EXCLUDED.tenant_id, unit_id = EXCLUDED.unit_id`,
      [who.tenantId, who.unitId, DEVICE_AET],
    );

    const readers: Reader[] = [];
    for (const email of who.emails) {
      const token = await signIn(base, email, dataset.password);
      const reader: Reader = { email, token, studies: await studiesOf(base, token), viewer: [] };
      if (reader.studies.length === 0) continue;
      reader.viewer = await viewerTokens(base, reader, 10);
      readers.push(reader);
    }
    if (readers.length === 0) throw new Error('no reader sees any study');

    // ---- load --------------------------------------------------------------------------------
    const latencies = new Map<Kind, number[]>(MIX.map(([kind]) => [kind, []]));
    const statuses = new Map<Kind, Map<number, number>>(MIX.map(([kind]) => [kind, new Map()]));
    const errors: string[] = [];
    let errorCount = 0;
    const perSecond: number[] = [];
    let completedThisSecond = 0;
    const memory: Array<{ t: number; api: number; worker: number }> = [];
    let running = true;
    const loadStart = Date.now();
    const endAt = loadStart + options.seconds * 1000;

    const tick = setInterval(() => {
      // Only seconds of load: after endAt no request starts, and the last ones in flight (a
      // sign-in can take a second under load) would make a short last "second" of a few answers.
      if (Date.now() <= endAt) perSecond.push(completedThisSecond);
      completedThisSecond = 0;
      const t = (Date.now() - loadStart) / 1000;
      if (Math.round(t) % 2 === 0) {
        memory.push({ t, api: memoryOf(api.pid!)?.rssMb ?? NaN, worker: memoryOf(worker.pid!)?.rssMb ?? NaN });
      }
    }, 1000);

    // Viewer tokens live 600 s: long runs renew them.
    const renew = setInterval(() => {
      for (const reader of readers) {
        void viewerTokens(base, reader, 10).then(
          (fresh) => (reader.viewer = fresh),
          () => undefined,
        );
      }
    }, 240_000);

    // A device sending studies all along; the worker indexes them while the readers read.
    let sent = 0;
    let sendFailures = 0;
    const device = (async () => {
      while (running) {
        const n = ++sent;
        try {
          const study = await writeStudy(join(workDir, `s${n}`), {
            patientId: `SOAK-${prefix}-${n}`,
            patientName: `SOAK^PATIENT${n}`,
            series: [
              { modality: 'CT', seriesNumber: 1, instances: 3, rows: 128, columns: 128 },
              { modality: 'CT', seriesNumber: 2, instances: 2, rows: 64, columns: 64 },
            ],
          });
          await sendWithStorescu(study.files, { aet: DEVICE_AET, port: orthanc.dicomPort });
          await fs.rm(join(workDir, `s${n}`), { recursive: true, force: true });
        } catch {
          sendFailures++;
        }
        await new Promise((resolve) => setTimeout(resolve, options.ingestEvery));
      }
    })();

    const one = async (): Promise<void> => {
      const reader = readers[randomInt(readers.length)];
      const auth = { authorization: `Bearer ${reader.token}` };
      const study = reader.studies[randomInt(reader.studies.length)];
      const kind = pickKind();
      let answer: Answer;
      switch (kind) {
        case 'studies page':
          answer = await request(base, 'GET', `/api/studies?page=${1 + randomInt(30)}`, auth);
          break;
        case 'studies search': {
          const term = who.searches.length ? who.searches[randomInt(who.searches.length)] : 'SILV';
          answer = await request(base, 'GET', `/api/studies?search=${encodeURIComponent(term)}`, auth);
          break;
        }
        case 'study detail':
          answer = await request(base, 'GET', `/api/studies/${study.id}`, auth);
          break;
        case 'study series':
          answer = await request(base, 'GET', `/api/studies/${study.id}/series`, auth);
          break;
        case 'patients page':
          answer = await request(base, 'GET', `/api/patients?page=${1 + randomInt(10)}`, auth);
          break;
        case 'viewer validate': {
          const pair = reader.viewer[randomInt(reader.viewer.length)];
          answer = await request(base, 'GET', '/api/viewer/token/validate', {
            'x-viewer-token': pair.token,
            'x-original-uri': `/dicom-web/studies/${pair.uid}/series?includefield=all`,
          });
          break;
        }
        case 'viewer token':
          answer = await request(base, 'POST', '/api/viewer/token', auth, JSON.stringify({ study_id: study.id }));
          break;
        case 'login':
          answer = await request(
            base,
            'POST',
            '/api/login',
            { 'x-forwarded-for': clientIp() },
            JSON.stringify({ email: reader.email, password: dataset.password }),
          );
          break;
      }
      completedThisSecond++;
      latencies.get(kind)!.push(answer.ms);
      const counts = statuses.get(kind)!;
      counts.set(answer.status, (counts.get(answer.status) ?? 0) + 1);
      if (answer.status !== 200) {
        errorCount++;
        if (errors.length < 20) errors.push(`${kind}: ${answer.status} ${answer.body.slice(0, 200)}`);
      }
    };

    console.log(
      `load: ${readers.length} readers, ${readers.reduce((n, r) => n + r.studies.length, 0)} studies, ${readers.reduce((n, r) => n + r.viewer.length, 0)} viewer tokens`,
    );
    await Promise.all(
      Array.from({ length: options.connections }, async () => {
        while (Date.now() < endAt) await one();
      }),
    );
    running = false;
    clearInterval(tick);
    clearInterval(renew);
    await device;

    // ---- everything the device sent is indexed ------------------------------------------------
    const ingestDeadline = Date.now() + 120_000;
    let ingested = 0;
    let orthancStudies = 0;
    for (;;) {
      const ids = (await (
        await fetch(`${orthanc.url}/studies`, {
          headers: { authorization: `Basic ${Buffer.from(`${orthanc.username}:${orthanc.password}`).toString('base64')}` },
        })
      ).json()) as string[];
      orthancStudies = ids.length;
      const { rows } = await db.query(
        `SELECT count(*)::int AS n FROM studies s
          WHERE s.imgsrv_study_id = ANY($1)
            AND (SELECT count(*) FROM instances i JOIN series se ON se.id = i.series_id WHERE se.study_id = s.id) = 5
            AND EXISTS (SELECT 1 FROM thumbnails t WHERE t.study_id = s.id AND t.series_id IS NULL)`,
        [ids],
      );
      ingested = rows[0].n;
      if (ingested === orthancStudies || Date.now() > ingestDeadline) break;
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    await db.end();

    // ---- report --------------------------------------------------------------------------------
    const after = memory.filter((m) => m.t >= warmup);
    const window = Math.max(1, Math.round(after.length * 0.15));
    const median = (values: number[]) => percentile([...values], 50);
    const baseline = {
      api: median(after.slice(0, window).map((m) => m.api)),
      worker: median(after.slice(0, window).map((m) => m.worker)),
    };
    const final = {
      api: median(after.slice(-window).map((m) => m.api)),
      worker: median(after.slice(-window).map((m) => m.worker)),
    };
    const growth = { api: final.api / baseline.api - 1, worker: final.worker / baseline.worker - 1 };
    const peak = { api: Math.max(...memory.map((m) => m.api)), worker: Math.max(...memory.map((m) => m.worker)) };
    const all = [...latencies.values()].flat();
    const total = all.length;
    const rows = MIX.map(([kind]) => {
      const values = latencies.get(kind)!;
      const sorted = [...values].sort((a, b) => a - b);
      return [
        kind,
        values.length.toLocaleString('en'),
        round(percentile(sorted, 50, true)).toFixed(1),
        round(percentile(sorted, 99, true)).toFixed(1),
        round(sorted.at(-1) ?? NaN).toFixed(1),
        JSON.stringify(Object.fromEntries(statuses.get(kind)!)),
      ];
    });
    const sortedAll = all.sort((a, b) => a - b);
    rows.push([
      'all',
      total.toLocaleString('en'),
      round(percentile(sortedAll, 50, true)).toFixed(1),
      round(percentile(sortedAll, 99, true)).toFixed(1),
      round(sortedAll.at(-1) ?? NaN).toFixed(1),
      '',
    ]);
    const steady = perSecond.slice(warmup);
    const result = {
      finished_at: new Date().toISOString(),
      dataset,
      seconds: options.seconds,
      connections: options.connections,
      warmup_seconds: warmup,
      requests: total,
      throughput_per_second: round(total / options.seconds),
      steady_min_per_second: steady.length ? Math.min(...steady) : null,
      per_second: perSecond,
      errors: errorCount,
      error_samples: errors,
      latency_ms: Object.fromEntries(
        rows.map((r) => [
          r[0],
          { count: Number(r[1].replace(/,/g, '')), p50: Number(r[2]), p99: Number(r[3]), max: Number(r[4]) },
        ]),
      ),
      memory_mb: {
        baseline_after_warmup: { api: round(baseline.api), worker: round(baseline.worker) },
        end: { api: round(final.api), worker: round(final.worker) },
        peak: { api: round(peak.api), worker: round(peak.worker) },
        growth_percent: { api: round(growth.api * 100), worker: round(growth.worker * 100) },
        samples: memory.map((m) => [round(m.t, 0), round(m.api), round(m.worker)]),
      },
      ingestion: { sent, send_failures: sendFailures, in_image_server: orthancStudies, indexed_complete: ingested },
      total_seconds: round((Date.now() - started) / 1000),
    };
    mkdirSync(RESULTS_DIR, { recursive: true });
    const file = join(RESULTS_DIR, `soak-${result.finished_at.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify(result, null, 2));

    const failures: string[] = [];
    if (errorCount > 0) failures.push(`${errorCount} errors`);
    if (!(growth.api < MAX_MEMORY_GROWTH)) failures.push(`API memory grew ${round(growth.api * 100)}% after warm-up`);
    if (ingested !== orthancStudies) failures.push(`${orthancStudies - ingested} of ${orthancStudies} studies not indexed`);
    console.log(
      [
        '',
        textTable(['request', 'count', 'p50 ms', 'p99 ms', 'max ms', 'statuses'], rows),
        '',
        `${total.toLocaleString('en')} requests in ${options.seconds} s (${result.throughput_per_second}/s, slowest steady second ${result.steady_min_per_second}/s); errors: ${errorCount}`,
        `API memory: ${round(baseline.api)} MiB after warm-up -> ${round(final.api)} MiB at the end (${round(growth.api * 100)}%), peak ${round(peak.api)} MiB`,
        `worker memory: ${round(baseline.worker)} MiB -> ${round(final.worker)} MiB (${round(growth.worker * 100)}%), peak ${round(peak.worker)} MiB`,
        `ingestion: ${sent} studies sent (${sendFailures} failed to send), ${ingested}/${orthancStudies} indexed with thumbnails`,
        ...errors.map((e) => `  error: ${e}`),
        `results: ${file}`,
        failures.length
          ? `FAILED: ${failures.join('; ')}`
          : 'PASSED: zero errors, memory growth under 20%, every study indexed',
      ].join('\n'),
    );
    process.exitCode = failures.length ? 1 : 0;
  } finally {
    await cleanup();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
