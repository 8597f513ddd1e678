import { execFile } from 'child_process';
import Redis from 'ioredis';
import { promisify } from 'util';
import { createTestApp, TestApp } from '../support/app';
import { createStudy, imgsrvId } from '../support/clinical-factories';
import { createClinic, login } from '../support/factories';

const run = promisify(execFile);

describe('Operations: health, API docs, CLI', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('GET /api/health answers 200 when PostgreSQL and Redis answer, without a token', async () => {
    const res = await t.http.get('/api/health');
    expect(res.status).toBe(200);
    expect(res.body).toMatchObject({ status: 'ok', details: { database: { status: 'up' }, redis: { status: 'up' } } });
  });

  it('serves the OpenAPI document with the bearer scheme and the session endpoints', async () => {
    const res = await t.http.get('/api/docs-json');
    expect(res.status).toBe(200);
    expect(res.body.components.securitySchemes.bearer).toMatchObject({ type: 'http', scheme: 'bearer' });
    for (const path of ['/api/login', '/api/logout', '/api/refresh', '/api/me', '/api/health']) {
      expect(res.body.paths[path]).toBeDefined();
    }
    expect(res.body.paths['/api/me'].get.security).toEqual(expect.arrayContaining([{ bearer: [] }]));
  });

  it('gives every property of the OpenAPI schemas its type: a text field is a string, not an object', async () => {
    const res = await t.http.get('/api/docs-json');
    const schemas = res.body.components.schemas as Record<string, { properties?: Record<string, Record<string, unknown>> }>;
    const untyped: string[] = [];
    for (const [name, schema] of Object.entries(schemas)) {
      for (const [property, definition] of Object.entries(schema.properties ?? {})) {
        const described =
          definition.$ref || definition.allOf || definition.oneOf || definition.properties || definition.additionalProperties;
        if (definition.type === 'object' && !described) untyped.push(`${name}.${property}`);
      }
    }
    expect(untyped).toEqual([]);
  });

  it('serves Swagger UI at /api/docs', async () => {
    const res = await t.http.get('/api/docs');
    expect(res.status).toBe(200);
    expect(String(res.headers['content-type'])).toContain('text/html');
  });

  it('answers every request with a request id, and echoes one it was given', async () => {
    const generated = await t.http.get('/api/health');
    expect(generated.headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
    const echoed = await t.http.get('/api/health', { headers: { 'x-request-id': 'trace-123' } });
    expect(echoed.headers['x-request-id']).toBe('trace-123');
  });

  it('keeps its Redis keys under QUEUE_PREFIX: rate limits, blacklist, viewer tokens and queues', async () => {
    const prefix = t.config.QUEUE_PREFIX;
    // Without a key prefix of its own: the keys as Redis holds them.
    const redis = new Redis(t.config.REDIS_URL);
    try {
      const clinic = await createClinic(t.db, t.http);
      const study = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
      const viewer = await t.http.post('/api/viewer/token', { token: clinic.token1, body: { study_id: study.id } });
      const { jti } = JSON.parse(Buffer.from(clinic.token2.split('.')[1], 'base64url').toString());
      expect((await t.http.post('/api/logout', { token: clinic.token2 })).status).toBe(200);
      const webhook = await t.http.post('/api/imgsrv/webhook', {
        headers: { 'x-webhook-secret': t.config.WEBHOOK_SECRET },
        body: { ID: imgsrvId() },
      });
      expect(webhook.status).toBe(200);

      expect(await redis.keys(`*blacklist:${jti}`)).toEqual([`${prefix}:blacklist:${jti}`]);
      expect(await redis.keys(`*viewer:${viewer.body.token}`)).toEqual([`${prefix}:viewer:${viewer.body.token}`]);
      expect(await redis.keys(`${prefix}:throttle:*`)).not.toEqual([]);
      expect(await redis.keys(`${prefix}:bull:study:*`)).not.toEqual([]);
    } finally {
      redis.disconnect();
    }
  });

  // Each entry point catches the configuration's error: its message alone, one line per bad variable.
  it.each([
    ['the API', 'src/main.ts'],
    ['the worker', 'src/worker.ts'],
    ['the CLI', 'src/cli.ts', 'create-super-admin', '--email', 'a@example.test', '--password', 'a-long-one', '--name', 'A'],
  ])(
    'stops %s on an invalid configuration, exit 1, naming every bad variable without a stack',
    async (_name, ...args) => {
      const result = await run('npx', ['ts-node', '--transpile-only', ...args], {
        cwd: `${__dirname}/../..`,
        env: { ...process.env, PORT: 'eighty', TRUST_PROXY: '10.0.0.1 10.0.0.2' },
        timeout: 60_000,
      }).catch((error) => error);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/^Invalid configuration:\n {2}PORT="eighty": /);
      expect(result.stderr).toContain(
        '\n  TRUST_PROXY="10.0.0.1 10.0.0.2": TRUST_PROXY must be off, a hop count or a list of proxy addresses',
      );
      expect(result.stderr).not.toMatch(/\n\s+at /);
    },
    90_000,
  );

  describe('npm run cli -- create-super-admin', () => {
    const cli = (...args: string[]) =>
      run('npx', ['ts-node', '--transpile-only', 'src/cli.ts', 'create-super-admin', ...args], {
        cwd: `${__dirname}/../..`,
        env: process.env,
      });

    it('creates a super admin who can sign in, prints the id, and refuses the same email twice', async () => {
      const email = `root-${Date.now()}@example.test`;
      const { stdout } = await cli('--email', email.toUpperCase(), '--password', 'a-long-password', '--name', 'Root');
      const id = stdout.trim();
      expect(id).toMatch(/^[0-9a-f-]{36}$/);
      const [row] = await t.db.query('SELECT email, is_super_admin, tenant_id FROM users WHERE id = $1', [id]);
      expect(row).toEqual({ email, is_super_admin: true, tenant_id: null });
      expect(await login(t.http, email, 'a-long-password')).toEqual(expect.any(String));

      const again = await cli('--email', email, '--password', 'a-long-password', '--name', 'Root').catch((e) => e);
      expect(again.code).not.toBe(0);
      expect(again.stderr).toContain(`A user with email ${email} already exists.`);
    }, 60_000);

    it('refuses a short password with a clear message', async () => {
      const result = await cli('--email', 'short@example.test', '--password', 'short', '--name', 'Root').catch((e) => e);
      expect(result.code).not.toBe(0);
      expect(result.stderr).toContain('at least 8 characters');
    }, 60_000);
  });
});
