/**
 * `npm run demo` (after scripts/first-run.sh has installed and built what it needs): the whole
 * archive on this machine, on loopback, with demo data, for a first look.
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
 * nothing twice. Ctrl-C stops every process it started.
 */
import { ChildProcess, execFile, spawn } from 'child_process';
import { randomBytes } from 'crypto';
import { createWriteStream, existsSync, mkdirSync, readFileSync, writeFileSync } from 'fs';
import * as net from 'net';
import * as path from 'path';
import { sendWithStorescu, writeStudy } from '../../test/support/dicom';
import { fetchJson } from '../../test/support/http';
import { renderNginxConfig } from '../../test/support/nginx';
import { delay, getFreePort, terminate } from '../../test/support/orthanc';

/** The repository (this file runs from .local/build/scripts/demo). */
const ROOT = process.env.PACS_ROOT ?? path.resolve(__dirname, '../../../..');
const DATA = path.join(ROOT, '.local');
const LOGS = path.join(DATA, 'logs');
const ORTHANC_BIN = process.env.ORTHANC_BIN ?? '/usr/sbin/Orthanc';
const NGINX_BIN = process.env.NGINX_BIN ?? '/usr/sbin/nginx';
const { API_NODE_FLAGS } = require(path.join(ROOT, 'scripts/api-node-flags')) as { API_NODE_FLAGS: string[] };

const DEVICE_AET = 'DEMO_CT';
const ORTHANC_USER = 'pacs';
const DOCTOR_EMAIL = 'doctor@demo.local';
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

type Secrets = ServiceSecrets & DemoSecrets;

const token = (bytes: number) => randomBytes(bytes).toString('base64url');

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
  const demo = kept<DemoSecrets>(
    path.join(DATA, 'demo.json'),
    () => ({ ORTHANC_PASSWORD: token(24), ADMIN_PASSWORD: token(12), DOCTOR_PASSWORD: `demo-${token(6)}` }),
    (s) => Boolean(s.ORTHANC_PASSWORD && s.ADMIN_PASSWORD && s.DOCTOR_PASSWORD),
  );
  return { ...service, ...demo };
}

const children: Array<{ name: string; child: ChildProcess }> = [];
let stopping = false;

function startProcess(name: string, file: string, args: string[], env: NodeJS.ProcessEnv, cwd = ROOT): ChildProcess {
  const log = createWriteStream(path.join(LOGS, `${name}.log`), { flags: 'a' });
  // Its own process group: Ctrl-C reaches this script only, which stops the processes in order.
  const child = spawn(file, args, { cwd, env: { ...process.env, ...env }, stdio: ['ignore', 'pipe', 'pipe'], detached: true });
  child.stdout?.pipe(log);
  child.stderr?.pipe(log);
  children.push({ name, child });
  child.once('exit', (code, signal) => {
    if (stopping) return;
    console.error(
      `\n${name} stopped (${signal ?? `exit ${code}`}); its log: ${path.relative(process.cwd(), path.join(LOGS, `${name}.log`))}`,
    );
    void stopAll(1);
  });
  return child;
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

async function freePort(preferred?: number): Promise<number> {
  return preferred && (await portFree(preferred)) ? preferred : getFreePort();
}

async function waitUntil(what: string, probe: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await probe().catch(() => false))) {
    if (stopping) throw new Error('stopped');
    if (Date.now() > deadline) throw new Error(`${what} did not come up within ${timeoutMs / 1000} s (logs in .local/logs)`);
    await delay(250);
  }
}

async function startOrthanc(s: Secrets, httpPort: number, dicomPort: number, webhookUrl: string): Promise<void> {
  const dir = path.join(DATA, 'orthanc');
  mkdirSync(path.join(dir, 'db'), { recursive: true });
  // The shipped configuration, with what differs on one machine: loopback only, local storage and
  // script path, free ports, a short StableAge so that the demo's studies are indexed quickly.
  const shipped = JSON.parse(readFileSync(path.join(ROOT, 'docker/orthanc/orthanc.json'), 'utf8')) as Record<string, unknown>;
  const config = {
    ...shipped,
    HttpPort: httpPort,
    DicomPort: dicomPort,
    RemoteAccessAllowed: false,
    StorageDirectory: path.join(dir, 'db'),
    IndexDirectory: path.join(dir, 'db'),
    LuaScripts: [path.join(ROOT, 'docker/orthanc/webhook.lua')],
    StableAge: 2,
  };
  const file = path.join(dir, 'orthanc.json');
  writeFileSync(file, JSON.stringify(config, null, 2), { mode: 0o600 });
  startProcess(
    'orthanc',
    ORTHANC_BIN,
    [file],
    {
      ORTHANC_NAME: 'PACS demo',
      ORTHANC_USERNAME: ORTHANC_USER,
      ORTHANC_PASSWORD: s.ORTHANC_PASSWORD,
      PACS_WEBHOOK_URL: webhookUrl,
      PACS_WEBHOOK_SECRET: s.WEBHOOK_SECRET,
      TCP_NODELAY: '1',
    },
    dir,
  );
  const auth = `Basic ${Buffer.from(`${ORTHANC_USER}:${s.ORTHANC_PASSWORD}`).toString('base64')}`;
  await waitUntil(
    'Orthanc',
    async () => (await fetch(`http://127.0.0.1:${httpPort}/system`, { headers: { authorization: auth } })).ok,
    60_000,
  );
}

async function startNginx(s: Secrets, port: number, apiPort: number, orthancPort: number): Promise<void> {
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
        orthancUser: ORTHANC_USER,
        orthancPassword: s.ORTHANC_PASSWORD,
        viewerRoot: path.join(ROOT, 'viewer/dist'),
      }),
    { mode: 0o600 },
  );
  const args = ['-p', `${dir}/`, '-c', conf, '-g', `daemon off; pid ${path.join(dir, 'nginx.pid')};`];
  startProcess('nginx', NGINX_BIN, args, {});
  await waitUntil('nginx', async () => (await fetch(`http://127.0.0.1:${port}/login`)).ok, 20_000);
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

async function demoData(base: string, env: NodeJS.ProcessEnv, s: Secrets): Promise<void> {
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
  const doctors = expectStatus(
    'GET users',
    await api(base, 'GET', `/api/admin/users?search=${encodeURIComponent(DOCTOR_EMAIL)}`, admin),
    200,
  );
  if (!(doctors.data as Array<{ email: string }>).some((user) => user.email === DOCTOR_EMAIL)) {
    expectStatus(
      'POST users',
      await api(base, 'POST', '/api/admin/users', admin, {
        tenant_id: tenantId,
        unit_id: unitId,
        name: 'Dr. Demo',
        email: DOCTOR_EMAIL,
        password: s.DOCTOR_PASSWORD,
      }),
      201,
    );
  }

  const doctor = expectStatus(
    'doctor sign-in',
    await api(base, 'POST', '/api/login', undefined, { email: DOCTOR_EMAIL, password: s.DOCTOR_PASSWORD }),
    200,
  ).access_token as string;
  const listed = async (): Promise<number> => {
    const res = await fetch(`${base}/dicom-web/studies?PatientID=DEMO-*`, { headers: { authorization: `Bearer ${doctor}` } });
    const studies = (await res.json()) as Array<Record<string, { Value?: number[] }>>;
    return studies.filter(
      (study) => study['00201208']?.Value?.[0] === (study['00201206']?.Value?.[0] ?? 0) * INSTANCES_PER_SERIES,
    ).length;
  };
  if ((await listed()) >= DEMO_STUDIES.length) return;

  console.log(`Sending ${DEMO_STUDIES.length} generated studies through the device ${DEVICE_AET}...`);
  // storescu and Orthanc both honour TCP_NODELAY (dcmtk's small PDUs otherwise wait on Nagle).
  process.env.TCP_NODELAY = '1';
  const dicomPort = Number(env.DEMO_DICOM_PORT);
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

async function main(): Promise<void> {
  for (const dir of [DATA, LOGS]) mkdirSync(dir, { recursive: true });
  process.on('SIGINT', () => void stopAll(0));
  process.on('SIGTERM', () => void stopAll(0));
  const s = secrets();

  const httpPort = await freePort(Number(process.env.DEMO_PORT ?? 8080));
  const [apiPort, orthancHttp] = [await freePort(), await freePort()];
  // The usual DICOM port when it is free, so that a device configured once keeps working.
  const orthancDicom = await freePort(Number(process.env.DEMO_DICOM_PORT ?? 4242));
  const base = `http://127.0.0.1:${httpPort}`;
  const env: NodeJS.ProcessEnv = {
    NODE_ENV: 'development',
    PORT: String(apiPort),
    HOST: '127.0.0.1',
    DATABASE_URL: process.env.DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/pacs_demo',
    REDIS_URL: process.env.REDIS_URL ?? 'redis://127.0.0.1:6379',
    QUEUE_PREFIX: process.env.QUEUE_PREFIX ?? 'pacs_demo',
    IMGSRV_URL: `http://127.0.0.1:${orthancHttp}`,
    IMGSRV_USERNAME: ORTHANC_USER,
    IMGSRV_PASSWORD: s.ORTHANC_PASSWORD,
    JWT_SECRET: s.JWT_SECRET,
    WEBHOOK_SECRET: s.WEBHOOK_SECRET,
    TRUST_PROXY: '127.0.0.1',
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
    DEMO_DICOM_PORT: String(orthancDicom),
  };

  console.log('Starting the API, the worker, Orthanc and nginx (logs in .local/logs)...');
  startProcess('api', process.execPath, [...API_NODE_FLAGS, path.join(ROOT, 'dist/src/main.js')], env);
  await waitUntil('the API', async () => (await fetch(`http://127.0.0.1:${apiPort}/api/health`)).ok, 60_000);
  startProcess('worker', process.execPath, [path.join(ROOT, 'dist/src/worker.js')], env);
  await startOrthanc(s, orthancHttp, orthancDicom, `http://127.0.0.1:${apiPort}/api/imgsrv/webhook`);
  await startNginx(s, httpPort, apiPort, orthancHttp);
  await demoData(base, env, s);

  console.log(`
  The archive is running on this machine. Sign in at:

      ${base}/login

      doctor       ${DOCTOR_EMAIL}   password ${s.DOCTOR_PASSWORD}   (the studies of the Radiology unit)
      super admin  ${ADMIN_EMAIL}    password ${s.ADMIN_PASSWORD}

  API docs ${base}/api/docs · queue board ${base}/queues (super admin) · a device may send to
  ${DEVICE_AET} -> 127.0.0.1:${orthancDicom} (storescu -aet ${DEVICE_AET} 127.0.0.1 ${orthancDicom} file.dcm)
  Data and secrets in .local/ (delete it, and the pacs_demo database, to start afresh). Ctrl-C stops everything.
`);
}

main().catch((error: Error) => {
  if (error.message !== 'stopped') console.error(`\nThe demo could not start: ${error.message}`);
  void stopAll(1);
});
