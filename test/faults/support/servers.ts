/**
 * Throwaway PostgreSQL and Redis servers for the fault tests, on free ports, so that restarting
 * them never touches the machine's shared ones (other test runs and engineers use those).
 */
import { ChildProcess, execFile, spawn } from 'child_process';
import { existsSync, promises as fs, readdirSync } from 'fs';
import * as net from 'net';
import * as os from 'os';
import * as path from 'path';
import { promisify } from 'util';
import { delay, getFreePort } from '../../../scripts/stack/orthanc';

const run = promisify(execFile);

function postgresBin(name: string): string {
  const root = '/usr/lib/postgresql';
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : [];
  for (const version of versions) {
    const candidate = path.join(root, version, 'bin', name);
    if (existsSync(candidate)) return candidate;
  }
  return name;
}

/** initdb and postgres refuse to run as root: run them as the postgres user then. */
function asPostgres(bin: string, args: string[]): [string, string[]] {
  return process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args];
}

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
  });
}

export class OwnPostgres {
  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  static async create(): Promise<OwnPostgres> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-fault-pg-'));
    if (process.getuid?.() === 0) await run('chown', ['-R', 'postgres:postgres', dir]);
    const [bin, args] = asPostgres(postgresBin('initdb'), [
      '-D',
      path.join(dir, 'data'),
      '-A',
      'trust',
      '-U',
      'postgres',
      '-E',
      'UTF8',
      '--no-sync',
    ]);
    await run(bin, args);
    const server = new OwnPostgres(await getFreePort(), dir);
    await server.start();
    return server;
  }

  url(database: string): string {
    return `postgres://postgres@127.0.0.1:${this.port}/${database}`;
  }

  private ctl(args: string[]) {
    const [bin, full] = asPostgres(postgresBin('pg_ctl'), ['-D', path.join(this.dir, 'data'), ...args]);
    return run(bin, full, { timeout: 60_000 });
  }

  async start(): Promise<void> {
    const options = `-p ${this.port} -k ${this.dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`;
    await this.ctl(['-o', options, '-l', path.join(this.dir, 'server.log'), '-w', 'start']);
  }

  /** A fast shutdown: open sessions are terminated, as in a restart by an operator. */
  async stop(): Promise<void> {
    await this.ctl(['-m', 'fast', '-w', 'stop']);
  }

  async destroy(): Promise<void> {
    await this.ctl(['-m', 'immediate', '-w', 'stop']).catch(() => undefined);
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}

/**
 * A Redis of its own, with an append-only file fsynced on every write, as a production broker
 * runs: a restart keeps the queues. (Without persistence a restart empties every queue, which no
 * deployment of a job queue accepts.)
 */
export class OwnRedis {
  private child: ChildProcess | null = null;

  private constructor(
    readonly port: number,
    private readonly dir: string,
  ) {}

  static async create(): Promise<OwnRedis> {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'pacs-fault-redis-'));
    const server = new OwnRedis(await getFreePort(), dir);
    await server.start();
    return server;
  }

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    const args = [
      '--port',
      String(this.port),
      '--bind',
      '127.0.0.1',
      '--save',
      '',
      '--appendonly',
      'yes',
      '--appendfsync',
      'always',
      '--dir',
      this.dir,
      '--daemonize',
      'no',
      '--loglevel',
      'warning',
    ];
    const child = spawn('redis-server', args, { stdio: 'ignore' });
    this.child = child;
    const deadline = Date.now() + 15_000;
    while (!(await portOpen(this.port))) {
      if (child.exitCode !== null) throw new Error(`redis-server exited ${child.exitCode}`);
      if (Date.now() > deadline) throw new Error('redis-server did not start');
      await delay(50);
    }
  }

  /** SIGTERM: Redis flushes its append-only file and exits, as on a service restart. */
  async stop(): Promise<void> {
    const child = this.child;
    this.child = null;
    if (!child || child.exitCode !== null) return;
    await new Promise<void>((resolve) => {
      const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill('SIGTERM');
    });
  }

  async destroy(): Promise<void> {
    await this.stop();
    await fs.rm(this.dir, { recursive: true, force: true });
  }
}
