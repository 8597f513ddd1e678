import { ChildProcess, execFile, spawn } from 'child_process';
import { mkdtempSync, readFileSync, rmSync, statSync } from 'fs';
import * as jwt from 'jsonwebtoken';
import { tmpdir } from 'os';
import { join } from 'path';
import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/environment';
import { openDataSource } from '../../src/database/data-source-options';
import { createTenant, createUnit, createUser, TEST_PASSWORD } from '../support/factories';
import { getFreePort } from '../../scripts/stack/orthanc';
import { ROOT } from '../../scripts/stack/processes';

/** The secrets main's source held until 2026-11: anyone who read the repository knew them. */
const PUBLISHED_JWT_SECRET = 'development-only-jwt-secret-change-me-0123456789';
const PUBLISHED_WEBHOOK_SECRET = 'development-only-webhook-secret';

/** Local addresses listening on `port` (from /proc/net/tcp and tcp6), e.g. ['127.0.0.1']. */
function listeningAddresses(port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0');
  const found: string[] = [];
  for (const file of ['/proc/net/tcp', '/proc/net/tcp6']) {
    for (const line of readFileSync(file, 'utf8').split('\n').slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state !== '0A' || !local?.endsWith(`:${hexPort}`)) continue;
      const hex = local.split(':')[0];
      found.push(
        hex.length === 8
          ? (hex.match(/../g) ?? [])
              .reverse()
              .map((byte) => parseInt(byte, 16))
              .join('.')
          : /^0+$/.test(hex)
            ? '::'
            : hex,
      );
    }
  }
  return found;
}

/**
 * `npm start` on a first try (no secrets, no NODE_ENV), and the CLI of a production install: as an
 * operator runs them, from the built JavaScript.
 */
describe('a first try and a production install', () => {
  let db: DataSource;
  let dir: string;

  beforeAll(async () => {
    db = await openDataSource(loadConfig().DATABASE_URL, { migrate: false });
    dir = mkdtempSync(join(tmpdir(), 'pacs-first-try-'));
  });
  afterAll(async () => {
    await db?.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  describe('npm start without secrets', () => {
    let child: ChildProcess;
    let output = '';
    let base: string;
    let port: number;
    const secretsFile = () => join(dir, 'secrets.json');

    beforeAll(async () => {
      port = await getFreePort();
      base = `http://127.0.0.1:${port}`;
      child = spawn(process.execPath, [join(ROOT, 'scripts', 'start-all.js')], {
        cwd: ROOT,
        env: {
          ...process.env,
          NODE_ENV: '',
          HOST: '',
          JWT_SECRET: '',
          WEBHOOK_SECRET: '',
          LOCAL_SECRETS_FILE: secretsFile(),
          PORT: String(port),
          QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}_first`,
          RECONCILE_INTERVAL: '0',
          LOG_LEVEL: 'warn',
        },
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      child.stdout?.on('data', (chunk) => (output += chunk));
      child.stderr?.on('data', (chunk) => (output += chunk));
      const deadline = Date.now() + 60_000;
      while (
        !(await fetch(`${base}/api/health`).then(
          (r) => r.ok,
          () => false,
        ))
      ) {
        if (child.exitCode !== null) throw new Error(`npm start exited ${child.exitCode}: ${output}`);
        if (Date.now() > deadline) throw new Error(`npm start did not become healthy: ${output}`);
        await new Promise((resolve) => setTimeout(resolve, 200));
      }
    }, 90_000);

    afterAll(async () => {
      // Stopped by its own pid; start-all.js stops the API and worker it started.
      if (child && child.exitCode === null) {
        const exited = new Promise((resolve) => child.once('exit', resolve));
        child.kill('SIGTERM');
        await exited;
      }
    });

    it('listens on loopback only', () => {
      expect(listeningAddresses(port)).toEqual(['127.0.0.1']);
    });

    it('generates one set of secrets for the API and the worker started together, kept 0600, said in one line', () => {
      const secrets = JSON.parse(readFileSync(secretsFile(), 'utf8'));
      expect(secrets).toEqual({ JWT_SECRET: expect.any(String), WEBHOOK_SECRET: expect.any(String) });
      expect(statSync(secretsFile()).mode & 0o777).toBe(0o600);
      const lines = output.split('\n').filter((line) => line.includes('generated random ones for this installation'));
      expect(lines).toHaveLength(1);
      expect(lines[0]).toContain(secretsFile());
      expect(output).not.toContain(secrets.JWT_SECRET);
    });

    it('accepts the generated webhook secret and refuses the one that used to be in the source', async () => {
      const webhook = (secret: string) =>
        fetch(`${base}/api/imgsrv/webhook`, {
          method: 'POST',
          headers: { 'content-type': 'application/json', 'x-webhook-secret': secret },
          body: '{}',
        });
      const refused = await webhook(PUBLISHED_WEBHOOK_SECRET);
      expect(refused.status).toBe(401);
      expect(await refused.json()).toEqual({ error: 'Unauthorized' });
      const accepted = await webhook(JSON.parse(readFileSync(secretsFile(), 'utf8')).WEBHOOK_SECRET);
      expect(accepted.status).toBe(400);
      expect(await accepted.json()).toEqual({ error: 'ID not provided' });
    });

    it('refuses a token signed with the secret that used to be in the source', async () => {
      const tenant = await createTenant(db);
      const unit = await createUnit(db, tenant.id);
      const user = await createUser(db, { tenant_id: tenant.id, unit_id: unit.id });
      const session = await fetch(`${base}/api/login`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ email: user.email, password: TEST_PASSWORD }),
      }).then((r) => r.json());
      const me = (token: string) => fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${token}` } });
      expect((await me(session.access_token)).status).toBe(200);
      const claims = jwt.decode(session.access_token) as jwt.JwtPayload;
      const forged = await me(jwt.sign({ ...claims, is_super_admin: true }, PUBLISHED_JWT_SECRET, { algorithm: 'HS256' }));
      expect(forged.status).toBe(401);
      expect(await forged.json()).toEqual({ message: 'Unauthenticated.' });
    });
  });

  describe('npm run cli on a production install', () => {
    const npmCli = (...args: string[]) =>
      new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
        execFile(
          'npm',
          ['run', '--silent', 'cli', '--', ...args],
          {
            cwd: ROOT,
            timeout: 60_000,
            env: {
              ...process.env,
              NODE_ENV: 'production',
              // No TypeScript runtime: what a pruned production install has.
              NODE_OPTIONS: '',
              MIGRATIONS_RUN: 'false',
            },
          },
          (error, stdout, stderr) =>
            resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, stdout, stderr }),
        );
      });

    it('runs the built JavaScript, never ts-node', () => {
      const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts;
      expect(scripts.cli).toBe('node dist/src/cli.js');
    });

    it('creates a super admin (exit 0, the id on stdout) and refuses the same email twice', async () => {
      const email = `prod-root-${Date.now()}@example.test`;
      const created = await npmCli('create-super-admin', '--email', email, '--password', 'a-long-password', '--name', 'Root');
      expect(created).toMatchObject({ code: 0, stderr: '' });
      const id = created.stdout.trim();
      const [row] = await db.query(
        'SELECT email, is_super_admin, substring(password, 1, 7) AS prefix FROM users WHERE id = $1',
        [id],
      );
      expect(row).toEqual({ email, is_super_admin: true, prefix: '$2b$12$' });
      const again = await npmCli('create-super-admin', '--email', email, '--password', 'a-long-password', '--name', 'Root');
      expect(again.code).not.toBe(0);
      expect(again.stderr).toContain(`A user with email ${email} already exists.`);
    }, 90_000);
  });
});
