import { ChildProcess, spawn } from 'child_process';
import { existsSync } from 'fs';
import { join } from 'path';
import { API_NODE_FLAGS } from '../api-node-flags';

export const ROOT = join(__dirname, '..', '..');

export interface ServiceProcess {
  process: ChildProcess;
  url: string;
  output(): string;
  /** Resolves with how the process ended; SIGKILL means it did not stop within 10 s. */
  stop(signal?: NodeJS.Signals): Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

/** Runs a built entry point (dist/src/main.js or dist/src/worker.js) as its own process, as production does. */
export async function startBuiltProcess(
  entry: 'main' | 'worker',
  env: Record<string, string>,
  options: { port?: number; readyTimeoutMs?: number } = {},
): Promise<ServiceProcess> {
  const file = join(ROOT, 'dist', 'src', `${entry}.js`);
  if (!existsSync(file)) throw new Error(`${file} is missing: run \`npm run build\` first`);
  const child = spawn(process.execPath, entry === 'main' ? [...API_NODE_FLAGS, file] : [file], {
    cwd: ROOT,
    env: { ...process.env, LOG_LEVEL: 'warn', ...env, ...(options.port ? { PORT: String(options.port) } : {}) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  child.stdout?.on('data', (chunk) => (output += chunk));
  child.stderr?.on('data', (chunk) => (output += chunk));
  const url = options.port ? `http://127.0.0.1:${options.port}` : '';
  const deadline = Date.now() + (options.readyTimeoutMs ?? 30_000);
  if (options.port) {
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
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
  }
  return {
    process: child,
    url,
    output: () => output,
    stop: (signal = 'SIGTERM') =>
      new Promise((resolve) => {
        if (child.exitCode !== null || child.signalCode !== null) {
          return resolve({ code: child.exitCode, signal: child.signalCode });
        }
        let killed = false;
        const timer = setTimeout(() => {
          killed = true;
          child.kill('SIGKILL');
        }, 10_000);
        child.once('exit', (code, exitSignal) => {
          clearTimeout(timer);
          resolve({ code, signal: killed ? 'SIGKILL' : exitSignal });
        });
        child.kill(signal);
      }),
  };
}
