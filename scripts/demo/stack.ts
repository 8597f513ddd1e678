/**
 * `npm run demo` (after scripts/first-run.sh has installed and built what it needs): the whole
 * archive on this machine, on loopback, with demo data, for a first look. It runs from its source
 * (ts-node, transpile only), so nothing built earlier can stand in for a file it needs.
 *
 *   API and worker       dist/src/main.js, dist/src/worker.js (the built service)
 *   Orthanc              docker/orthanc/orthanc.json and webhook.lua, storage in .local/orthanc
 *   nginx + OHIF         docker/nginx/nginx.conf serving viewer/dist, the one public address
 *   demo data            a clinic, a unit, a device (AE title DEMO_CT at 127.0.0.1), a doctor, and
 *                        a few generated studies sent through the device with storescu
 *
 * Everything it keeps lives in .local/ (git-ignored): the service's secrets (.local/secrets.json,
 * the file the API itself keeps outside production), the demo's passwords (.local/demo.json),
 * Orthanc's storage, logs. A second run reuses them (and the database), so it is quick and creates
 * nothing twice. A run without .local/demo.json starts afresh: a pacs_demo database left by an
 * earlier demo holds accounts whose passwords went with that .local/, and studies whose images did.
 * Ctrl-C stops every process it started.
 *
 * DEMO_CHECK=1: the same start, then what a doctor does first, through nginx (sign in, list the
 * demo studies, open one image as the viewer does, draft a report from a preset and preview its PDF,
 * discarded after), one line with the verdict, every process it
 * started stopped; exit 0 when all of it worked, else 1. `.ci/run` runs it.
 */
import { ChildProcess, execFile, spawn } from 'child_process';
import { createHash, randomBytes, randomInt } from 'crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'fs';
import * as net from 'net';
import * as path from 'path';
import { Client } from 'pg';
import { API_NODE_FLAGS } from '../api-node-flags';
import { DICOM_NETWORK_ENV } from '../dicom-network-env';
import { sendWithStorescu, writeStudy } from '../stack/dicom';
import { fetchJson } from '../stack/http';
import { NGINX_BIN, renderNginxConfig } from '../stack/nginx';
import { basicAuth, delay, ORTHANC_BIN, terminate } from '../stack/orthanc';
import { ROOT } from '../stack/processes';

const DATA = path.join(ROOT, '.local');
const LOGS = path.join(DATA, 'logs');
const CHECK = process.env.DEMO_CHECK === '1';
const DATABASE_URL = process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/pacs_demo';

const DEVICE_AET = 'DEMO_CT';
const ORTHANC_USER = 'pacs';
/** nginx's read-only Orthanc account (GET /dicom-web/ only: webhook.lua's IncomingHttpRequestFilter). */
const ORTHANC_VIEWER_USER = 'viewer';
const DOCTOR_EMAIL = 'doctor@demo.local';
/** A doctor signs reports with their CRM (decisions.md 3c): without one the demo doctor could not sign. */
const DOCTOR_CRM = '123456/SP';
const CLINIC_ADMIN_EMAIL = 'clinic@demo.local';
const ADMIN_EMAIL = 'admin@demo.local';

/** The service's own secrets: the file the API keeps when it generates them outside production. */
interface ServiceSecrets {
  JWT_SECRET: string;
  WEBHOOK_SECRET: string;
}

/** The demo's accounts and Orthanc's password. */
interface DemoSecrets {
  ORTHANC_PASSWORD: string;
  ADMIN_PASSWORD: string;
  DOCTOR_PASSWORD: string;
}

/** `fresh`: .local/demo.json was written by this run (no earlier demo's data is ours). */
type Secrets = ServiceSecrets & DemoSecrets & { fresh: boolean };

const token = (bytes: number) => randomBytes(bytes).toString('base64url');

/** Derived from the kept Orthanc password, so a demo.json written before the account existed still serves. */
const viewerPassword = (s: DemoSecrets) =>
  createHash('sha256').update(`viewer:${s.ORTHANC_PASSWORD}`).digest('base64url').slice(0, 32);

/** Derived from the kept super admin's password, so a demo.json written before the account existed still serves. */
const clinicAdminPassword = (s: DemoSecrets) =>
  `clinic-${createHash('sha256').update(`clinic:${s.ADMIN_PASSWORD}`).digest('base64url').slice(0, 10)}`;

/** Read from `file`, or generated once and kept there (0600): the same secrets on every run. */
function kept<T extends object>(file: string, generate: () => T, valid: (value: Partial<T>) => boolean): T {
  if (existsSync(file)) {
    const value = JSON.parse(readFileSync(file, 'utf8')) as Partial<T>;
    if (!valid(value)) throw new Error(`${path.relative(ROOT, file)} is not what the demo expects: delete it to start afresh`);
    return value as T;
  }
  const created = generate();
  writeFileSync(file, `${JSON.stringify(created, null, 2)}\n`, { mode: 0o600 });
  return created;
}

function secrets(): Secrets {
  const service = kept<ServiceSecrets>(
    path.join(DATA, 'secrets.json'),
    () => ({ JWT_SECRET: token(48), WEBHOOK_SECRET: token(32) }),
    (s) => (s.JWT_SECRET?.length ?? 0) >= 32 && (s.WEBHOOK_SECRET?.length ?? 0) >= 16,
  );
  const demoFile = path.join(DATA, 'demo.json');
  const fresh = !existsSync(demoFile);
  const demo = kept<DemoSecrets>(
    demoFile,
    () => ({ ORTHANC_PASSWORD: token(24), ADMIN_PASSWORD: token(12), DOCTOR_PASSWORD: `demo-${token(6)}` }),
    (s) => Boolean(s.ORTHANC_PASSWORD && s.ADMIN_PASSWORD && s.DOCTOR_PASSWORD),
  );
  return { ...service, ...demo, fresh };
}

/**
 * On a fresh .local/, drops a demo database an earlier demo left (its accounts' passwords and its
 * images went with that demo's .local/, so nothing in it can be signed in to or shown). Only a
 * database whose name starts with pacs_demo: the demo never drops one it was not made for.
 */
async function forgetEarlierDemo(): Promise<void> {
  const url = new URL(DATABASE_URL);
  const name = decodeURIComponent(url.pathname.replace(/^\//, ''));
  if (!name.startsWith('pacs_demo')) return;
  url.pathname = '/postgres';
  const client = new Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const found = await client.query('SELECT 1 FROM pg_database WHERE datname = $1', [name]);
    if (found.rowCount === 0) return;
    console.log(`The database ${name} holds an earlier demo (its .local/ is gone): starting it afresh.`);
    await client.query(`DROP DATABASE "${name.replace(/"/g, '""')}"`).catch((error: Error & { code?: string }) => {
      if (error.code === '55006') throw new Error(`the database ${name} is in use (another demo running?): stop it first`);
      throw error;
    });
  } finally {
    await client.end();
  }
}

/** A process this run started; `output` keeps the end of what it wrote (its log has all of it). */
interface Started {
  name: string;
  child: ChildProcess;
  output: string;
}

const children: Started[] = [];
let stopping = false;

function startProcess(name: string, file: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): Started {
  const log = createWriteStream(path.join(LOGS, `${name}.log`), { flags: 'a' });
  // Its own process group: Ctrl-C reaches this script only, which stops the processes in order.
  const child = spawn(file, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  const started: Started = { name, child, output: '' };
  for (const stream of [child.stdout, child.stderr]) {
    stream?.pipe(log);
    stream?.on('data', (chunk: Buffer) => (started.output = (started.output + chunk.toString()).slice(-4000)));
  }
  children.push(started);
  return started;
}

const logOf = (name: string): string => path.relative(process.cwd(), path.join(LOGS, `${name}.log`));

/** From now on, the process stopping on its own stops the demo. */
function watch({ name, child }: Started): void {
  child.once('exit', (code, signal) => {
    if (stopping) return;
    if (CHECK) console.error(`demo check: FAIL (${name} stopped, ${signal ?? `exit ${code}`}; its log: ${logOf(name)})`);
    else console.error(`\n${name} stopped (${signal ?? `exit ${code}`}); its log: ${logOf(name)}`);
    void stopAll(1);
  });
}

/** Stops what this run started, by pid, newest first (the proxy before what it proxies). */
async function stopAll(code: number): Promise<void> {
  if (stopping) return;
  stopping = true;
  if (children.length > 0) console.log('Stopping...');
  for (const { child } of [...children].reverse()) await terminate(child, 10_000);
  process.exit(code);
}

function portFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = net.createServer();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

/**
 * `preferred` when it is free on the first attempt, else a free port below Linux's ephemeral range
 * (32768-60999): a port the kernel hands out for outgoing connections may be taken by one in the
 * seconds between the pick and the service's bind.
 */
async function freePort(preferred?: number, attempt = 1): Promise<number> {
  if (preferred && attempt === 1 && (await portFree(preferred))) return preferred;
  for (;;) {
    const port = randomInt(20_000, 32_768);
    if (await portFree(port)) return port;
  }
}

/** Polls `probe` until it answers true; throws when `started` stops first or time runs out. */
async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs: number, started?: Started): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (stopping) throw new Error('stopped');
    const { child } = started ?? {};
    if (child && (child.exitCode !== null || child.signalCode !== null)) {
      throw new Error(
        `${what} stopped (${child.signalCode ?? `exit ${child.exitCode}`}) before it was ready; its log: ${logOf(started!.name)}`,
      );
    }
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs / 1000} s (logs in .local/logs)`);
    await delay(250);
  }
}

/**
 * Starts a service on ports picked just before. On a machine where other things start too, a port
 * free a moment ago can be taken by the time the service binds it: then it starts again on ports
 * picked anew (three attempts).
 */
async function startOnFreePorts<P>(
  what: string,
  pick: (attempt: number) => Promise<P>,
  launch: (ports: P) => Started,
  ready: (ports: P) => Promise<boolean>,
  timeoutMs: number,
): Promise<P> {
  for (let attempt = 1; ; attempt++) {
    const ports = await pick(attempt);
    const started = launch(ports);
    try {
      await waitUntil(what, () => ready(ports), timeoutMs, started);
      watch(started);
      return ports;
    } catch (error) {
      await terminate(started.child, 0);
      children.splice(children.indexOf(started), 1);
      if (attempt >= 3 || !/already in use/i.test(started.output)) throw error;
    }
  }
}

interface OrthancPorts {
  http: number;
  dicom: number;
}

function launchOrthanc(s: Secrets, { http: httpPort, dicom: dicomPort }: OrthancPorts, webhookUrl: string): Started {
  const dir = path.join(DATA, 'orthanc');
  mkdirSync(path.join(dir, 'db'), { recursive: true });
  // The shipped configuration, with what differs on one machine: loopback only, local storage and
  // script path, free ports, a short StableAge so that the demo's studies are indexed quickly.
  // Orthanc 1.10 binds both its ports on every address (it has no setting for the address), so
  // each refuses other hosts instead: HTTP by RemoteAccessAllowed, DICOM by taking echoes and
  // images only from the demo's device, by AE title and address.
  const shipped = JSON.parse(readFileSync(path.join(ROOT, 'docker/orthanc/orthanc.json'), 'utf8')) as Record<string, unknown>;
  const config = {
    ...shipped,
    HttpPort: httpPort,
    DicomPort: dicomPort,
    RemoteAccessAllowed: false,
    DicomAlwaysAllowEcho: false,
    DicomAlwaysAllowStore: false,
    DicomCheckModalityHost: true,
    DicomModalities: { demo: [DEVICE_AET, '127.0.0.1', 104] },
    StorageDirectory: path.join(dir, 'db'),
    IndexDirectory: path.join(dir, 'db'),
    LuaScripts: [path.join(ROOT, 'docker/orthanc/webhook.lua')],
    StableAge: 2,
  };
  const file = path.join(dir, 'orthanc.json');
  writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
  return startProcess(
    'orthanc',
    ORTHANC_BIN,
    [file],
    {
      ORTHANC_NAME: 'PACS demo',
      ORTHANC_USERNAME: ORTHANC_USER,
      ORTHANC_PASSWORD: s.ORTHANC_PASSWORD,
      ORTHANC_VIEWER_USERNAME: ORTHANC_VIEWER_USER,
      ORTHANC_VIEWER_PASSWORD: viewerPassword(s),
      PACS_WEBHOOK_URL: webhookUrl,
      PACS_WEBHOOK_SECRET: s.WEBHOOK_SECRET,
      ...DICOM_NETWORK_ENV,
    },
    dir,
  );
}

function launchNginx(s: Secrets, port: number, apiPort: number, orthancPort: number): Started {
  const dir = path.join(DATA, 'nginx');
  mkdirSync(path.join(dir, 'logs'), { recursive: true });
  const template = readFileSync(path.join(ROOT, 'docker/nginx/nginx.conf'), 'utf8');
  // As root, nginx's workers would run as an unprivileged user that may not read the checkout.
  const workerUser = process.getuid?.() === 0 ? 'user root;\n' : '';
  const conf = path.join(dir, 'nginx.conf');
  writeFileSync(
    conf,
    workerUser +
      renderNginxConfig(template, {
        listen: `127.0.0.1:${port}`,
        apiUpstream: `127.0.0.1:${apiPort}`,
        orthancUpstream: `127.0.0.1:${orthancPort}`,
        orthancUser: ORTHANC_VIEWER_USER,
        orthancPassword: viewerPassword(s),
        viewerRoot: path.join(ROOT, 'viewer/dist'),
      }),
    { mode: 0o600 },
  );
  const args = ['-p', `${dir}/`, '-c', conf, '-g', `daemon off; pid ${path.join(dir, 'nginx.pid')};`];
  return startProcess('nginx', NGINX_BIN, args, {});
}

/** JSON over HTTP through the proxy, as a browser would reach the API. */
const api = fetchJson;

function expectStatus(what: string, res: { status: number; body: unknown }, ...ok: number[]): any {
  if (!ok.includes(res.status)) throw new Error(`${what}: HTTP ${res.status} ${JSON.stringify(res.body)}`);
  return res.body;
}

/** Finds a record by name in an admin list, or creates it. */
async function findOrCreate(
  base: string,
  token: string,
  list: string,
  name: string,
  body: Record<string, unknown>,
): Promise<string> {
  const found = expectStatus(
    `GET ${list}`,
    await api(base, 'GET', `${list}${list.includes('?') ? '&' : '?'}search=${encodeURIComponent(name)}`, token),
    200,
  );
  const existing = (found.data as Array<{ id: string; name: string }>).find((row) => row.name === name);
  if (existing) return existing.id;
  return expectStatus(`POST ${list}`, await api(base, 'POST', list.split('?')[0], token, body), 201).id as string;
}

/** Creates the account unless it exists; an existing one gets the CRM it lacks (a demo from before it had one). */
async function ensureUser(base: string, admin: string, email: string, body: Record<string, unknown>): Promise<void> {
  const found = expectStatus(
    'GET users',
    await api(base, 'GET', `/api/admin/users?search=${encodeURIComponent(email)}`, admin),
    200,
  );
  const user = (found.data as Array<{ id: string; email: string; crm: string | null }>).find((row) => row.email === email);
  if (!user) expectStatus('POST users', await api(base, 'POST', '/api/admin/users', admin, { ...body, email }), 201);
  else if (body.crm && !user.crm)
    expectStatus('PATCH users', await api(base, 'PATCH', `/api/admin/users/${user.id}`, admin, { crm: body.crm }), 200);
}

function createSuperAdmin(env: NodeJS.ProcessEnv, s: Secrets): Promise<void> {
  const cli = path.join(ROOT, 'dist/src/cli.js');
  const args = [
    cli,
    'create-super-admin',
    '--email',
    ADMIN_EMAIL,
    '--password',
    s.ADMIN_PASSWORD,
    '--name',
    'Demo administrator',
  ];
  return new Promise((resolve, reject) => {
    execFile(process.execPath, args, { cwd: ROOT, env: { ...process.env, ...env } }, (error, stdout, stderr) => {
      // A second run finds the account: fine.
      if (!error || /already exists/.test(`${stderr}${stdout}`)) resolve();
      else reject(new Error(`create-super-admin failed: ${stderr || stdout || error.message}`));
    });
  });
}

const DEMO_STUDIES = [
  {
    patientId: 'DEMO-0001',
    patientName: 'SILVA^JOÃO',
    patientSex: 'M',
    patientBirthDate: '19640312',
    studyDate: '20251104',
    studyDescription: 'CT head without contrast',
    modality: 'CT',
    series: 2,
  },
  {
    patientId: 'DEMO-0002',
    patientName: 'SOUZA^MARIA',
    patientSex: 'F',
    patientBirthDate: '19811127',
    studyDate: '20251021',
    studyDescription: 'MR knee right',
    modality: 'MR',
    series: 2,
  },
  {
    patientId: 'DEMO-0003',
    patientName: 'PEREIRA^ANA',
    patientSex: 'F',
    patientBirthDate: '19930605',
    studyDate: '20250918',
    studyDescription: 'CT chest low dose',
    modality: 'CT',
    series: 1,
  },
  {
    patientId: 'DEMO-0001',
    patientName: 'SILVA^JOÃO',
    patientSex: 'M',
    patientBirthDate: '19640312',
    studyDate: '20240215',
    studyDescription: 'CT head follow-up',
    modality: 'CT',
    series: 1,
  },
];
const INSTANCES_PER_SERIES = 3;

/** Text a doctor inserts on the report page and edits (the clinic's, for the modality). */
const DEMO_PRESETS = [
  {
    name: 'CT head, normal',
    modality: 'CT',
    technique: 'Axial acquisition from the skull base to the vertex, without intravenous contrast.',
    findings: 'No intracranial haemorrhage, mass effect or midline shift. Ventricles and sulci of normal size for age.',
    impression: 'No acute intracranial abnormality.',
  },
  {
    name: 'MR knee, normal',
    modality: 'MR',
    technique: 'Multiplanar proton density and T2-weighted sequences with fat suppression.',
    findings: 'Menisci and cruciate and collateral ligaments intact. No joint effusion. Articular cartilage preserved.',
    impression: 'Normal MR of the knee.',
  },
];

async function demoData(base: string, env: NodeJS.ProcessEnv, s: Secrets, dicomPort: number): Promise<void> {
  await createSuperAdmin(env, s);
  const admin = expectStatus(
    'admin sign-in',
    await api(base, 'POST', '/api/login', undefined, { email: ADMIN_EMAIL, password: s.ADMIN_PASSWORD }),
    200,
  ).access_token as string;
  const tenantId = await findOrCreate(base, admin, '/api/admin/tenants', 'Demo Clinic', { name: 'Demo Clinic' });
  const unitId = await findOrCreate(base, admin, `/api/admin/units?tenant_id=${tenantId}`, 'Radiology', {
    tenant_id: tenantId,
    name: 'Radiology',
  });
  await findOrCreate(base, admin, `/api/admin/modalities?tenant_id=${tenantId}`, 'Demo CT', {
    tenant_id: tenantId,
    unit_id: unitId,
    name: 'Demo CT',
    aet: DEVICE_AET,
    ip_address: '127.0.0.1',
  });
  await ensureUser(base, admin, DOCTOR_EMAIL, {
    tenant_id: tenantId,
    unit_id: unitId,
    name: 'Dr. Demo',
    crm: DOCTOR_CRM,
    password: s.DOCTOR_PASSWORD,
  });
  await ensureUser(base, admin, CLINIC_ADMIN_EMAIL, {
    tenant_id: tenantId,
    unit_id: unitId,
    name: 'Demo clinic administrator',
    is_tenant_admin: true,
    password: clinicAdminPassword(s),
  });

  const doctor = expectStatus(
    'doctor sign-in',
    await api(base, 'POST', '/api/login', undefined, { email: DOCTOR_EMAIL, password: s.DOCTOR_PASSWORD }),
    200,
  ).access_token as string;
  // Sign-ins are limited to 10 a minute from one address, and CI runs the demo twice in a row: the
  // clinic admin signs in only to add presets the clinic lacks.
  const presets = expectStatus('GET presets', await api(base, 'GET', '/api/tenant/report-presets', doctor), 200);
  const names = new Set((presets.data as Array<{ name: string }>).map((preset) => preset.name));
  const missing = DEMO_PRESETS.filter((preset) => !names.has(preset.name));
  if (missing.length > 0) {
    const clinicAdmin = expectStatus(
      'clinic admin sign-in',
      await api(base, 'POST', '/api/login', undefined, { email: CLINIC_ADMIN_EMAIL, password: clinicAdminPassword(s) }),
      200,
    ).access_token as string;
    for (const preset of missing)
      expectStatus('POST presets', await api(base, 'POST', '/api/tenant/report-presets', clinicAdmin, preset), 201);
  }
  const listed = async (): Promise<number> => {
    const res = await fetch(`${base}/dicom-web/studies?PatientID=DEMO-*`, { headers: { authorization: `Bearer ${doctor}` } });
    const studies = (await res.json()) as Array<Record<string, { Value?: number[] }>>;
    return studies.filter(
      (study) => study['00201208']?.Value?.[0] === (study['00201206']?.Value?.[0] ?? 0) * INSTANCES_PER_SERIES,
    ).length;
  };
  if ((await listed()) >= DEMO_STUDIES.length) return;

  console.log(`Sending ${DEMO_STUDIES.length} generated studies through the device ${DEVICE_AET}...`);
  for (const [index, spec] of DEMO_STUDIES.entries()) {
    const written = await writeStudy(path.join(DATA, 'studies', String(index)), {
      ...spec,
      accessionNumber: `DEMO${String(index + 1).padStart(4, '0')}`,
      series: Array.from({ length: spec.series }, (_, i) => ({
        modality: spec.modality,
        seriesNumber: i + 1,
        manufacturer: 'Demo',
        seriesDescription: `${spec.studyDescription} ${i + 1}`,
        instances: INSTANCES_PER_SERIES,
        rows: 256,
        columns: 256,
      })),
    });
    await sendWithStorescu(written.files, { aet: DEVICE_AET, port: dicomPort });
  }
  await waitUntil('the demo studies in the index', async () => (await listed()) >= DEMO_STUDIES.length, 180_000);
}

/**
 * What a doctor does first, through nginx as a browser would: signs in, finds the demo studies in
 * the worklist, and opens an image the way the viewer does (a viewer token, then the rendered
 * frame from the image server through the proxy's gate). Returns what it saw; throws what failed.
 */
async function check(base: string, s: Secrets): Promise<string> {
  const signIn = await api(base, 'POST', '/api/login', undefined, { email: DOCTOR_EMAIL, password: s.DOCTOR_PASSWORD });
  const token = expectStatus('doctor sign-in', signIn, 200).access_token as string;
  const page = expectStatus('GET /api/studies', await api(base, 'GET', '/api/studies', token), 200);
  const studies = (page.data as Array<{ id: string; patient_id: string; study_instance_uid: string }>).filter((study) =>
    study.patient_id.startsWith('DEMO-'),
  );
  if (studies.length < DEMO_STUDIES.length) {
    throw new Error(`the worklist lists ${studies.length} demo studies, ${DEMO_STUDIES.length} expected`);
  }
  // The worker fills the series and instances a moment after the study is listed.
  const study = studies[0];
  let series: { id: string; series_instance_uid: string } | undefined;
  let instance: { sop_instance_uid: string } | undefined;
  await waitUntil(
    "a demo study's instances",
    async () => {
      series = expectStatus('GET series', await api(base, 'GET', `/api/studies/${study.id}/series`, token), 200)[0];
      if (!series) return false;
      instance = expectStatus('GET instances', await api(base, 'GET', `/api/series/${series.id}/instances`, token), 200)[0];
      return Boolean(instance);
    },
    60_000,
  );
  const viewerToken = expectStatus(
    'POST /api/viewer/token',
    await api(base, 'POST', '/api/viewer/token', token, { study_id: study.id }),
    200,
    201,
  ).token as string;
  const frame = `/dicom-web/studies/${study.study_instance_uid}/series/${series!.series_instance_uid}/instances/${instance!.sop_instance_uid}/rendered`;
  const response = await fetch(`${base}${frame}`, { headers: { 'x-viewer-token': viewerToken, accept: 'image/jpeg' } });
  const image = Buffer.from(await response.arrayBuffer());
  const type = response.headers.get('content-type') ?? '';
  if (response.status !== 200 || !type.startsWith('image/jpeg') || image[0] !== 0xff || image[1] !== 0xd8) {
    throw new Error(`the rendered image: HTTP ${response.status} ${type}, ${image.length} bytes`);
  }
  const report = await draftReport(base, token, study.id);
  return `the doctor signed in through nginx, the worklist lists ${studies.length} demo studies, a rendered image (JPEG, ${image.length} bytes) came through the viewer's gate, ${report}`;
}

/**
 * The report page's work without leaving a trace: the clinic's presets for the study's modality, a
 * draft written from one, its PDF preview, the draft discarded (signing is left to the doctor: a
 * signed report never changes).
 */
async function draftReport(base: string, token: string, studyId: string): Promise<string> {
  const presets = expectStatus('GET presets', await api(base, 'GET', '/api/tenant/report-presets?modality=CT', token), 200);
  const preset = (presets.data as Array<{ findings: string | null; impression: string | null }>)[0];
  if (!preset) throw new Error('the clinic has no CT report preset');
  const draft = expectStatus(
    'POST report',
    await api(base, 'POST', `/api/studies/${studyId}/reports`, token, {
      findings: preset.findings,
      impression: preset.impression,
    }),
    201,
  ) as { id: string };
  try {
    const pdf = await fetch(`${base}/api/studies/${studyId}/reports/${draft.id}/pdf`, {
      headers: { authorization: `Bearer ${token}` },
    });
    const bytes = Buffer.from(await pdf.arrayBuffer());
    if (pdf.status !== 200 || bytes.subarray(0, 5).toString() !== '%PDF-') {
      throw new Error(`the draft's PDF preview: HTTP ${pdf.status}, ${bytes.length} bytes`);
    }
  } finally {
    expectStatus('DELETE report', await api(base, 'DELETE', `/api/studies/${studyId}/reports/${draft.id}`, token), 204);
  }
  return 'a draft report from a preset previewed as a PDF and discarded';
}

async function main(): Promise<void> {
  for (const dir of [DATA, LOGS]) mkdirSync(dir, { recursive: true });
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));
  const s = secrets();
  if (s.fresh) await forgetEarlierDemo();

  const env: NodeJS.ProcessEnv = {
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    DATABASE_URL,
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: process.env.QUEUE_PREFIX ?? 'pacs_demo',
    IMGSRV_USERNAME: ORTHANC_USER,
    IMGSRV_PASSWORD: s.ORTHANC_PASSWORD,
    JWT_SECRET: s.JWT_SECRET,
    WEBHOOK_SECRET: s.WEBHOOK_SECRET,
    TRUST_PROXY: '127.0.0.1',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  };

  console.log('Starting the API, the worker, Orthanc and nginx (logs in .local/logs)...');
  // Orthanc's HTTP port is picked first: the API and the worker are told where it will be (a retry
  // of Orthanc's start keeps it, and picks another DICOM port).
  const orthancHttp = await freePort();
  env.IMGSRV_URL = `http://127.0.0.1:${orthancHttp}`;
  const apiPort = await startOnFreePorts(
    'the API',
    () => freePort(),
    (port) =>
      startProcess('api', process.execPath, [...API_NODE_FLAGS, path.join(ROOT, 'dist/src/main.js')], {
        ...env,
        PORT: String(port),
      }),
    async (port) => (await fetch(`http://127.0.0.1:${port}/api/health`)).ok,
    60_000,
  );
  env.PORT = String(apiPort);
  watch(startProcess('worker', process.execPath, [path.join(ROOT, 'dist/src/worker.js')], env));
  const auth = basicAuth(ORTHANC_USER, s.ORTHANC_PASSWORD);
  const orthanc = await startOnFreePorts(
    'Orthanc',
    // The usual DICOM port when it is free, so that a device configured once keeps working.
    async (attempt) => ({
      http: orthancHttp,
      dicom: await freePort(Number(process.env.DEMO_DICOM_PORT ?? 4242), attempt),
    }),
    (ports) => launchOrthanc(s, ports, `http://127.0.0.1:${apiPort}/api/imgsrv/webhook`),
    async ({ http }) => (await fetch(`http://127.0.0.1:${http}/system`, { headers: { authorization: auth } })).ok,
    60_000,
  );
  const httpPort = await startOnFreePorts(
    'nginx',
    (attempt) => freePort(Number(process.env.DEMO_PORT ?? 8080), attempt),
    (port) => launchNginx(s, port, apiPort, orthanc.http),
    async (port) => (await fetch(`http://127.0.0.1:${port}/login`)).ok,
    20_000,
  );
  const base = `http://127.0.0.1:${httpPort}`;
  await demoData(base, env, s, orthanc.dicom);

  console.log(`
  The archive is running on this machine. Sign in at:

      ${base}/login

      doctor        ${DOCTOR_EMAIL}   password ${s.DOCTOR_PASSWORD}   (the studies of the Radiology unit; signs as CRM ${DOCTOR_CRM})
      clinic admin  ${CLINIC_ADMIN_EMAIL}   password ${clinicAdminPassword(s)}   (the whole Demo Clinic: presets, templates, logo)
      super admin   ${ADMIN_EMAIL}    password ${s.ADMIN_PASSWORD}

  API docs ${base}/api/docs · queue board ${base}/queues (super admin) · a device may send to
  ${DEVICE_AET} -> 127.0.0.1:${orthanc.dicom} (storescu -aet ${DEVICE_AET} 127.0.0.1 ${orthanc.dicom} file.dcm)
  Data and secrets in .local/ (delete it to start afresh). Ctrl-C stops everything.
`);
  if (CHECK) {
    const seen = await check(base, s);
    console.log(`demo check: PASS (${seen})`);
    await stopAll(0);
  }
}

main().catch((error: Error) => {
  if (error.message === 'stopped') return;
  if (CHECK) {
    const where = /\blogs?\b/.test(error.message) ? '' : '; logs in .local/logs';
    console.error(`demo check: FAIL (${error.message}${where})`);
  } else console.error(`\nThe demo could not start: ${error.message}`);
  void stopAll(1);
});
