import { ChildProcess, spawn, spawnSync } from 'child_process';
import { readFileSync } from 'fs';
import { createServer } from 'net';
import { API_NODE_FLAGS } from '../../scripts/api-node-flags';

export { API_NODE_FLAGS };

export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.on('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => (typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port'))));
    });
  });
}

export interface Child {
  process: ChildProcess;
  url: string;
  output(): string;
  stop(): Promise<void>;
}

function track(child: ChildProcess, url: string, echo: boolean): Child {
  let output = '';
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-20_000);
    if (echo) process.stderr.write(chunk);
  };
  child.stdout?.on('data', keep);
  child.stderr?.on('data', keep);
  return {
    process: child,
    url,
    output: () => output,
    stop: () =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) return resolve();
        const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
        child.once('exit', () => {
          clearTimeout(timer);
          resolve();
        });
        child.kill('SIGTERM');
      }),
  };
}

/** Polls `url` until it answers (any status when `anyStatus`, else 2xx) or the process dies. */
export async function waitUntilUp(child: Child, url: string, timeoutMs: number, anyStatus = false): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (child.process.exitCode !== null) throw new Error(`process exited ${child.process.exitCode}:\n${child.output()}`);
    const ok = await fetch(url).then(
      (r) => anyStatus || r.ok,
      () => false,
    );
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`${url} did not come up in ${timeoutMs} ms:\n${child.output()}`);
    await new Promise((resolve) => setTimeout(resolve, 250));
  }
}

/** The reference: a bare Node http server answering 200 with a tiny JSON body, in its own process. */
export async function startBareServer(): Promise<Child> {
  const port = await freePort();
  const code = `require('http').createServer((req, res) => {
      res.writeHead(200, { 'content-type': 'application/json' }); res.end('{"ok":true}');
    }).listen(${port}, '127.0.0.1');`;
  const child = track(
    spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'pipe', 'pipe'] }),
    `http://127.0.0.1:${port}`,
    false,
  );
  await waitUntilUp(child, child.url, 10_000);
  return child;
}

/** The API exactly as production runs it (`node <API_NODE_FLAGS> <dist>/src/main.js`), on its own port. */
export async function startApi(
  mainJs: string,
  env: Record<string, string>,
  nodeArgs: string[] = API_NODE_FLAGS,
): Promise<Child> {
  const port = await freePort();
  const child = track(
    spawn(process.execPath, [...nodeArgs, mainJs], {
      env: { ...process.env, ...env, PORT: String(port) },
      stdio: ['ignore', 'pipe', 'pipe'],
    }),
    `http://127.0.0.1:${port}`,
    true,
  );
  await waitUntilUp(child, `${child.url}/api/health`, 120_000);
  return child;
}

/** Resident memory of a process from /proc: current and peak (high-water mark), in MiB. */
export function memoryOf(pid: number): { rssMb: number; hwmMb: number } | null {
  try {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kb = (key: string) => Number(new RegExp(`^${key}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? 0);
    return { rssMb: kb('VmRSS') / 1024, hwmMb: kb('VmHWM') / 1024 };
  } catch {
    return null;
  }
}

/** Samples a process's RSS every `everyMs`; `peak()` is the highest sample since the last reset. */
export function rssSampler(pid: number, everyMs = 200) {
  let peak = 0;
  let overall = 0;
  const sample = () => {
    const memory = memoryOf(pid);
    if (memory) {
      peak = Math.max(peak, memory.rssMb);
      overall = Math.max(overall, memory.rssMb, memory.hwmMb);
    }
  };
  const timer = setInterval(sample, everyMs);
  timer.unref();
  sample();
  return {
    peak: () => (sample(), peak),
    resetPeak: () => {
      peak = 0;
      sample();
    },
    overall: () => (sample(), overall),
    stop: () => clearInterval(timer),
  };
}

const CLOCK_TICKS_PER_SECOND = 100;

/** CPU time (user + system) a process has used, in milliseconds, from /proc/<pid>/stat; 0 once gone. */
export function cpuMsOf(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // The command name may hold spaces: fields are counted after its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_SECOND;
  } catch {
    return 0;
  }
}

/**
 * Pins the given processes (every thread) to the last core and leaves the first to a load
 * generator started with `taskset -c <generator>`; `release` gives them every core back. Undefined
 * on a single core, or where taskset is missing.
 */
export function pinServers(cores: number, pids: number[]): { generator: number; release(): void } | undefined {
  if (cores < 2) return undefined;
  const set = (list: string) =>
    pids.every((pid) => spawnSync('taskset', ['-a', '-p', '-c', list, String(pid)], { stdio: 'ignore' }).status === 0);
  if (!set(String(cores - 1))) {
    set(`0-${cores - 1}`);
    return undefined;
  }
  return { generator: 0, release: () => void set(`0-${cores - 1}`) };
}
