/**
 * Runs the shipped viewer proxy (docker/nginx/nginx.conf) for the tests: the template is
 * rendered into a temporary prefix folder and nginx runs in the foreground from it. The demo
 * renders the same template (renderNginxConfig) into .local/nginx.
 */
import { ChildProcess, execFile, spawn } from 'child_process';
import { existsSync, promises as fs, readFileSync } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { DOCKER_DIR, delay, getFreePort, terminate } from './orthanc';

export const NGINX_BIN = process.env.NGINX_BIN ?? '/usr/sbin/nginx';
export const NGINX_TEMPLATE = path.join(DOCKER_DIR, 'nginx/nginx.conf');
/** The OHIF viewer's static build, installed by viewer/install.js. */
export const VIEWER_ROOT = path.join(DOCKER_DIR, '..', 'viewer', 'dist');

export interface StartNginxOptions {
  apiPort: number;
  orthancPort: number;
  orthancUser: string;
  orthancPassword: string;
  apiHost?: string;
  orthancHost?: string;
  /** Default: a free port on 127.0.0.1. */
  port?: number;
  /** Folder served as the viewer; default VIEWER_ROOT. */
  viewerRoot?: string;
  startTimeoutMs?: number;
}

export interface NginxInstance {
  /** http://127.0.0.1:<port>, no trailing slash. */
  url: string;
  port: number;
  /** The prefix folder (nginx.conf, logs/, temp folders). */
  dir: string;
  /** SIGTERM, then SIGKILL after 5 s, then the prefix folder is deleted. */
  stop(): Promise<void>;
  accessLog(): string;
  errorLog(): string;
}

export interface NginxPlaceholders {
  listen: string;
  apiUpstream: string;
  orthancUpstream: string;
  orthancUser: string;
  orthancPassword: string;
  /** Default: VIEWER_ROOT. */
  viewerRoot?: string;
}

/** Substitutes the placeholders of the template; throws if one is left over. */
export function renderNginxConfig(template: string, values: NginxPlaceholders): string {
  const auth = Buffer.from(`${values.orthancUser}:${values.orthancPassword}`).toString('base64');
  const rendered = template
    .replace(/__LISTEN_PORT__/g, values.listen)
    .replace(/__API_UPSTREAM__/g, values.apiUpstream)
    .replace(/__ORTHANC_UPSTREAM__/g, values.orthancUpstream)
    .replace(/__ORTHANC_AUTH__/g, auth)
    .replace(/__VIEWER_ROOT__/g, values.viewerRoot ?? VIEWER_ROOT);
  const left = rendered.match(/__[A-Z_]+__/);
  if (left) throw new Error(`nginx template placeholder not substituted: ${left[0]}`);
  return rendered;
}

export async function startNginx(opts: StartNginxOptions): Promise<NginxInstance> {
  const port = opts.port ?? (await getFreePort());
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-nginx-'));
  // nginx's workers run as its unprivileged default user and must reach the temp folders.
  await fs.chmod(dir, 0o755);
  await fs.mkdir(path.join(dir, 'logs'));
  const conf = path.join(dir, 'nginx.conf');
  const prefix = `${dir}/`;
  const globals = (daemon: boolean): string => `${daemon ? '' : 'daemon off; '}pid ${path.join(dir, 'nginx.pid')};`;

  // The checkout may sit under a private folder (CI clones into a mode-700 mktemp dir), where
  // nginx's unprivileged workers could not read the viewer's files: as root, workers run as root.
  const workerUser = process.getuid?.() === 0 ? 'user root;\n' : '';
  const rendered =
    workerUser +
    renderNginxConfig(await fs.readFile(NGINX_TEMPLATE, 'utf8'), {
      listen: `127.0.0.1:${port}`,
      apiUpstream: `${opts.apiHost ?? '127.0.0.1'}:${opts.apiPort}`,
      orthancUpstream: `${opts.orthancHost ?? '127.0.0.1'}:${opts.orthancPort}`,
      orthancUser: opts.orthancUser,
      orthancPassword: opts.orthancPassword,
      viewerRoot: opts.viewerRoot,
    });
  await fs.writeFile(conf, rendered);

  try {
    await run(NGINX_BIN, ['-t', '-q', '-p', prefix, '-c', conf, '-g', globals(true)]);
  } catch (error) {
    await fs.rm(dir, { recursive: true, force: true });
    throw error;
  }

  const proc = spawn(NGINX_BIN, ['-p', prefix, '-c', conf, '-g', globals(false)], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  proc.stdout?.on('data', (chunk: Buffer) => (output += chunk.toString()));
  proc.stderr?.on('data', (chunk: Buffer) => (output += chunk.toString()));

  const readLog = (name: string): string => {
    const file = path.join(dir, 'logs', name);
    return existsSync(file) ? readFileSync(file, 'utf8') : '';
  };

  const stop = async (): Promise<void> => {
    await terminate(proc);
    await fs.rm(dir, { recursive: true, force: true });
  };

  try {
    await waitForPort(proc, port, opts.startTimeoutMs ?? 10_000);
  } catch (error) {
    const detail = `${output}\n${readLog('error.log')}`.trim();
    await stop();
    throw new Error(`${(error as Error).message}\n${detail}`);
  }

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    dir,
    stop,
    accessLog: () => readLog('access.log'),
    errorLog: () => readLog('error.log'),
  };
}

function run(file: string, args: string[]): Promise<void> {
  return new Promise((resolve, reject) => {
    execFile(file, args, (error, stdout, stderr) => {
      if (error) reject(new Error(`${file} ${args.join(' ')} failed:\n${stderr}${stdout}`));
      else resolve();
    });
  });
}

async function waitForPort(proc: ChildProcess, port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    if (proc.exitCode !== null || proc.signalCode !== null) {
      throw new Error(`nginx exited (${proc.exitCode ?? proc.signalCode}) before listening on ${port}`);
    }
    if (await canConnect(port)) return;
    await delay(50);
  }
  throw new Error(`nginx did not listen on 127.0.0.1:${port} within ${timeoutMs} ms`);
}

function canConnect(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}
