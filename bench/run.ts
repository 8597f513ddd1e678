/**
 * `npm run bench [-- --database pacs_bench --duration 8 --only list,search --dist <dir> --no-build]`
 *
 * Builds the service (tsc with tsconfig.build.json into bench/results/dist, so a running test's
 * dist/ is never swapped under it), starts `node <dist>/src/main.js` on a free port against the
 * seeded database, and a bare Node http server as the reference. Every endpoint is then driven with
 * autocannon at 1 and at 32 connections; the table and a JSON file go to bench/results/ and the
 * table into bench/README.md.
 */
import autocannon from 'autocannon';
import { spawnSync } from 'child_process';
import { Command } from 'commander';
import { randomBytes } from 'crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'fs';
import { cpus, loadavg, totalmem } from 'os';
import { join, relative } from 'path';
import { Client } from 'pg';
import { DEFAULT_BENCH_DATABASE, databaseUrl } from './lib/db';
import { API_NODE_FLAGS, Child, cpuMsOf, memoryOf, pinServers, rssSampler, startApi, startBareServer } from './lib/processes';
import { markdownTable, percentile, round, textTable } from './lib/stats';

const ROOT = join(__dirname, '..');
const RESULTS = join(__dirname, 'results');
const PASSWORD = 'bench-password';
/** Per database: two benchmarks on two databases never share rate limits or queues. */
const queuePrefixOf = (database: string) => `pacs-bench-${database}`;
/** The API's node flags unless told otherwise: production's (scripts/api-node-flags.js); `--node-options ''` for Node's defaults. */
const API_NODE_OPTIONS = API_NODE_FLAGS.join(' ');

/** Common name fragments: a first name, a frequent surname, the start of one. */
const COMMON_FRAGMENTS = [
  'silva',
  'santos',
  'maria',
  'oliveira',
  'souza',
  'ferreira',
  'costa',
  'lima',
  'gomes',
  'pereira',
  'joão',
  'nasc',
];
/** Rare surnames and a short-word search, added to the searches for one patient drawn from the data. */
const RARE_FRAGMENTS = ['zanetti', 'nakamura', 'quintanilha', 'wanderley', 'ana p'];
/**
 * Fragments drawn per typed-search row. The warm-up sends each of them once, so the row measures
 * searches seen before (their totals kept): paging, refreshing, typing the same name again.
 */
const TYPED_FRAGMENTS = 500;
/**
 * Fragments drawn for the typed stream: more than a run sends, so each request is the next fragment
 * as drawn, and a fragment comes again only as often as users' cuts coincide ("sil", "maria").
 */
const TYPED_STREAM_FRAGMENTS = 40_000;

interface Options {
  database: string;
  duration: number;
  warmup: number;
  connections: string;
  only?: string;
  dist?: string;
  build: boolean;
  readme: boolean;
  nodeOptions: string;
  searchSeed?: string;
}

interface Fixtures {
  tenantId: string;
  tenantName: string;
  tenantStudies: number;
  adminEmail: string;
  /** bcrypt cost of the tenant admin's stored hash (the seed's --bcrypt-cost). */
  adminHashCost: number;
  studyId: string;
  studyUid: string;
  seriesCount: number;
  bigSeriesId: string | null;
  bigSeriesInstances: number;
  /** What staff type to find one patient: the start of a full name, an accession number, a patient id. */
  patientSearches: string[];
  /** The unit of the largest tenant with the most studies, and its regular user. */
  unitUserEmail: string;
  /** A tenant admin of another clinic: the fair-share row's bystander. */
  otherAdminEmail: string;
  unitStudies: number;
  superEmail: string;
  /** Fragments typed as users do (typedFragments), per caller. */
  typed: { admin: string[]; unit: string[]; super: string[]; patients: string[] };
  /** The tenant admin's typed stream (TYPED_STREAM_FRAGMENTS), drawn after the rows above. */
  typedStream: string[];
  database: { studies: number; series: number; patients: number; tenants: number; instances: number };
  postgres: string;
}

interface Scenario {
  key: string;
  label: string;
  method: 'GET' | 'POST';
  path: string;
  headers?: Record<string, string>;
  body?: string;
  /** Changes each request (a rotating search, a distinct client address). */
  setupRequest?: (request: autocannon.Request) => autocannon.Request;
  /** Why it cannot run, when known before the probe. */
  unavailable?: string;
  /** Its x-bare ratio from slices taken in turn with the bare server's (measurePaired). */
  pairedWithBare?: boolean;
  /**
   * Requests sent after the timed warm-up (a rotation's length), so that every search of the
   * rotation is measured as one seen before: 2 s sent only 400 of 500 first searches on a slower
   * instance at 3,000,000 studies, and the rest fell into the measurement.
   */
  seenBefore?: number;
}

interface Measured {
  key: string;
  label: string;
  connections: number;
  status: 'ok' | 'n/a';
  note?: string;
  requests?: number;
  rps?: number;
  p50?: number;
  p99?: number;
  max?: number;
  errors?: number;
  statuses?: Record<string, number>;
  ratio?: number;
  peakRssMb?: number;
  /** CPU time per request of the API process and of the bench database's PostgreSQL backends. */
  apiCpuMs?: number;
  pgCpuMs?: number;
}

// ---- setup -----------------------------------------------------------------------------------------

function build(outDir: string): string {
  console.log(`Building the service into ${relative(ROOT, outDir)} (tsc -p tsconfig.build.json) ...`);
  // From nothing: a file whose source is gone (a migration folded into another) must not run.
  rmSync(outDir, { recursive: true, force: true });
  const started = Date.now();
  const result = spawnSync(
    process.execPath,
    [require.resolve('typescript/bin/tsc'), '-p', 'tsconfig.build.json', '--outDir', outDir, '--incremental', 'false'],
    { cwd: ROOT, stdio: 'inherit' },
  );
  const mainJs = join(outDir, 'src', 'main.js');
  if (result.status !== 0) {
    // Others' work in progress may not type-check; the emitted JavaScript still runs.
    if (!existsSync(mainJs)) throw new Error('build failed');
    console.warn(`tsc reported errors (exit ${result.status}); running the emitted JavaScript anyway.`);
  }
  console.log(`  built in ${((Date.now() - started) / 1000).toFixed(1)} s`);
  return mainJs;
}

/** mulberry32: a small seeded generator, so a run's fragments can be drawn again from its seed. */
function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/**
 * Searches typed the way people type them: of a random record of the caller's scope, its patient
 * name (7 in 10), patient id or accession number, cut at random (3 characters or more, anywhere),
 * in lower case, and half the time without its accents.
 */
async function typedFragments(
  db: Client,
  table: 'studies' | 'patients',
  where: string,
  params: unknown[],
  random: () => number,
  count = TYPED_FRAGMENTS,
): Promise<string[]> {
  const fields =
    table === 'studies' ? 'patient_name, patient_id, accession_number' : 'patient_name, patient_id, NULL AS accession_number';
  const salt = Math.floor(random() * 1e9);
  const { rows } = await db.query<{ patient_name: string; patient_id: string; accession_number: string | null }>(
    `SELECT ${fields} FROM ${table} WHERE ${where} ORDER BY hashint8(hashtext(id::text)::bigint + ${salt}) LIMIT ${count}`,
    params,
  );
  return rows.map((row) => {
    const pick = random();
    const value = (
      pick < 0.7 ? row.patient_name : pick < 0.85 || !row.accession_number ? row.patient_id : row.accession_number
    ).toLowerCase();
    const length = Math.min(value.length, 3 + Math.floor(random() * Math.max(1, value.length - 2)));
    const start = Math.floor(random() * (value.length - length + 1));
    const cut = value.slice(start, start + length);
    return random() < 0.5 ? cut.normalize('NFD').replace(/\p{M}/gu, '') : cut;
  });
}

/**
 * Huge pages held on this machine, in use or reserved (/proc/meminfo): PostgreSQL's shared memory
 * when the server runs here and the kernel has them (vm.nr_hugepages; PostgreSQL's huge_pages=try).
 * Without them every backend maps the shared buffers it touches 4 kB at a time (bench/README.md).
 */
function hugePagesHeldMb(): number {
  const info = existsSync('/proc/meminfo') ? readFileSync('/proc/meminfo', 'utf8') : '';
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(info)?.[1] ?? 0);
  const pages = field('HugePages_Total') - field('HugePages_Free') + field('HugePages_Rsvd');
  return Math.round((pages * field('Hugepagesize')) / 1024);
}

async function loadFixtures(url: string, searchSeed: number): Promise<Fixtures> {
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    const one = async <T>(sql: string, params: unknown[] = []): Promise<T> => (await db.query(sql, params)).rows[0] as T;
    const tenant = await one<{ id: string; name: string; n: string } | undefined>(
      `SELECT t.id, t.name, c.n FROM (SELECT tenant_id, count(*) AS n FROM studies GROUP BY tenant_id ORDER BY n DESC LIMIT 1) c
         JOIN tenants t ON t.id = c.tenant_id`,
    );
    if (!tenant) throw new Error(`no studies in ${url}: run \`npm run bench:seed\` first`);
    const admin = await one<{ email: string; cost: number } | undefined>(
      `SELECT email, substring(password from 5 for 2)::int AS cost FROM users WHERE tenant_id = $1 AND is_tenant_admin AND is_active ORDER BY email LIMIT 1`,
      [tenant.id],
    );
    if (!admin) throw new Error(`the largest tenant has no active tenant admin`);
    const otherAdmin = await one<{ email: string } | undefined>(
      `SELECT u.email FROM users u
        WHERE u.tenant_id <> $1 AND u.is_tenant_admin AND u.is_active
          AND EXISTS (SELECT 1 FROM studies s WHERE s.tenant_id = u.tenant_id)
        ORDER BY u.email LIMIT 1`,
      [tenant.id],
    );
    if (!otherAdmin) throw new Error('no other clinic with studies and an active tenant admin');
    const study = await one<{ id: string; study_instance_uid: string; n: string }>(
      `SELECT s.id, s.study_instance_uid, (SELECT count(*) FROM series se WHERE se.study_id = s.id) AS n
         FROM studies s WHERE s.tenant_id = $1 AND s.patient_uuid IS NOT NULL
        ORDER BY s.study_date DESC, s.created_at DESC, s.id DESC LIMIT 1`,
      [tenant.id],
    );
    const big = await one<{ series_id: string; n: string } | undefined>(
      `SELECT i.series_id, count(*) AS n FROM instances i
         JOIN series se ON se.id = i.series_id JOIN studies s ON s.id = se.study_id
        WHERE s.tenant_id = $1 GROUP BY i.series_id ORDER BY n DESC LIMIT 1`,
      [tenant.id],
    );
    const sample = await db.query<{ patient_name: string; patient_id: string; accession_number: string | null }>(
      `SELECT patient_name, patient_id, accession_number FROM studies WHERE tenant_id = $1 ORDER BY id LIMIT 19`,
      [tenant.id],
    );
    const patientSearches = [
      ...sample.rows.slice(0, 15).map((row, n) => {
        // The start of the full name, cut after 8 to all of its characters.
        const name = row.patient_name.toLowerCase();
        return name.slice(0, Math.min(name.length, 8 + ((n * 7) % Math.max(1, name.length - 7))));
      }),
      ...sample.rows.slice(15, 17).map((row) => row.accession_number ?? row.patient_id),
      ...sample.rows.slice(17, 19).map((row) => row.patient_id),
      ...RARE_FRAGMENTS,
    ];
    const unit = await one<{ unit_id: string; n: string; email: string } | undefined>(
      `SELECT c.unit_id, c.n, u.email FROM (SELECT unit_id, count(*) AS n FROM studies WHERE tenant_id = $1 GROUP BY unit_id) c
         JOIN users u ON u.unit_id = c.unit_id AND NOT u.is_tenant_admin AND u.is_active
        ORDER BY c.n DESC, u.email LIMIT 1`,
      [tenant.id],
    );
    if (!unit) throw new Error('the largest tenant has no unit user');
    const superUser = await one<{ email: string }>(
      `SELECT email FROM users WHERE is_super_admin AND is_active ORDER BY email LIMIT 1`,
    );
    const random = seededRandom(searchSeed);
    const typed = {
      admin: await typedFragments(db, 'studies', 'tenant_id = $1', [tenant.id], random),
      unit: await typedFragments(db, 'studies', 'unit_id = $1', [unit.unit_id], random),
      super: await typedFragments(db, 'studies', 'TRUE', [], random),
      patients: await typedFragments(db, 'patients', 'tenant_id = $1', [tenant.id], random),
    };
    // Drawn last, so that a seed gives the rows above the fragments it gave before this row existed.
    const typedStream = await typedFragments(db, 'studies', 'tenant_id = $1', [tenant.id], random, TYPED_STREAM_FRAGMENTS);
    const sizes = await one<Record<string, string>>(
      `SELECT (SELECT count(*) FROM studies) AS studies, (SELECT count(*) FROM series) AS series,
              (SELECT count(*) FROM patients) AS patients, (SELECT count(*) FROM tenants) AS tenants,
              (SELECT count(*) FROM instances) AS instances`,
    );
    const version = await one<{ v: string; buffers: string; huge: string }>(
      `SELECT current_setting('server_version') AS v, current_setting('shared_buffers') AS buffers,
              current_setting('huge_pages') AS huge`,
    );
    return {
      tenantId: tenant.id,
      tenantName: tenant.name,
      tenantStudies: Number(tenant.n),
      adminEmail: admin.email,
      adminHashCost: admin.cost,
      studyId: study.id,
      studyUid: study.study_instance_uid,
      seriesCount: Number(study.n),
      bigSeriesId: big?.series_id ?? null,
      bigSeriesInstances: Number(big?.n ?? 0),
      patientSearches,
      unitUserEmail: unit.email,
      otherAdminEmail: otherAdmin.email,
      unitStudies: Number(unit.n),
      superEmail: superUser.email,
      typed,
      typedStream,
      database: {
        studies: Number(sizes.studies),
        series: Number(sizes.series),
        patients: Number(sizes.patients),
        tenants: Number(sizes.tenants),
        instances: Number(sizes.instances),
      },
      postgres: `${version.v}, shared_buffers ${version.buffers}, huge_pages ${version.huge} (${hugePagesHeldMb()} MB of huge pages held on this machine)`,
    };
  } finally {
    await db.end();
  }
}

/** Client addresses for the login benchmark: one per request, so the per-IP limit never trips. */
function addressSource(): () => string {
  let n = randomBytes(2).readUInt16BE(0) << 8;
  return () => {
    n = (n + 1) % 0xffffff;
    return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
  };
}

async function login(base: string, email: string, nextAddress: () => string): Promise<string> {
  const response = await fetch(`${base}/api/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', 'x-forwarded-for': nextAddress() },
    body: JSON.stringify({ email, password: PASSWORD }),
  });
  const body = (await response.json()) as { access_token?: string };
  if (response.status !== 200 || !body.access_token) {
    throw new Error(`login as ${email} failed: ${response.status} ${JSON.stringify(body)}`);
  }
  return body.access_token;
}

/** True when Nest answered that no route matches (the endpoint is not built yet). */
function isMissingRoute(status: number, text: string): boolean {
  return status === 404 && /Cannot (GET|POST|PUT|PATCH|DELETE) /.test(text);
}

async function probeRoute(base: string, s: Scenario): Promise<{ status: number; text: string }> {
  let request: autocannon.Request = { method: s.method, path: s.path, headers: { ...s.headers }, body: s.body };
  if (s.setupRequest) request = s.setupRequest(request);
  const response = await fetch(`${base}${request.path}`, {
    method: request.method,
    headers: request.headers as Record<string, string>,
    body: request.body as string | undefined,
  });
  return { status: response.status, text: await response.text() };
}

async function viewerToken(base: string, token: string, studyId: string): Promise<{ token?: string; missing?: string }> {
  const response = await fetch(`${base}/api/viewer/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ study_id: studyId }),
  });
  const text = await response.text();
  if (isMissingRoute(response.status, text)) return { missing: 'n/a (not built)' };
  if (response.status !== 200) return { missing: `viewer token: ${response.status} ${text.slice(0, 120)}` };
  return { token: (JSON.parse(text) as { token: string }).token };
}

/** GET /api/studies?search=... (or another list), each request the next search of the list. */
function rotatingSearch(
  key: string,
  label: string,
  searches: string[],
  headers: Record<string, string>,
  list = '/api/studies',
): Scenario {
  let next = 0;
  return {
    key,
    label,
    method: 'GET',
    path: `${list}?search=${encodeURIComponent(searches[0])}`,
    headers,
    setupRequest: (request) => {
      const search = searches[next++ % searches.length];
      return { ...request, path: `${list}?search=${encodeURIComponent(search)}` };
    },
  };
}

interface Tokens {
  admin: string;
  unit: string;
  super: string;
  /** The tenant admin of another clinic. */
  other: string;
}

function scenarios(fx: Fixtures, tokens: Tokens, viewer: { token?: string; missing?: string }): Scenario[] {
  const auth = { authorization: `Bearer ${tokens.admin}` };
  const typed = (key: string, who: string, searches: string[], token: string, list?: string): Scenario => ({
    ...rotatingSearch(
      key,
      `${list ? 'patients' : 'studies'} search, ${searches.length} typed fragments, ${who}`,
      searches,
      { authorization: `Bearer ${token}` },
      list,
    ),
    seenBefore: searches.length,
  });
  const nextAddress = addressSource();
  return [
    { key: 'bare', label: 'bare node http (reference)', method: 'GET', path: '/' },
    { key: 'list', label: 'studies list, page 1', method: 'GET', path: '/api/studies', headers: auth },
    { key: 'page1000', label: 'studies list, page 1,000', method: 'GET', path: '/api/studies?page=1000', headers: auth },
    rotatingSearch('search', `studies search, ${COMMON_FRAGMENTS.length} common name fragments`, COMMON_FRAGMENTS, auth),
    rotatingSearch(
      'search-patient',
      `studies search for one patient (${fx.patientSearches.length} searches)`,
      fx.patientSearches,
      auth,
    ),
    typed('typed', 'tenant admin', fx.typed.admin, tokens.admin),
    typed('typed-unit', 'unit user', fx.typed.unit, tokens.unit),
    typed('typed-super', 'super admin', fx.typed.super, tokens.super),
    typed('typed-patients', 'tenant admin', fx.typed.patients, tokens.admin, '/api/patients'),
    rotatingSearch(
      'typed-stream',
      `studies search, typed stream of ${fx.typedStream.length.toLocaleString('en-US')}, tenant admin`,
      fx.typedStream,
      { authorization: `Bearer ${tokens.admin}` },
    ),
    { key: 'patients', label: 'patients list, page 1', method: 'GET', path: '/api/patients', headers: auth },
    { key: 'detail', label: 'study detail', method: 'GET', path: `/api/studies/${fx.studyId}`, headers: auth },
    {
      key: 'series',
      label: `series list (${fx.seriesCount} series)`,
      method: 'GET',
      path: `/api/studies/${fx.studyId}/series`,
      headers: auth,
    },
    {
      key: 'instances',
      label: `instances list (${fx.bigSeriesInstances} instances)`,
      method: 'GET',
      path: `/api/series/${fx.bigSeriesId}/instances`,
      headers: auth,
      unavailable: fx.bigSeriesId ? undefined : 'no series with instances in the seed',
    },
    {
      key: 'login',
      label: `login (bcrypt cost ${fx.adminHashCost}, distinct X-Forwarded-For)`,
      method: 'POST',
      path: '/api/login',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email: fx.adminEmail, password: PASSWORD }),
      setupRequest: (request) => ({ ...request, headers: { ...request.headers, 'x-forwarded-for': nextAddress() } }),
    },
    {
      key: 'login-burst',
      label: `health + studies list during ${LOGIN_BURST} concurrent logins (cost ${fx.adminHashCost})`,
      method: 'GET',
      path: '/api/health',
    },
    {
      key: 'fair-share',
      label: `another clinic's studies list during ${FAIR_SHARE_FLOOD} worst-case searches of the largest`,
      method: 'GET',
      path: '/api/studies',
      headers: { authorization: `Bearer ${tokens.other}` },
    },
    rotatingSearch('fair-share-flood', 'worst-case searches (wildcard-only, one letter)', WORST_CASE_SEARCHES, auth),
    {
      key: 'validate',
      label: 'viewer token validate',
      method: 'GET',
      path: '/api/viewer/token/validate',
      headers: { 'x-viewer-token': viewer.token ?? '', 'x-original-uri': `/dicom-web/studies/${fx.studyUid}/series` },
      unavailable: viewer.missing,
      pairedWithBare: true,
    },
  ];
}

// ---- measuring -------------------------------------------------------------------------------------

async function drive(
  base: string,
  s: Scenario,
  connections: number,
  duration: number,
  amount?: number,
): Promise<{ result: autocannon.Result; latencies: number[]; statuses: Record<string, number> }> {
  const latencies: number[] = [];
  const statuses: Record<string, number> = {};
  const instance = autocannon(
    {
      url: base,
      connections,
      // `amount` requests, or for `duration` seconds.
      ...(amount ? { amount } : { duration }),
      timeout: 10,
      requests: [
        {
          method: s.method,
          path: s.path,
          headers: s.headers,
          body: s.body,
          // autocannon's defaults are replaced key by key: an undefined setupRequest would erase its own.
          ...(s.setupRequest ? { setupRequest: s.setupRequest } : {}),
        },
      ],
    },
    () => undefined,
  );
  instance.on('response', (_client, statusCode: number, _bytes: number, responseTime: number) => {
    latencies.push(responseTime);
    statuses[statusCode] = (statuses[statusCode] ?? 0) + 1;
  });
  const result = await new Promise<autocannon.Result>((resolve) => instance.on('done', resolve));
  return { result, latencies, statuses };
}

/**
 * `measure`'s load from a fresh Node process: the paired rows' slices. A load generator that has run
 * other rows before answers the same server's responses more slowly (seen with the viewer gate:
 * 40,000 against 62,000 requests/s of the same build, in turn with a bare server that kept its
 * rate), and the gap then lands on the server measured, not on the reference.
 */
async function measureInChild(
  base: string,
  s: Scenario,
  connections: number,
  duration: number,
  cpu?: number,
): Promise<Measured> {
  const script = `
    const autocannon = require('autocannon');
    const [url, connections, duration, method, path, headers] = JSON.parse(process.argv[1]);
    const latencies = []; const statuses = {};
    const instance = autocannon({ url, connections, duration, timeout: 10, requests: [{ method, path, headers }] }, () => undefined);
    instance.on('response', (_c, code, _b, time) => { latencies.push(time); statuses[code] = (statuses[code] || 0) + 1; });
    instance.on('done', (result) => {
      latencies.sort((a, b) => a - b);
      const at = (q) => latencies[Math.min(latencies.length - 1, Math.floor(q * latencies.length))];
      process.stdout.write(JSON.stringify({ requests: latencies.length, seconds: result.duration, p50: at(0.5), p99: at(0.99), max: latencies[latencies.length - 1], errors: result.errors + result.timeouts, statuses }));
    });`;
  const args = ['-e', script, JSON.stringify([base, connections, duration, s.method, s.path, s.headers ?? {}])];
  const child = spawnSync(
    cpu === undefined ? process.execPath : 'taskset',
    cpu === undefined ? args : ['-c', String(cpu), process.execPath, ...args],
    {
      cwd: ROOT,
      encoding: 'utf8',
      maxBuffer: 1 << 20,
    },
  );
  if (child.status !== 0) throw new Error(`load generator failed: ${child.stderr}`);
  return measuredRow(s, connections, JSON.parse(child.stdout) as Seen);
}

/** What a load generator saw: latencies in ms; `errors`, its socket errors and timeouts. */
interface Seen {
  requests: number;
  seconds: number;
  p50: number;
  p99: number;
  max: number;
  errors: number;
  statuses: Record<string, number>;
}

/** A row's columns from what its load generator saw; every non-2xx answer counts as an error. */
function measuredRow(s: Scenario, connections: number, seen: Seen): Measured {
  const non2xx = Object.entries(seen.statuses)
    .filter(([code]) => !code.startsWith('2'))
    .reduce((sum, [, n]) => sum + n, 0);
  return {
    key: s.key,
    label: s.label,
    connections,
    status: 'ok',
    requests: seen.requests,
    rps: round(seen.requests / seen.seconds, 0),
    p50: round(seen.p50, 2),
    p99: round(seen.p99, 2),
    max: round(seen.max, 1),
    errors: non2xx + seen.errors,
    statuses: seen.statuses,
  };
}

/** What inserting studies costs: the list counters' statement trigger, and the whole INSERT (median, ms). */
interface InsertCosts {
  one: { trigger: number; statement: number };
  hundred: { trigger: number; statement: number };
}

/**
 * Studies inserted as ingestion inserts them (one at a time, and 100 in one statement), copies of
 * rows drawn at random with new UIDs, inside a transaction that is rolled back: EXPLAIN ANALYZE
 * gives the list counters' trigger time and the whole statement's (with every index's upkeep: the
 * search terms' GIN is most of it). Medians of 7 and of 5.
 */
async function insertCosts(url: string): Promise<InsertCosts> {
  const db = new Client({ connectionString: url });
  await db.connect();
  const insert = (n: number, sample: number) =>
    `EXPLAIN (ANALYZE, FORMAT JSON) INSERT INTO studies (tenant_id, unit_id, patient_uuid, imgsrv_study_id, study_instance_uid,
       patient_id, patient_name, study_date, accession_number)
     SELECT tenant_id, unit_id, patient_uuid, 'bench-' || gen_random_uuid(), '2.25.' || (random() * 1e15)::bigint,
            patient_id, patient_name, study_date, accession_number
       FROM studies TABLESAMPLE SYSTEM (${sample}) LIMIT ${n}`;
  const measure = async (n: number, sample: number, times: number) => {
    const triggers: number[] = [];
    const statements: number[] = [];
    for (let i = 0; i < times; i++) {
      const { rows } = await db.query<{
        'QUERY PLAN': Array<{ 'Execution Time': number; Triggers?: Array<{ 'Trigger Name': string; Time: number }> }>;
      }>(insert(n, sample));
      const plan = rows[0]['QUERY PLAN'][0];
      triggers.push(plan.Triggers?.find((t) => t['Trigger Name'] === 'studies_counts_insert')?.Time ?? NaN);
      statements.push(plan['Execution Time']);
    }
    const median = (values: number[]) =>
      round(
        percentile(
          [...values].sort((a, b) => a - b),
          50,
          true,
        ),
        2,
      );
    return { trigger: median(triggers), statement: median(statements) };
  };
  try {
    await db.query('BEGIN');
    await db.query('SET LOCAL jit = off');
    return { one: await measure(1, 0.1, 7), hundred: await measure(100, 1, 5) };
  } finally {
    await db.query('ROLLBACK').catch(() => undefined);
    await db.end();
  }
}

/** Where CPU time is read: the API process, and the PostgreSQL backends serving the bench database. */
interface CpuProbe {
  apiPid: number;
  db: Client;
  database: string;
}

async function cpuNow(probe: CpuProbe): Promise<{ api: number; pg: Map<number, number> }> {
  const { rows } = await probe.db.query<{ pid: number }>(
    `SELECT pid FROM pg_stat_activity WHERE datname = $1 AND pid <> pg_backend_pid()`,
    [probe.database],
  );
  return { api: cpuMsOf(probe.apiPid), pg: new Map(rows.map((row) => [row.pid, cpuMsOf(row.pid)])) };
}

/**
 * PostgreSQL CPU between two samples, backend by backend: a backend that appeared counts whole, one
 * that closed in between (an idle pool connection) is left out rather than subtracted.
 */
function pgCpuBetween(before: Map<number, number>, after: Map<number, number>): number {
  let total = 0;
  for (const [pid, cpu] of after) total += cpu - (before.get(pid) ?? 0);
  return total;
}

async function measure(
  base: string,
  s: Scenario,
  connections: number,
  duration: number,
  memory?: ReturnType<typeof rssSampler>,
  probe?: CpuProbe,
): Promise<Measured> {
  memory?.resetPeak();
  const cpuBefore = probe ? await cpuNow(probe) : null;
  const { result, latencies, statuses } = await drive(base, s, connections, duration);
  const cpuAfter = probe ? await cpuNow(probe) : null;
  latencies.sort((a, b) => a - b);
  const completed = latencies.length;
  return {
    ...measuredRow(s, connections, {
      requests: completed,
      seconds: result.duration,
      p50: percentile(latencies, 50, true),
      p99: percentile(latencies, 99, true),
      max: latencies[latencies.length - 1] ?? NaN,
      errors: result.errors + result.timeouts,
      statuses,
    }),
    peakRssMb: memory ? round(memory.peak(), 0) : undefined,
    apiCpuMs: cpuBefore && cpuAfter && completed ? round((cpuAfter.api - cpuBefore.api) / completed, 3) : undefined,
    pgCpuMs: cpuBefore && cpuAfter && completed ? round(pgCpuBetween(cpuBefore.pg, cpuAfter.pg) / completed, 3) : undefined,
  };
}

/** Slices of each of the two servers in a paired row (bare, scenario, bare, scenario, ...). */
const PAIRED_SLICES = 4;

/**
 * A row measured against the bare server in the same minute: slices of each, taken in turn, so that
 * what the shared machine does meanwhile weighs on both alike (the bare server's own rate moved 2x
 * between the start and the end of one run). The row's ratio is the scenario's requests over the
 * bare server's in those slices; its other columns are the scenario's slices together.
 */
async function measurePaired(
  base: string,
  bareBase: string,
  serverPids: number[],
  s: Scenario,
  bare: Scenario,
  connections: number,
  duration: number,
  memory?: ReturnType<typeof rssSampler>,
  probe?: CpuProbe,
): Promise<Measured> {
  const slice = Math.max(1, Math.round(duration / PAIRED_SLICES));
  // The bare server is sent the very request the scenario sends (it answers any), so that the ratio
  // weighs what the API does with it, not the parsing of its headers.
  const reference: Scenario = { ...bare, method: s.method, path: s.path, headers: s.headers };
  const parts: Measured[] = [];
  let bareRequests = 0;
  let bareSeconds = 0;
  // The server measured and its reference on one core, the load generator on the other: where the
  // scheduler puts them otherwise decides the figure (the same build measured 40,000 or 62,000
  // requests/s from one run to the next, the bare server unchanged).
  const pinned = pinServers(cpus().length, serverPids);
  try {
    for (let i = 0; i < PAIRED_SLICES; i++) {
      const answered = await measureInChild(bareBase, reference, connections, slice, pinned?.generator);
      bareRequests += answered.requests ?? 0;
      bareSeconds += (answered.requests ?? 0) / Math.max(1, answered.rps ?? 1);
      memory?.resetPeak();
      const cpuBefore = probe ? await cpuNow(probe) : null;
      const part = await measureInChild(base, s, connections, slice, pinned?.generator);
      const cpuAfter = probe ? await cpuNow(probe) : null;
      if (memory) part.peakRssMb = round(memory.peak(), 0);
      if (cpuBefore && cpuAfter && part.requests) {
        part.apiCpuMs = round((cpuAfter.api - cpuBefore.api) / part.requests, 3);
        part.pgCpuMs = round(pgCpuBetween(cpuBefore.pg, cpuAfter.pg) / part.requests, 3);
      }
      parts.push(part);
    }
  } finally {
    pinned?.release();
  }
  const requests = parts.reduce((sum, part) => sum + (part.requests ?? 0), 0);
  const seconds = parts.reduce((sum, part) => sum + (part.requests ?? 0) / Math.max(1, part.rps ?? 1), 0);
  const weighted = (pick: (part: Measured) => number | undefined) =>
    round(parts.reduce((sum, part) => sum + (pick(part) ?? 0) * (part.requests ?? 0), 0) / Math.max(1, requests), 3);
  const statuses: Record<string, number> = {};
  for (const part of parts)
    for (const [code, n] of Object.entries(part.statuses ?? {})) statuses[code] = (statuses[code] ?? 0) + n;
  const rps = round(requests / seconds, 0);
  const bareRps = round(bareRequests / bareSeconds, 0);
  return {
    key: s.key,
    label: s.label,
    connections,
    status: 'ok',
    note: `bare server in the same slices: ${bareRps} req/s`,
    requests,
    rps,
    // Latency percentiles are not additive: the worst slice's.
    p50: Math.max(...parts.map((part) => part.p50 ?? 0)),
    p99: Math.max(...parts.map((part) => part.p99 ?? 0)),
    max: Math.max(...parts.map((part) => part.max ?? 0)),
    errors: parts.reduce((sum, part) => sum + (part.errors ?? 0), 0),
    statuses,
    ratio: round(rps / bareRps, 3),
    peakRssMb: memory ? Math.max(...parts.map((part) => part.peakRssMb ?? 0)) : undefined,
    apiCpuMs: probe ? weighted((part) => part.apiCpuMs) : undefined,
    pgCpuMs: probe ? weighted((part) => part.pgCpuMs) : undefined,
  };
}

/** Connections sending the largest clinic's worst-case searches in the fair-share row. */
const FAIR_SHARE_FLOOD = 40;
/** Searches no index narrows: wildcard-only patterns and single letters, each reading the whole clinic. */
const WORST_CASE_SEARCHES = ['%', '_', '%%', '*', 'a', 'e', 'o', 'i', 'a%', '%_'];

/**
 * Another clinic's studies list (one connection, its tenant admin) while ${FAIR_SHARE_FLOOD}
 * connections of the largest clinic's tenant admin send worst-case searches without pause. Without
 * the fair share these held the search pool and the others' lists waited seconds, then got 503.
 * The row's latencies are the bystander's; its note gives what the flood got (200/429/503).
 */
async function measureFairShare(base: string, all: Scenario[], s: Scenario, duration: number): Promise<Measured> {
  const flood = all.find((x) => x.key === 'fair-share-flood')!;
  const [floodRun, bystander] = await Promise.all([
    drive(base, flood, FAIR_SHARE_FLOOD, duration),
    drive(base, s, 1, duration),
  ]);
  const latencies = bystander.latencies.sort((a, b) => a - b);
  const failed = Object.entries(bystander.statuses)
    .filter(([code]) => !code.startsWith('2'))
    .reduce((sum, [, n]) => sum + n, 0);
  const floodOf = (code: string) => floodRun.statuses[code] ?? 0;
  return {
    key: 'fair-share',
    label: s.label,
    connections: 1,
    status: 'ok',
    requests: latencies.length,
    rps: round(latencies.length / bystander.result.duration, 0),
    p50: round(percentile(latencies, 50, true), 2),
    p99: round(percentile(latencies, 99, true), 2),
    max: round(latencies[latencies.length - 1] ?? NaN, 1),
    errors: failed + bystander.result.errors + bystander.result.timeouts,
    statuses: bystander.statuses,
    note:
      `flood: ${floodOf('200')} answered, ${floodOf('429')} refused (429), ${floodOf('503')} 503; ` +
      `bystander 503s: ${bystander.statuses['503'] ?? 0}`,
  };
}

/** Sign-ins at once in the login-burst row: a clinic network signing in at 8:00. */
const LOGIN_BURST = 24;

/**
 * Other requests while ${LOGIN_BURST} connections sign in without pause: one connection asking
 * GET /api/health and one the studies list. The row's latencies are the other requests'; its
 * note gives the logins' own rate. Password hashing on the event loop made these wait seconds.
 */
async function measureLoginBurst(
  base: string,
  all: Scenario[],
  s: Scenario,
  duration: number,
  probe: CpuProbe,
): Promise<Measured[]> {
  const login = all.find((x) => x.key === 'login')!;
  const list = { ...all.find((x) => x.key === 'list')!, label: 'studies list' };
  const cpuBefore = await cpuNow(probe);
  const [logins, health, studies] = await Promise.all([
    drive(base, login, LOGIN_BURST, duration),
    drive(base, s, 1, duration),
    drive(base, list, 1, duration),
  ]);
  const cpuAfter = await cpuNow(probe);
  const others = [...health.latencies, ...studies.latencies].sort((a, b) => a - b);
  const statusesOf = (...runs: Array<{ statuses: Record<string, number> }>) => {
    const merged: Record<string, number> = {};
    for (const run of runs) for (const [code, n] of Object.entries(run.statuses)) merged[code] = (merged[code] ?? 0) + n;
    return merged;
  };
  const errorsOf = (statuses: Record<string, number>, ...results: autocannon.Result[]) =>
    Object.entries(statuses)
      .filter(([code]) => !code.startsWith('2'))
      .reduce((sum, [, n]) => sum + n, 0) + results.reduce((sum, r) => sum + r.errors + r.timeouts, 0);
  const otherStatuses = statusesOf(health, studies);
  const loginLatencies = logins.latencies.sort((a, b) => a - b);
  const loginRps = round(loginLatencies.length / logins.result.duration, 1);
  return [
    {
      key: 'login-burst',
      label: s.label,
      connections: 2,
      status: 'ok',
      requests: others.length,
      rps: round(others.length / health.result.duration, 0),
      p50: round(percentile(others, 50, true), 2),
      p99: round(percentile(others, 99, true), 2),
      max: round(others[others.length - 1] ?? NaN, 1),
      errors: errorsOf(otherStatuses, health.result, studies.result),
      statuses: otherStatuses,
      note: others.length
        ? `logins meanwhile: ${loginRps}/s`
        : `none answered within ${duration} s; logins meanwhile: ${loginRps}/s`,
    },
    {
      key: 'login-burst-logins',
      label: `  the ${LOGIN_BURST} connections signing in meanwhile`,
      connections: LOGIN_BURST,
      status: 'ok',
      requests: loginLatencies.length,
      rps: loginRps,
      p50: round(percentile(loginLatencies, 50, true), 2),
      p99: round(percentile(loginLatencies, 99, true), 2),
      max: round(loginLatencies[loginLatencies.length - 1] ?? NaN, 1),
      errors: errorsOf(logins.statuses, logins.result),
      statuses: logins.statuses,
      apiCpuMs: loginLatencies.length ? round((cpuAfter.api - cpuBefore.api) / loginLatencies.length, 3) : undefined,
    },
  ];
}

/**
 * How long a failed sign-in takes with an unknown email and with a wrong password, one at a time
 * (medians of `rounds`): equal times tell an attacker nothing about which emails exist.
 */
async function signInTimings(
  base: string,
  email: string,
  rounds = 12,
): Promise<{ unknownEmailMs: number; wrongPasswordMs: number }> {
  const nextAddress = addressSource();
  const timed = async (body: object) => {
    const started = performance.now();
    const response = await fetch(`${base}/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', 'x-forwarded-for': nextAddress() },
      body: JSON.stringify(body),
    });
    await response.arrayBuffer();
    if (response.status !== 401) throw new Error(`a failed sign-in answered ${response.status}`);
    return performance.now() - started;
  };
  const unknown: number[] = [];
  const wrong: number[] = [];
  for (let i = 0; i < rounds; i++) {
    unknown.push(await timed({ email: `nobody-${i}-${randomBytes(4).toString('hex')}@example.invalid`, password: PASSWORD }));
    wrong.push(await timed({ email, password: `${PASSWORD}-wrong` }));
  }
  return {
    unknownEmailMs: round(
      percentile(
        unknown.sort((a, b) => a - b),
        50,
        true,
      ),
      1,
    ),
    wrongPasswordMs: round(
      percentile(
        wrong.sort((a, b) => a - b),
        50,
        true,
      ),
      1,
    ),
  };
}

// ---- reporting -------------------------------------------------------------------------------------

interface Target {
  name: string;
  met: boolean;
  measured: string;
}

function targets(rows: Measured[], peakRssMb: number, inserts: InsertCosts | null): Target[] {
  const at = (key: string, connections: number) => rows.find((r) => r.key === key && r.connections === connections);
  const latency = (key: string, connections: number, limit: number, name: string): Target => {
    const row = at(key, connections);
    return row?.status === 'ok'
      ? { name, met: (row.p99 ?? Infinity) < limit && row.errors === 0, measured: `p99 ${row.p99} ms` }
      : { name, met: false, measured: row?.note ?? 'not measured' };
  };
  const validate = [1, 32].map((c) => at('validate', c));
  const errors = rows.filter((r) => r.status === 'ok').reduce((sum, r) => sum + (r.errors ?? 0), 0);
  return [
    latency('list', 32, 50, 'studies list page 1, p99 < 50 ms at 32 connections'),
    latency('search', 32, 100, 'studies search (common name fragments), p99 < 100 ms at 32 connections'),
    latency('search-patient', 32, 100, 'studies search for one patient, p99 < 100 ms at 32 connections'),
    latency('typed', 32, 100, 'studies search, typed fragments, tenant admin, p99 < 100 ms at 32 connections'),
    latency('typed-unit', 32, 100, 'studies search, typed fragments, unit user, p99 < 100 ms at 32 connections'),
    latency('typed-super', 32, 100, 'studies search, typed fragments, super admin, p99 < 100 ms at 32 connections'),
    latency('typed-patients', 32, 100, 'patients search, typed fragments, p99 < 100 ms at 32 connections'),
    latency(
      'typed-stream',
      32,
      100,
      'studies search, a stream of typed fragments, tenant admin, p99 < 100 ms at 32 connections',
    ),
    ...['typed', 'typed-unit', 'typed-super', 'typed-patients', 'typed-stream'].map((key): Target => {
      const row = at(key, 32);
      const name = `PostgreSQL CPU per search <= 2 ms (${key}, 32 connections)`;
      return row?.pgCpuMs === undefined
        ? { name, met: false, measured: 'not measured' }
        : { name, met: row.pgCpuMs <= 2, measured: `${row.pgCpuMs} ms` };
    }),
    latency('page1000', 32, 150, 'studies list page 1,000, p99 < 150 ms at 32 connections'),
    latency('login-burst', 2, 100, `health and studies list p99 < 100 ms during ${LOGIN_BURST} concurrent logins`),
    {
      name: `another clinic's list p99 < 100 ms and no 503 during ${FAIR_SHARE_FLOOD} worst-case searches of one clinic`,
      met: (() => {
        const row = at('fair-share', 1);
        return row?.status === 'ok' && (row.p99 ?? Infinity) < 100 && row.errors === 0 && !/503: [1-9]/.test(row.note ?? '');
      })(),
      measured: (() => {
        const row = at('fair-share', 1);
        return row?.status === 'ok' ? `p99 ${row.p99} ms, ${row.errors} errors; ${row.note}` : (row?.note ?? 'not measured');
      })(),
    },
    {
      name: 'viewer validate >= 70% of the bare server rate at 32 connections (trail, reach and value checks in place)',
      met: at('validate', 32)?.status === 'ok' && (at('validate', 32)?.ratio ?? 0) >= 0.7,
      measured: validate
        .map((r) => (r?.status === 'ok' ? `${Math.round((r.ratio ?? 0) * 100)}%` : (r?.note ?? '-')))
        .join(' / '),
    },
    {
      name: 'viewer validate >= 50% of the bare server rate (1 and 32 connections)',
      met: validate.every((r) => r?.status === 'ok' && (r.ratio ?? 0) >= 0.5),
      measured: validate
        .map((r) => (r?.status === 'ok' ? `${Math.round((r.ratio ?? 0) * 100)}%` : (r?.note ?? '-')))
        .join(' / '),
    },
    ...(inserts
      ? [
          {
            name: "one-study insert: the list counters' trigger <= 1 ms",
            met: inserts.one.trigger <= 1,
            measured: `${inserts.one.trigger} ms (whole statement ${inserts.one.statement} ms)`,
          },
          {
            name: "100-study insert: the list counters' trigger <= 20 ms",
            met: inserts.hundred.trigger <= 20,
            measured: `${inserts.hundred.trigger} ms`,
          },
          {
            name: '100-study insert: the whole statement <= 20 ms',
            met: inserts.hundred.statement <= 20,
            measured: `${inserts.hundred.statement} ms`,
          },
        ]
      : []),
    { name: 'API peak RSS < 300 MB', met: peakRssMb < 300, measured: `${Math.round(peakRssMb)} MB` },
    { name: 'zero errors (non-2xx, socket errors, timeouts)', met: errors === 0, measured: `${errors}` },
  ];
}

function tableRows(rows: Measured[]): string[][] {
  return rows.map((r) =>
    r.status === 'ok'
      ? [
          r.label,
          String(r.connections),
          String(r.rps),
          (r.p50 ?? 0).toFixed(2),
          (r.p99 ?? 0).toFixed(2),
          String(r.errors),
          r.key === 'bare' ? '1.00' : (r.ratio ?? 0).toFixed(2),
          String(r.peakRssMb ?? ''),
          r.apiCpuMs === undefined ? '' : r.apiCpuMs.toFixed(2),
          r.pgCpuMs === undefined ? '' : r.pgCpuMs.toFixed(2),
        ]
      : [r.label, String(r.connections), r.note ?? 'n/a', '', '', '', '', '', '', ''],
  );
}

const HEADER = [
  'endpoint',
  'conns',
  'req/s',
  'p50 ms',
  'p99 ms',
  'errors',
  'x bare',
  'API RSS MB',
  'API CPU ms/req',
  'PG CPU ms/req',
];

function machine(fx: Fixtures) {
  return {
    cpus: cpus().length,
    cpu_model: cpus()[0]?.model ?? 'unknown',
    memory_gb: round(totalmem() / 1024 ** 3, 1),
    node: process.version,
    postgres: fx.postgres,
    load_average_at_start: loadavg().map((x) => round(x, 2)),
  };
}

function updateReadme(markdown: string): void {
  const readme = join(__dirname, 'README.md');
  if (!existsSync(readme)) return;
  const text = readFileSync(readme, 'utf8');
  const start = '<!-- bench:results:start -->';
  const end = '<!-- bench:results:end -->';
  const from = text.indexOf(start);
  const to = text.indexOf(end);
  if (from < 0 || to < from) return;
  writeFileSync(readme, `${text.slice(0, from + start.length)}\n${markdown}\n${text.slice(to)}`);
}

// ---- main ------------------------------------------------------------------------------------------

async function main(): Promise<void> {
  const options = new Command('bench')
    .option('--database <name>', 'the seeded database', DEFAULT_BENCH_DATABASE)
    .option('--duration <s>', 'seconds per measurement', (v) => Number(v), 8)
    .option('--warmup <s>', 'seconds of untimed load before each endpoint', (v) => Number(v), 2)
    .option('--connections <list>', 'connection counts', '1,32')
    .option('--only <keys>', 'comma-separated scenario keys (bare is always measured)')
    .option('--dist <dir>', 'run an existing build (a directory holding src/main.js) instead of building')
    .option('--no-build', 'reuse bench/results/dist from the previous run')
    .option('--no-readme', 'do not write the table into bench/README.md')
    .option('--search-seed <n>', 'seed of the typed fragments (default: a new one each run)')
    .option(
      '--node-options <flags>',
      "flags of the API's node command, e.g. heap limits or --cpu-prof (see bench/README.md)",
      API_NODE_OPTIONS,
    )
    .parse(process.argv)
    .opts<Options>();
  const connectionCounts = options.connections.split(',').map(Number);
  const url = databaseUrl(options.database);
  const searchSeed = options.searchSeed === undefined ? randomBytes(4).readUInt32BE(0) : Number(options.searchSeed);
  const fx = await loadFixtures(url, searchSeed);
  console.log(`Typed fragments drawn with --search-seed ${searchSeed}`);
  const outDir = join(RESULTS, 'dist');
  const mainJs = options.dist
    ? join(options.dist, 'src', 'main.js')
    : options.build
      ? build(outDir)
      : join(outDir, 'src', 'main.js');

  const children: Child[] = [];
  const cleanup = async () => {
    await Promise.all(children.map((c) => c.stop()));
  };
  process.once('SIGINT', () => void cleanup().then(() => process.exit(130)));
  try {
    const bare = await startBareServer();
    children.push(bare);
    const api = await startApi(
      mainJs,
      {
        NODE_ENV: 'production',
        DATABASE_URL: url,
        LOG_LEVEL: 'warn',
        TRUST_PROXY: '127.0.0.1',
        QUEUE_PREFIX: queuePrefixOf(options.database),
        JWT_SECRET: randomBytes(32).toString('hex'),
        WEBHOOK_SECRET: randomBytes(16).toString('hex'),
        METRICS_TOKEN: randomBytes(16).toString('hex'),
      },
      options.nodeOptions.split(/\s+/).filter(Boolean),
    );
    children.push(api);
    const pid = api.process.pid as number;
    const memory = rssSampler(pid);
    const probeDb = new Client({ connectionString: url });
    await probeDb.connect();
    const cpuProbe: CpuProbe = { apiPid: pid, db: probeDb, database: options.database };
    console.log(
      `API pid ${pid} at ${api.url} (RSS at start ${Math.round(memoryOf(pid)?.rssMb ?? 0)} MB); bare server at ${bare.url}`,
    );
    console.log(
      `Largest tenant "${fx.tenantName}": ${fx.tenantStudies} studies of ${fx.database.studies}; tenant admin ${fx.adminEmail}`,
    );

    const addresses = addressSource();
    const tokens: Tokens = {
      admin: await login(api.url, fx.adminEmail, addresses),
      unit: await login(api.url, fx.unitUserEmail, addresses),
      super: await login(api.url, fx.superEmail, addresses),
      other: await login(api.url, fx.otherAdminEmail, addresses),
    };
    const token = tokens.admin;
    const viewer = await viewerToken(api.url, token, fx.studyId);
    const wanted = options.only ? new Set(['bare', ...options.only.split(',')]) : null;
    const every = scenarios(fx, tokens, viewer);
    const all = every.filter((s) => !wanted || wanted.has(s.key));

    const rows: Measured[] = [];
    const bareRate = new Map<number, number>();
    for (const s of all) {
      const base = s.key === 'bare' ? bare.url : api.url;
      let unavailable = s.unavailable;
      if (!unavailable) {
        const answer = await probeRoute(base, s);
        if (isMissingRoute(answer.status, answer.text)) unavailable = 'n/a (not built)';
        else if (answer.status >= 300)
          console.warn(`  ${s.label}: probe answered ${answer.status} ${answer.text.slice(0, 200)}`);
      }
      if (unavailable) {
        console.log(`${s.label}: ${unavailable}`);
        for (const c of connectionCounts)
          rows.push({ key: s.key, label: s.label, connections: c, status: 'n/a', note: unavailable });
        continue;
      }
      // Driven only as the fair-share row's flood.
      if (s.key === 'fair-share-flood') continue;
      if (s.key === 'fair-share') {
        const row = await measureFairShare(base, every, s, options.duration);
        rows.push(row);
        console.log(
          `${row.label.padEnd(52)} c=${String(row.connections).padStart(2)}  ${String(row.rps).padStart(6)} req/s  p50 ${row.p50} ms  p99 ${row.p99} ms  errors ${row.errors}  ${row.note ?? ''}`,
        );
        continue;
      }
      if (s.key === 'login-burst') {
        for (const row of await measureLoginBurst(base, every, s, options.duration, cpuProbe)) {
          rows.push(row);
          console.log(
            `${row.label.padEnd(52)} c=${String(row.connections).padStart(2)}  ${String(row.rps).padStart(6)} req/s  p50 ${row.p50} ms  p99 ${row.p99} ms  errors ${row.errors}  ${row.note ?? ''}`,
          );
        }
        continue;
      }
      if (options.warmup > 0) await drive(base, s, 8, options.warmup);
      if (s.seenBefore) await drive(base, s, 8, 0, s.seenBefore);
      for (const c of connectionCounts) {
        if (s.pairedWithBare) {
          const row = await measurePaired(
            base,
            bare.url,
            [bare.process.pid as number, pid],
            s,
            every.find((x) => x.key === 'bare')!,
            c,
            options.duration,
            memory,
            cpuProbe,
          );
          rows.push(row);
          console.log(
            `${s.label.padEnd(52)} c=${String(c).padStart(2)}  ${String(row.rps).padStart(6)} req/s  ${row.ratio}x bare (${row.note})  p50 ${row.p50} ms  p99 ${row.p99} ms  errors ${row.errors}  cpu ${row.apiCpuMs ?? '-'}/${row.pgCpuMs ?? '-'} ms`,
          );
          continue;
        }
        const row = await measure(
          base,
          s,
          c,
          options.duration,
          s.key === 'bare' ? undefined : memory,
          s.key === 'bare' ? undefined : cpuProbe,
        );
        if (s.key === 'bare') bareRate.set(c, row.rps ?? 0);
        row.ratio = round((row.rps ?? 0) / (bareRate.get(c) || NaN), 3);
        rows.push(row);
        const codes = Object.entries(row.statuses ?? {})
          .map(([k, v]) => `${k}:${v}`)
          .join(' ');
        console.log(
          `${s.label.padEnd(52)} c=${String(c).padStart(2)}  ${String(row.rps).padStart(6)} req/s  p50 ${row.p50} ms  p99 ${row.p99} ms  errors ${row.errors}  cpu ${row.apiCpuMs ?? '-'}/${row.pgCpuMs ?? '-'} ms  [${codes}]`,
        );
      }
    }

    const timings =
      !wanted || wanted.has('login') || wanted.has('login-burst') ? await signInTimings(api.url, fx.adminEmail) : null;
    const inserts = !wanted || wanted.has('insert') ? await insertCosts(url) : null;
    if (inserts) {
      console.log(
        `insert, median: 1 study: trigger ${inserts.one.trigger} ms, statement ${inserts.one.statement} ms; 100 studies: trigger ${inserts.hundred.trigger} ms, statement ${inserts.hundred.statement} ms`,
      );
    }
    if (timings) {
      console.log(
        `failed sign-in, median of 12 one at a time: unknown email ${timings.unknownEmailMs} ms, wrong password ${timings.wrongPasswordMs} ms`,
      );
    }
    await probeDb.end();
    const hwm = memoryOf(pid)?.hwmMb ?? 0;
    const peakRssMb = Math.max(memory.overall(), hwm);
    memory.stop();
    const checks = targets(rows, peakRssMb, inserts);
    const info = machine(fx);
    const finishedAt = new Date().toISOString();
    const text = textTable(HEADER, tableRows(rows));
    console.log(`\n${text}\n\nAPI peak RSS (VmHWM): ${Math.round(peakRssMb)} MB`);
    for (const t of checks) console.log(`${t.met ? 'MET    ' : 'NOT MET'}  ${t.name}: ${t.measured}`);

    mkdirSync(RESULTS, { recursive: true });
    const json = {
      finished_at: finishedAt,
      machine: { ...info, load_average_at_end: loadavg().map((x) => round(x, 2)) },
      database: { name: options.database, ...fx.database },
      largest_tenant: { name: fx.tenantName, studies: fx.tenantStudies, caller: fx.adminEmail },
      options: {
        duration_s: options.duration,
        warmup_s: options.warmup,
        connections: connectionCounts,
        api_node_options: options.nodeOptions,
      },
      searches: { common: COMMON_FRAGMENTS, patient: fx.patientSearches, typed_seed: searchSeed, typed: fx.typed },
      unit_user: { caller: fx.unitUserEmail, studies: fx.unitStudies },
      api_peak_rss_mb: round(peakRssMb, 0),
      failed_sign_in_ms: timings,
      insert_ms: inserts,
      results: rows,
      targets: checks,
    };
    const file = join(RESULTS, `bench-${finishedAt.replace(/[:.]/g, '-')}.json`);
    writeFileSync(file, JSON.stringify(json, null, 2));
    writeFileSync(join(RESULTS, 'latest.json'), JSON.stringify(json, null, 2));
    console.log(`\nResults: ${relative(ROOT, file)}`);

    if (options.readme && !options.only) {
      const markdown = [
        `Run of ${finishedAt.slice(0, 16).replace('T', ' ')} UTC on ${info.cpus} × ${info.cpu_model}, ${info.memory_gb} GB RAM,`,
        `Node ${info.node}, PostgreSQL ${info.postgres}; load average at start ${info.load_average_at_start.join(' / ')}`,
        `(the machine is shared). Database: ${fx.database.studies.toLocaleString('en')} studies,`,
        `${fx.database.series.toLocaleString('en')} series, ${fx.database.patients.toLocaleString('en')} patients,`,
        `${fx.database.tenants} tenants; caller: the tenant admin of "${fx.tenantName}"`,
        `(${fx.tenantStudies.toLocaleString('en')} studies); unit user ${fx.unitUserEmail} (${fx.unitStudies.toLocaleString('en')} studies);`,
        `typed fragments drawn with \`--search-seed ${searchSeed}\`. ${options.duration} s per measurement after a ${options.warmup} s warm-up.`,
        '',
        markdownTable(HEADER, tableRows(rows)),
        '',
        `API peak RSS over the whole run (VmHWM): **${Math.round(peakRssMb)} MB**.`,
        ...(timings
          ? [
              '',
              `A failed sign-in (median of 12, one at a time): unknown email **${timings.unknownEmailMs} ms**, wrong password **${timings.wrongPasswordMs} ms**.`,
            ]
          : []),
        '',
        markdownTable(
          ['target', 'measured', 'met'],
          checks.map((t) => [t.name, t.measured, t.met ? 'yes' : '**no**']),
        ),
      ].join('\n');
      updateReadme(markdown);
    }
  } finally {
    await cleanup();
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error instanceof Error ? (error.stack ?? error.message) : error);
    process.exit(1);
  },
);
