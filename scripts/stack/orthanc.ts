/**
 * Runs the real image server (Orthanc) for the tests and benchmarks, configured from the shipped
 * docker/orthanc/orthanc.json and docker/orthanc/webhook.lua with a few overrides (ports, storage,
 * credentials, StableAge); the process helpers (free ports, terminate) serve the demo too.
 */
import { ChildProcess, spawn } from 'child_process';
import { randomBytes } from 'crypto';
import { createWriteStream, promises as fs, readFileSync } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { DICOM_NETWORK_ENV } from '../dicom-network-env';

/** TCP_NODELAY=1 for DCMTK (scripts/dicom-network-env.js): Orthanc's side of every association. */
export { DICOM_NETWORK_ENV };

export const ORTHANC_BIN = process.env.ORTHANC_BIN ?? '/usr/sbin/Orthanc';
export const DOCKER_DIR = path.resolve(__dirname, '../../docker');
export const ORTHANC_CONFIG = path.join(DOCKER_DIR, 'orthanc/orthanc.json');
export const WEBHOOK_LUA = path.join(DOCKER_DIR, 'orthanc/webhook.lua');

export interface StartOrthancOptions {
  /** Registered user (default "svc"). */
  username?: string;
  /** Default: random hex. */
  password?: string;
  /** The proxy's read-only user (ORTHANC_VIEWER_USERNAME; default "viewer"): GET /dicom-web/ only. */
  viewerUsername?: string;
  /** Default: random hex. */
  viewerPassword?: string;
  /** Seconds without a new instance before OnStableStudy fires (default 2; production 10). */
  stableAge?: number;
  /** Full URL the Lua hook posts to (PACS_WEBHOOK_URL). Default: a closed port, so nothing is notified. */
  webhookUrl?: string;
  /** X-Webhook-Secret sent by the hook (PACS_WEBHOOK_SECRET). Default "test-webhook-secret". */
  webhookSecret?: string;
  httpPort?: number;
  dicomPort?: number;
  /** Orthanc's own AE title (default "ORTHANC"). */
  aet?: string;
  /** Merged last into the generated configuration. */
  extraConfig?: Record<string, unknown>;
  /** Extra environment for the Orthanc process (after DICOM_NETWORK_ENV: `{ TCP_NODELAY: '0' }` turns it off). */
  env?: NodeJS.ProcessEnv;
  /** Pass --verbose to Orthanc. */
  verbose?: boolean;
  /** Milliseconds to wait for GET /system (default 30 000). */
  startTimeoutMs?: number;
}

export interface OrthancInstance {
  /** http://127.0.0.1:<httpPort>, no trailing slash. */
  url: string;
  username: string;
  password: string;
  /** nginx's credentials: read-only, DICOMweb only (webhook.lua, IncomingHttpRequestFilter). */
  viewerUsername: string;
  viewerPassword: string;
  httpPort: number;
  dicomPort: number;
  aet: string;
  webhookSecret: string;
  /** Temporary folder holding the configuration, the storage (db/) and orthanc.log. */
  dir: string;
  /** The running Orthanc's process id (undefined while stopped). */
  readonly pid: number | undefined;
  /** SIGTERM, then SIGKILL after 5 s (a graceful stop takes Orthanc 1.10 about 3.5 s). Storage is kept. */
  stop(): Promise<void>;
  /** Starts again after stop(), same ports, configuration and storage. */
  start(): Promise<void>;
  /** Kills Orthanc (SIGKILL, no graceful shutdown) and deletes dir. */
  destroy(): Promise<void>;
  /** What Orthanc has logged so far (stdout and stderr). */
  log(): string;
}

/** A TCP port that was free a moment ago on 127.0.0.1 (bind port 0, read, close). */
export function getFreePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
  });
}

export function basicAuth(username: string, password: string): string {
  return `Basic ${Buffer.from(`${username}:${password}`).toString('base64')}`;
}

/**
 * Stores DICOM files as the service does (its REST account: the Lua filter lets them in without
 * asking the door); returns Orthanc's ids of the instances and the study of the last one. Throws on
 * any answer but 200.
 */
export async function storeOverRest(
  orthanc: OrthancInstance,
  files: string[],
): Promise<{ orthancStudyId: string; orthancInstanceIds: string[] }> {
  const orthancInstanceIds: string[] = [];
  let orthancStudyId = '';
  for (const file of files) {
    const response = await fetch(`${orthanc.url}/instances`, {
      method: 'POST',
      headers: { Authorization: basicAuth(orthanc.username, orthanc.password), 'Content-Type': 'application/dicom' },
      body: await fs.readFile(file),
    });
    if (response.status !== 200) throw new Error(`storing ${file}: HTTP ${response.status}`);
    const stored = (await response.json()) as { ID: string; ParentStudy: string };
    orthancInstanceIds.push(stored.ID);
    orthancStudyId = stored.ParentStudy;
  }
  return { orthancStudyId, orthancInstanceIds };
}

/** Production configuration with the test overrides applied. */
export function buildTestConfig(
  opts: Required<
    Pick<
      StartOrthancOptions,
      'username' | 'password' | 'viewerUsername' | 'viewerPassword' | 'stableAge' | 'httpPort' | 'dicomPort'
    >
  > &
    Pick<StartOrthancOptions, 'aet' | 'extraConfig'>,
  dir: string,
): Record<string, unknown> {
  const production = JSON.parse(readFileSync(ORTHANC_CONFIG, 'utf8')) as Record<string, unknown>;
  const storage = path.join(dir, 'db');
  return {
    ...production,
    Name: 'pacs-test',
    HttpPort: opts.httpPort,
    DicomPort: opts.dicomPort,
    StorageDirectory: storage,
    IndexDirectory: storage,
    RemoteAccessAllowed: false,
    StableAge: opts.stableAge,
    RegisteredUsers: { [opts.username]: opts.password, [opts.viewerUsername]: opts.viewerPassword },
    LuaScripts: [WEBHOOK_LUA],
    DicomAet: opts.aet ?? 'ORTHANC',
    ...opts.extraConfig,
  };
}

export async function startOrthanc(opts: StartOrthancOptions = {}): Promise<OrthancInstance> {
  const username = opts.username ?? 'svc';
  const password = opts.password ?? randomBytes(12).toString('hex');
  const viewerUsername = opts.viewerUsername ?? 'viewer';
  const viewerPassword = opts.viewerPassword ?? randomBytes(12).toString('hex');
  const webhookSecret = opts.webhookSecret ?? 'test-webhook-secret';
  const webhookUrl = opts.webhookUrl ?? 'http://127.0.0.1:9/api/imgsrv/webhook';
  const fixedPorts = opts.httpPort !== undefined || opts.dicomPort !== undefined;
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-orthanc-'));
  const configPath = path.join(dir, 'orthanc.json');
  const logPath = path.join(dir, 'orthanc.log');

  let httpPort = 0;
  let dicomPort = 0;
  let aet = 'ORTHANC';
  let child: ChildProcess | undefined;
  let output = '';

  const writeConfig = async (): Promise<void> => {
    httpPort = opts.httpPort ?? (await getFreePort());
    dicomPort = opts.dicomPort ?? (await getFreePort());
    while (dicomPort === httpPort) dicomPort = await getFreePort();
    const config = buildTestConfig(
      {
        username,
        password,
        viewerUsername,
        viewerPassword,
        stableAge: opts.stableAge ?? 2,
        httpPort,
        dicomPort,
        aet: opts.aet,
        extraConfig: opts.extraConfig,
      },
      dir,
    );
    aet = config.DicomAet as string;
    await fs.writeFile(configPath, JSON.stringify(config, null, 2));
  };

  const launch = async (): Promise<void> => {
    const logFile = createWriteStream(logPath, { flags: 'a' });
    const args = opts.verbose ? ['--verbose', configPath] : [configPath];
    const proc = spawn(ORTHANC_BIN, args, {
      cwd: dir,
      env: {
        ...process.env,
        ...DICOM_NETWORK_ENV,
        ...opts.env,
        ORTHANC_USERNAME: username,
        ORTHANC_VIEWER_USERNAME: viewerUsername,
        ORTHANC_VIEWER_PASSWORD: viewerPassword,
        PACS_WEBHOOK_URL: webhookUrl,
        PACS_WEBHOOK_SECRET: webhookSecret,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child = proc;
    const collect = (chunk: Buffer): void => {
      output += chunk.toString();
      logFile.write(chunk);
    };
    proc.stdout?.on('data', collect);
    proc.stderr?.on('data', collect);
    proc.once('exit', () => logFile.end());

    try {
      await waitForSystem(proc, `http://127.0.0.1:${httpPort}`, basicAuth(username, password), opts.startTimeoutMs ?? 30_000);
    } catch (error) {
      await terminate(proc);
      child = undefined;
      throw new Error(`${(error as Error).message}\n--- orthanc log (tail) ---\n${output.slice(-4000)}`);
    }
  };

  const stop = async (): Promise<void> => {
    if (child) await terminate(child);
    child = undefined;
  };

  // A port picked by getFreePort can be taken before Orthanc binds it: retry with new ones.
  await writeConfig();
  for (let attempt = 1; ; attempt++) {
    try {
      await launch();
      break;
    } catch (error) {
      const portClash = /already in use|privileged|bind/i.test((error as Error).message);
      if (fixedPorts || !portClash || attempt >= 3) {
        await fs.rm(dir, { recursive: true, force: true });
        throw error;
      }
      await writeConfig();
    }
  }

  return {
    get url() {
      return `http://127.0.0.1:${httpPort}`;
    },
    username,
    password,
    viewerUsername,
    viewerPassword,
    get httpPort() {
      return httpPort;
    },
    get dicomPort() {
      return dicomPort;
    },
    get aet() {
      return aet;
    },
    webhookSecret,
    dir,
    get pid() {
      return child?.pid;
    },
    stop,
    start: async () => {
      if (child) throw new Error('Orthanc is already running');
      await launch();
    },
    destroy: async () => {
      // The storage is deleted anyway: no need for Orthanc's ~3 s graceful shutdown.
      if (child) await terminate(child, 0);
      child = undefined;
      await fs.rm(dir, { recursive: true, force: true });
    },
    log: () => output,
  };
}

async function waitForSystem(proc: ChildProcess, url: string, authorization: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let exited = false;
  proc.once('exit', () => (exited = true));
  while (Date.now() < deadline) {
    if (exited || proc.exitCode !== null) {
      throw new Error(`Orthanc exited with code ${proc.exitCode} before answering`);
    }
    try {
      const response = await fetch(`${url}/system`, {
        headers: { Authorization: authorization },
        signal: AbortSignal.timeout(1000),
      });
      if (response.ok) return;
      if (response.status === 401) throw new Error('Orthanc refused the test credentials (401)');
    } catch (error) {
      if ((error as Error).message.includes('401')) throw error;
    }
    await delay(100);
  }
  throw new Error(`Orthanc did not answer GET ${url}/system within ${timeoutMs} ms`);
}

/** SIGTERM, then SIGKILL if the process is still there after `graceMs` (0: SIGKILL at once). */
export function terminate(proc: ChildProcess, graceMs = 5000): Promise<void> {
  if (proc.exitCode !== null || proc.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    let timer: NodeJS.Timeout | undefined;
    proc.once('exit', () => {
      clearTimeout(timer);
      resolve();
    });
    if (graceMs <= 0) {
      proc.kill('SIGKILL');
      return;
    }
    timer = setTimeout(() => proc.kill('SIGKILL'), graceMs);
    proc.kill('SIGTERM');
  });
}

export const delay = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `probe` every 150 ms until it returns something truthy, which it returns; throws after `timeoutMs`. */
export async function waitFor<T>(
  what: string,
  probe: () => Promise<T | undefined | null | false>,
  timeoutMs = 30_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(150);
  }
}
