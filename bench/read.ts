/**
 * `npm run bench:read [-- --studies 100000 --duration 8 --connections 4 --database pacs_bench_read --reseed --no-build]`
 *
 * Latency of the clinical reads and throughput of the viewer-token validation, against the built
 * API (`node dist/src/main.js`, NODE_ENV=production) on a seeded database of its own:
 *  - the studies list (page 1, a deep page, a unit user's page 1), a search, a study detail,
 *    the patients list: p50 / p99 with autocannon at `--connections` concurrent connections;
 *  - GET /api/viewer/token/validate next to a bare Node `http` server answering 200, measured in the
 *    same run on the same machine at `--throughput-connections`.
 *
 * The seed (INSERT ... SELECT over generate_series, so it takes seconds) is kept between runs and
 * recreated only when it is missing, smaller than asked, or with --reseed. Its dedicated database is
 * not the benchmark issue's one, so neither run can drop the other's data. To measure on the
 * benchmark issue's seed instead (`npm run bench:seed`), pass `--seed-file bench/results/users.json`:
 * its database, password, largest clinic's admin and first user are used, and nothing is seeded.
 */
import autocannon from 'autocannon';
import { ChildProcess, execFileSync, spawn } from 'child_process';
import { Command } from 'commander';
import { randomBytes } from 'crypto';
import { existsSync, readFileSync } from 'fs';
import * as net from 'net';
import { join } from 'path';
import { Client } from 'pg';
import * as bcrypt from 'bcryptjs';
import { ensureDatabase, openDataSource } from '../src/database/data-source-options';
import { API_NODE_FLAGS } from './lib/processes';

const ROOT = join(__dirname, '..');
const PASSWORD = 'bench-read-password';
const EMAILS = {
  superAdmin: 'super@read.bench',
  tenantAdmin: 'admin@read.bench',
  unitUser: 'user@read.bench',
};
const SURNAMES = [
  'SILVA',
  'SANTOS',
  'OLIVEIRA',
  'SOUZA',
  'RODRIGUES',
  'FERREIRA',
  'ALVES',
  'PEREIRA',
  'LIMA',
  'GOMES',
  'COSTA',
  'RIBEIRO',
  'MARTINS',
  'CARVALHO',
  'ALMEIDA',
  'LOPES',
  'SOARES',
  'FERNANDES',
  'VIEIRA',
  'BARBOSA',
];
const GIVEN = [
  'ANA',
  'MARIA',
  'JOSE',
  'JOAO',
  'ANTONIO',
  'FRANCISCA',
  'CARLOS',
  'PAULO',
  'PEDRO',
  'LUCAS',
  'LUIZA',
  'MARCOS',
  'JULIANA',
  'RAFAEL',
  'BEATRIZ',
  'GABRIEL',
  'FERNANDA',
  'BRUNO',
  'LETICIA',
  'FELIPE',
];
const MODALITIES = ['CT', 'CR', 'MR', 'US', 'DX', 'MG'];

interface Options {
  studies: number;
  database: string;
  duration: number;
  connections: number;
  throughputConnections: number;
  reseed: boolean;
  build: boolean;
  seedFile?: string;
}

/** Who signs in, and where. */
interface Target {
  database: string;
  password: string;
  tenantAdmin: string;
  unitUser: string;
}

function parseOptions(): Options {
  const program = new Command()
    .option('--studies <n>', 'studies in the seed', (v) => Number(v), 100_000)
    .option('--database <name>', 'dedicated database', 'pacs_bench_read')
    .option('--duration <s>', 'seconds per measurement', (v) => Number(v), 8)
    .option('--connections <n>', 'concurrent connections for the latency runs', (v) => Number(v), 4)
    .option('--throughput-connections <n>', 'concurrent connections for validate vs bare http', (v) => Number(v), 32)
    .option('--reseed', 'recreate the seed', false)
    .option('--no-build', 'use dist/ as it is')
    .option('--seed-file <path>', "use the benchmark seed's users.json (bench:seed) instead of our own seed")
    .parse(process.argv);
  return program.opts<Options>();
}

function databaseUrl(database: string): string {
  const url = new URL(process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/pacs');
  url.pathname = `/${database}`;
  return url.toString();
}

const seconds = (fromMs: number) => `${((Date.now() - fromMs) / 1000).toFixed(1)} s`;

// ---------------------------------------------------------------------------------------------
// Seed
// ---------------------------------------------------------------------------------------------

async function seedIsThere(url: string, studies: number): Promise<boolean> {
  const client = new Client({ connectionString: url });
  try {
    await client.connect();
    const [{ n }] = (await client.query(`SELECT count(*)::int AS n FROM studies`)).rows;
    const users = (await client.query(`SELECT count(*)::int AS n FROM users WHERE email = ANY($1)`, [Object.values(EMAILS)]))
      .rows[0].n;
    return n >= studies && users === 3;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * One large clinic (60% of the studies, four units) and nine smaller ones; about three studies per
 * patient; one or two series per study; `modalities` left null on one study in ten, as before the
 * worker has indexed it.
 */
async function seed(url: string, database: string, studies: number): Promise<void> {
  const started = Date.now();
  const admin = new Client({ connectionString: databaseUrl('postgres') });
  await admin.connect();
  await admin.query(`DROP DATABASE IF EXISTS "${database.replace(/"/g, '""')}" WITH (FORCE)`);
  await admin.end();
  await ensureDatabase(url);
  const ds = await openDataSource(url, { migrate: true });
  await ds.destroy();

  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    await db.query(`SET synchronous_commit = off`);
    const hash = bcrypt.hashSync(PASSWORD, 10);
    const tenants: Array<{ id: string; units: string[]; studies: number }> = [];
    for (let t = 1; t <= 10; t++) {
      const [{ id }] = (
        await db.query(`INSERT INTO tenants (name, slug) VALUES ($1, $2) RETURNING id`, [
          `Bench Clinic ${t}`,
          `bench-clinic-${t}`,
        ])
      ).rows;
      const units: string[] = [];
      for (let u = 1; u <= (t === 1 ? 4 : 1); u++) {
        const [unit] = (
          await db.query(`INSERT INTO units (tenant_id, name, slug) VALUES ($1, $2, $3) RETURNING id`, [
            id,
            `Unit ${u}`,
            `bench-clinic-${t}-unit-${u}`,
          ])
        ).rows;
        units.push(unit.id);
      }
      const share = t === 1 ? Math.round(studies * 0.6) : Math.floor((studies - Math.round(studies * 0.6)) / 9);
      tenants.push({ id, units, studies: share });
    }
    tenants[tenants.length - 1].studies += studies - tenants.reduce((sum, t) => sum + t.studies, 0);

    const main = tenants[0];
    await db.query(
      `INSERT INTO users (tenant_id, unit_id, name, email, password, is_super_admin, is_tenant_admin) VALUES
         (NULL, NULL, 'Bench Super', $1, $4, true, false),
         ($5, $6, 'Bench Admin', $2, $4, false, true),
         ($5, $6, 'Bench User', $3, $4, false, false)`,
      [EMAILS.superAdmin, EMAILS.tenantAdmin, EMAILS.unitUser, hash, main.id, main.units[0]],
    );

    let unitSerial = 0;
    for (const tenant of tenants) {
      const patients = Math.max(1, Math.round(tenant.studies / 3));
      await db.query(
        `INSERT INTO patients (tenant_id, patient_id, patient_name, patient_birth_date, patient_sex, created_at)
         SELECT $1, 'MRN' || lpad(g::text, 7, '0'),
                ($3::text[])[1 + abs(hashint4(g)) % 20] || '^' || ($4::text[])[1 + abs(hashint4(g + 7)) % 20],
                date '1940-01-01' + abs(hashint4(g + 11)) % 29000,
                CASE WHEN g % 2 = 0 THEN 'F' ELSE 'M' END,
                now() - (g || ' minutes')::interval
           FROM generate_series(1, $2) g`,
        [tenant.id, patients, SURNAMES, GIVEN],
      );
      await db.query(`DROP TABLE IF EXISTS bench_patients`);
      await db.query(
        `CREATE TEMP TABLE bench_patients AS
           SELECT id, patient_id, patient_name, patient_birth_date, patient_sex,
                  row_number() OVER (ORDER BY patient_id) - 1 AS rn
             FROM patients WHERE tenant_id = $1`,
        [tenant.id],
      );
      await db.query(`CREATE INDEX ON bench_patients (rn)`);
      const perUnit = Math.ceil(tenant.studies / tenant.units.length);
      for (const [index, unitId] of tenant.units.entries()) {
        unitSerial++;
        const count = Math.min(perUnit, tenant.studies - index * perUnit);
        await db.query(
          `INSERT INTO studies (tenant_id, unit_id, patient_uuid, imgsrv_study_id, study_instance_uid, patient_id,
                                patient_name, patient_birth_date, patient_sex, accession_number, study_date,
                                study_description, modalities, report_status, created_at, updated_at)
           SELECT $1, $2, p.id, md5($3::text || '-' || g), '2.25.777.' || $3::text || '.' || g, p.patient_id, p.patient_name,
                  p.patient_birth_date, p.patient_sex, 'A' || $3::text || lpad(g::text, 8, '0'),
                  date '2015-01-01' + abs(hashint4(g * 31 + $3::int)) % 3650,
                  'Exam ' || ($6::text[])[1 + g % 6],
                  CASE WHEN g % 10 = 0 THEN NULL ELSE ARRAY[($6::text[])[1 + g % 6]] END,
                  (ARRAY['pending', 'draft', 'final'])[1 + g % 3],
                  now() - (g || ' seconds')::interval, now()
             FROM generate_series(1, $4) g
             JOIN bench_patients p ON p.rn = g % $5`,
          [tenant.id, unitId, unitSerial, count, Math.max(1, Math.round(tenant.studies / 3)), MODALITIES],
        );
      }
    }
    await db.query(
      `INSERT INTO series (study_id, imgsrv_series_id, series_instance_uid, modality, series_number, manufacturer, instance_count)
       SELECT s.id, md5(s.id::text || n), s.study_instance_uid || '.' || n,
              COALESCE(s.modalities[1], 'CT'), n, 'ACME', 100
         FROM studies s, generate_series(1, 2) n
        WHERE n = 1 OR abs(hashtext(s.id::text)) % 2 = 0`,
    );
    await db.query(`VACUUM ANALYZE`);
  } finally {
    await db.end();
  }
  console.log(`Seeded ${studies.toLocaleString('en')} studies into ${database} in ${seconds(started)}`);
}

// ---------------------------------------------------------------------------------------------
// Processes
// ---------------------------------------------------------------------------------------------

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

async function startProcess(args: string[], env: NodeJS.ProcessEnv, readyUrl: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, args, { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const deadline = Date.now() + 60_000;
  for (;;) {
    if (child.exitCode !== null) throw new Error(`${args.join(' ')} exited ${child.exitCode}:\n${output}`);
    if (
      await fetch(readyUrl).then(
        (r) => r.ok,
        () => false,
      )
    )
      return child;
    if (Date.now() > deadline) {
      child.kill('SIGKILL');
      throw new Error(`${args.join(' ')} did not answer ${readyUrl}:\n${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
}

function stopProcess(child: ChildProcess | undefined): Promise<void> {
  if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
    child.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

// ---------------------------------------------------------------------------------------------
// Measurements
// ---------------------------------------------------------------------------------------------

interface Scenario {
  name: string;
  url: string;
  headers?: Record<string, string>;
  connections: number;
}

interface Measured {
  name: string;
  connections: number;
  rps: number;
  p50: number;
  p99: number;
  non2xx: number;
  errors: number;
}

function run(scenario: Scenario, duration: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon(
      { url: scenario.url, headers: scenario.headers, connections: scenario.connections, duration, pipelining: 1 },
      (error, result) => (error ? reject(error) : resolve(result)),
    );
  });
}

async function measure(scenario: Scenario, duration: number): Promise<Measured> {
  await run(scenario, Math.min(2, duration)); // warm-up: JIT, pools, caches
  const result = await run(scenario, duration);
  return {
    name: scenario.name,
    connections: scenario.connections,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    non2xx: result.non2xx,
    errors: result.errors + result.timeouts,
  };
}

async function json<T>(response: Response, what: string): Promise<T> {
  if (!response.ok) throw new Error(`${what}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

async function login(api: string, email: string, password: string): Promise<string> {
  const response = await fetch(`${api}/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ email, password }),
  });
  return (await json<{ access_token: string }>(response, `login ${email}`)).access_token;
}

/** The benchmark issue's users.json: its database, password, and the first (largest) clinic's people. */
function targetFromSeedFile(file: string): Target {
  const seedInfo = JSON.parse(readFileSync(file, 'utf8')) as {
    database?: string;
    password?: string;
    tenants?: Array<{ tenant_admin?: string; users?: string[] }>;
  };
  const tenant = seedInfo.tenants?.[0];
  if (!seedInfo.database || !seedInfo.password || !tenant?.tenant_admin || !tenant.users?.[0]) {
    throw new Error(`${file}: expected database, password and tenants[0].tenant_admin / users[0]`);
  }
  return {
    database: seedInfo.database,
    password: seedInfo.password,
    tenantAdmin: tenant.tenant_admin,
    unitUser: tenant.users[0],
  };
}

async function main(): Promise<void> {
  const options = parseOptions();
  let target: Target;
  if (options.seedFile) {
    target = targetFromSeedFile(options.seedFile);
    console.log(`Using the benchmark seed in ${target.database} (${options.seedFile})`);
  } else {
    target = { database: options.database, password: PASSWORD, tenantAdmin: EMAILS.tenantAdmin, unitUser: EMAILS.unitUser };
    const ownUrl = databaseUrl(options.database);
    if (options.reseed || !(await seedIsThere(ownUrl, options.studies))) {
      await seed(ownUrl, options.database, options.studies);
    } else {
      console.log(`Using the existing seed in ${options.database}`);
    }
  }
  const url = databaseUrl(target.database);
  if (options.build || !existsSync(join(ROOT, 'dist', 'src', 'main.js'))) {
    const started = Date.now();
    execFileSync('npx', ['nest', 'build'], { cwd: ROOT, stdio: 'inherit' });
    console.log(`Built in ${seconds(started)}`);
  }

  const [apiPort, barePort] = await Promise.all([freePort(), freePort()]);
  const api = `http://127.0.0.1:${apiPort}`;
  const bare = `http://127.0.0.1:${barePort}`;
  let apiProcess: ChildProcess | undefined;
  let bareProcess: ChildProcess | undefined;
  try {
    apiProcess = await startProcess(
      [...API_NODE_FLAGS, join(ROOT, 'dist', 'src', 'main.js')],
      {
        ...process.env,
        NODE_ENV: 'production',
        PORT: String(apiPort),
        DATABASE_URL: url,
        QUEUE_PREFIX: `${target.database}_read`,
        JWT_SECRET: process.env.JWT_SECRET ?? randomBytes(32).toString('hex'),
        WEBHOOK_SECRET: process.env.WEBHOOK_SECRET ?? randomBytes(16).toString('hex'),
        LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
        MIGRATIONS_RUN: 'true',
      },
      `${api}/api/health`,
    );
    bareProcess = await startProcess(
      ['-e', `require('http').createServer((req, res) => res.end()).listen(${barePort}, '127.0.0.1')`],
      process.env,
      bare,
    );

    const [adminToken, userToken] = await Promise.all([
      login(api, target.tenantAdmin, target.password),
      login(api, target.unitUser, target.password),
    ]);
    const auth = (token: string) => ({ authorization: `Bearer ${token}` });
    const first = await json<{ total: number; last_page: number; data: Array<{ id: string }> }>(
      await fetch(`${api}/api/studies`, { headers: auth(adminToken) }),
      'studies list',
    );
    const deepPage = Math.max(1, Math.floor(first.last_page / 2));
    const client = new Client({ connectionString: url });
    await client.connect();
    const [detail] = (
      await client.query(
        `SELECT s.id, s.study_instance_uid FROM studies s JOIN users u ON u.email = $1 AND u.unit_id = s.unit_id
          ORDER BY s.modalities IS NULL DESC, s.study_date DESC LIMIT 1`,
        [target.unitUser],
      )
    ).rows;
    if (!detail) throw new Error(`${target.unitUser} has no study in their unit`);
    // An accession number of the clinic, from the middle of its list: a selective search.
    const [{ accession_number: accession }] = (
      await client.query(
        `SELECT s.accession_number FROM studies s JOIN users u ON u.email = $1 AND u.tenant_id = s.tenant_id
          WHERE s.accession_number IS NOT NULL ORDER BY s.id OFFSET 1000 LIMIT 1`,
        [target.tenantAdmin],
      )
    ).rows;
    await client.end();
    const viewer = await json<{ token: string }>(
      await fetch(`${api}/api/viewer/token`, {
        method: 'POST',
        headers: { ...auth(userToken), 'content-type': 'application/json' },
        body: JSON.stringify({ study_id: detail.id }),
      }),
      'viewer token',
    );
    const validateHeaders = {
      'x-viewer-token': viewer.token,
      'x-original-uri': `/dicom-web/studies/${detail.study_instance_uid}/series?includefield=all`,
    };
    const check = await fetch(`${api}/api/viewer/token/validate`, { headers: validateHeaders });
    if (check.status !== 200) throw new Error(`validate answered ${check.status}`);

    console.log(
      `Scope of the tenant admin: ${first.total.toLocaleString('en')} studies (${first.last_page} pages); ` +
        `deep page ${deepPage}; ${options.duration} s per run after a warm-up; API LOG_LEVEL=${process.env.LOG_LEVEL ?? 'warn'}`,
    );
    const c = options.connections;
    const scenarios: Scenario[] = [
      { name: 'GET /api/studies page 1 (tenant admin)', url: `${api}/api/studies`, headers: auth(adminToken), connections: c },
      {
        name: `GET /api/studies page ${deepPage} (tenant admin)`,
        url: `${api}/api/studies?page=${deepPage}`,
        headers: auth(adminToken),
        connections: c,
      },
      { name: 'GET /api/studies page 1 (unit user)', url: `${api}/api/studies`, headers: auth(userToken), connections: c },
      {
        name: 'GET /api/studies?search=silva (tenant admin)',
        url: `${api}/api/studies?search=silva`,
        headers: auth(adminToken),
        connections: c,
      },
      {
        name: 'GET /api/studies?search=<accession> (tenant admin)',
        url: `${api}/api/studies?search=${encodeURIComponent(accession)}`,
        headers: auth(adminToken),
        connections: c,
      },
      {
        name: 'GET /api/studies/{id} (unit user)',
        url: `${api}/api/studies/${detail.id}`,
        headers: auth(userToken),
        connections: c,
      },
      { name: 'GET /api/patients page 1 (unit user)', url: `${api}/api/patients`, headers: auth(userToken), connections: c },
      {
        name: 'GET /api/viewer/token/validate',
        url: `${api}/api/viewer/token/validate`,
        headers: validateHeaders,
        connections: options.throughputConnections,
      },
      { name: 'bare node http (200, empty body)', url: bare, connections: options.throughputConnections },
    ];
    const results: Measured[] = [];
    for (const scenario of scenarios) {
      const result = await measure(scenario, options.duration);
      results.push(result);
      console.log(`  ${result.name}: ${Math.round(result.rps)} req/s, p50 ${result.p50} ms, p99 ${result.p99} ms`);
    }
    printTable(results);
    const validate = results[results.length - 2];
    const bareResult = results[results.length - 1];
    const ratio = validate.rps / bareResult.rps;
    const listAndSearch = results.slice(0, 5);
    const worstP99 = Math.max(...listAndSearch.map((r) => r.p99));
    console.log(
      `\nvalidate: ${Math.round(validate.rps)} req/s = ${(ratio * 100).toFixed(0)}% of the bare server ` +
        `(target >= 50%: ${ratio >= 0.5 ? 'met' : 'NOT met'})`,
    );
    console.log(`list and search: worst p99 ${worstP99} ms (target < 50 ms: ${worstP99 < 50 ? 'met' : 'NOT met'})`);
    if (results.some((r) => r.non2xx > 0 || r.errors > 0)) {
      console.log('WARNING: some requests failed (see non-2xx / errors)');
      process.exitCode = 1;
    }
  } finally {
    await Promise.all([stopProcess(apiProcess), stopProcess(bareProcess)]);
  }
}

function printTable(results: Measured[]): void {
  const rows = results.map((r) => [
    r.name,
    String(r.connections),
    Math.round(r.rps).toLocaleString('en'),
    String(r.p50),
    String(r.p99),
    String(r.non2xx + r.errors),
  ]);
  const header = ['scenario', 'conn', 'req/s', 'p50 ms', 'p99 ms', 'failed'];
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => row[i].length)));
  const line = (cells: string[]) =>
    `| ${cells.map((cell, i) => (i === 0 ? cell.padEnd(widths[i]) : cell.padStart(widths[i]))).join(' | ')} |`;
  console.log(
    `\n${line(header)}\n|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
  );
  for (const row of rows) console.log(line(row));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
