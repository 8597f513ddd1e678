import { ChildProcess, spawn } from 'child_process';
import { existsSync } from 'fs';
import { join } from 'path';
import { delay } from '../../../scripts/stack/orthanc';
import { ROOT } from '../../../scripts/stack/processes';

/** Where the built service lives: `npm run build` output, or PACS_DIST_DIR for a private build. */
export const DIST_DIR = process.env.PACS_DIST_DIR ?? join(ROOT, 'dist');

export interface Service {
  readonly name: string;
  readonly url: string;
  readonly pid: number | undefined;
  output(): string;
  /** SIGKILL: no shutdown hook runs, as when a machine or container dies. */
  kill(): Promise<void>;
  stop(): Promise<void>;
}

/** Runs dist/src/main.js or dist/src/worker.js as its own process; waits for /api/health when given a port. */
export async function startService(entry: 'main' | 'worker', env: Record<string, string>, port?: number): Promise<Service> {
  const file = join(DIST_DIR, 'src', `${entry}.js`);
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` first`);
  const child: ChildProcess = spawn(process.execPath, [file], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env, ...(port ? { PORT: String(port) } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    if (output.length > 200_000) output = output.slice(-100_000);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  const url = port ? `http://127.0.0.1:${port}` : '';
  if (port) {
    const deadline = Date.now() + 60_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`${entry} exited ${child.exitCode}: ${output}`);
      const ok = await fetch(`${url}/api/health`).then(
        (r) => r.ok,
        () => false,
      );
      if (ok) break;
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new Error(`${entry} did not become healthy: ${output}`);
      }
      await delay(200);
    }
  }
  const exited = () => child.exitCode !== null || child.signalCode !== null;
  const waitExit = (signal: NodeJS.Signals, graceMs: number) =>
    new Promise<void>((resolve) => {
      if (exited()) return resolve();
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs);
      child.once('exit', () => {
        clearTimeout(timer);
        resolve();
      });
      child.kill(signal);
    });
  return {
    name: entry,
    url,
    pid: child.pid,
    output: () => output,
    kill: () => waitExit('SIGKILL', 5_000),
    stop: () => waitExit('SIGTERM', 15_000),
  };
}
