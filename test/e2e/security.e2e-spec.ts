import { Controller, Get, Module, Post } from '@nestjs/common';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { Test } from '@nestjs/testing';
import { getDataSourceToken } from '@nestjs/typeorm';
import { generateKeyPairSync, randomUUID } from 'crypto';
import * as jwt from 'jsonwebtoken';
import * as net from 'net';
import { AddressInfo } from 'net';
import { QueryFailedError, DataSource } from 'typeorm';
import { configureApp, createAdapter, NEST_APP_OPTIONS } from '../../src/app.factory';
import { ApiModule } from '../../src/app.module';
import { APP_CONFIG } from '../../src/config/config.module';
import { AppConfig, loadConfig } from '../../src/config/environment';
import { HttpClient } from '../support/http';
import { createTenant, createUnit, createUser, login } from '../support/factories';

/** Routes that fail the way real code can, to prove what the global filter lets out. */
@Controller('__test__/errors')
class FailingController {
  @Get('sql')
  sql(): never {
    throw new QueryFailedError(
      `SELECT password FROM users WHERE email = $1`,
      ['victim@example.test'],
      Object.assign(new Error('syntax error at or near "FROM"'), { code: '42601' }),
    );
  }

  @Get('type')
  type(): never {
    const user: { name?: { first: string } } = {};
    return user.name!.first as never;
  }

  @Post('database-down')
  down(): never {
    throw Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' });
  }
}

@Module({ controllers: [FailingController] })
class FailingModule {}

describe('Hardening: headers, size limits, JWT algorithm, error bodies', () => {
  let app: NestFastifyApplication;
  let config: AppConfig;
  let db: DataSource;
  let client: HttpClient;

  beforeAll(async () => {
    config = loadConfig();
    const moduleRef = await Test.createTestingModule({ imports: [ApiModule, FailingModule] })
      .overrideProvider(APP_CONFIG)
      .useValue(config)
      .compile();
    app = moduleRef.createNestApplication<NestFastifyApplication>(createAdapter(config), {
      ...NEST_APP_OPTIONS,
      logger: false,
    });
    await configureApp(app);
    await app.init();
    await app.getHttpAdapter().getInstance().ready();
    db = app.get<DataSource>(getDataSourceToken());
    client = new HttpClient(app);
  });
  afterAll(() => app.close());

  async function member() {
    const tenant = await createTenant(db);
    const unit = await createUnit(db, tenant.id);
    const user = await createUser(db, { tenant_id: tenant.id, unit_id: unit.id });
    return { user, token: await login(client, user.email) };
  }

  describe('security headers', () => {
    const expectApiHeaders = (headers: Record<string, unknown>) => {
      expect(headers['content-security-policy']).toBe(
        "default-src 'none';base-uri 'none';form-action 'none';frame-ancestors 'none'",
      );
      expect(headers['x-content-type-options']).toBe('nosniff');
      expect(headers['x-frame-options']).toBe('SAMEORIGIN');
      expect(headers['referrer-policy']).toBe('no-referrer');
      expect(headers['cross-origin-opener-policy']).toBe('same-origin');
      expect(headers['cross-origin-resource-policy']).toBe('same-site');
      expect(headers['x-powered-by']).toBeUndefined();
    };

    it('sends them on successful JSON answers', async () => {
      const res = await client.get('/api/health');
      expect(res.status).toBe(200);
      expectApiHeaders(res.headers);
    });

    it('sends them on errors too: 401, 404 of an unknown route, 400 of a malformed body', async () => {
      const unauthenticated = await client.get('/api/me');
      expect(unauthenticated.status).toBe(401);
      expect(unauthenticated.body).toEqual({ message: 'Unauthenticated.' });
      expectApiHeaders(unauthenticated.headers);

      const unknown = await client.get('/api/no-such-route');
      expect(unknown.status).toBe(404);
      expectApiHeaders(unknown.headers);

      const malformed = await client.post('/api/login', {
        raw: '{"email": "a@b.c", ',
        headers: { 'content-type': 'application/json' },
      });
      expect(malformed.status).toBe(400);
      expect(malformed.body).toEqual({ message: 'Malformed request body.' });
      expectApiHeaders(malformed.headers);
    });

    it('does not send HSTS over plain HTTP (COOKIE_SECURE off)', async () => {
      const res = await client.get('/api/health');
      expect(res.headers['strict-transport-security']).toBeUndefined();
    });

    it('gives Swagger UI a policy that lets its own scripts, stylesheet and images load', async () => {
      const page = await client.get('/api/docs');
      expect(page.status).toBe(200);
      const csp = String(page.headers['content-security-policy']);
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("style-src 'self' 'unsafe-inline'");
      expect(csp).toContain("img-src 'self' data:");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(csp).not.toContain("script-src 'self' 'unsafe-inline'");
      // Every script of the page is an external file of the same origin: the policy allows it.
      const html = String(page.body);
      const scripts = [...html.matchAll(/<script([^>]*)>([\s\S]*?)<\/script>/g)];
      expect(scripts.length).toBeGreaterThan(0);
      for (const [, attributes, inline] of scripts) {
        expect(attributes).toMatch(/src=["'](?!https?:)/);
        expect(inline.trim()).toBe('');
      }
      for (const asset of ['swagger-ui-bundle.js', 'swagger-ui-init.js', 'swagger-ui.css']) {
        const res = await client.get(`/api/docs/${asset}`);
        expect({ asset, status: res.status }).toEqual({ asset, status: 200 });
        expect(String(res.headers['content-security-policy'])).toContain("script-src 'self'");
      }
    });

    it('sends no CORS headers when CORS_ORIGINS is empty (same-origin only)', async () => {
      expect(config.CORS_ORIGINS).toBe('');
      const res = await client.get('/api/health', { headers: { origin: 'https://evil.example' } });
      expect(res.headers['access-control-allow-origin']).toBeUndefined();
      expect(res.headers['access-control-allow-credentials']).toBeUndefined();
      const preflight = await client.request('OPTIONS', '/api/me', {
        headers: { origin: 'https://evil.example', 'access-control-request-method': 'GET' },
      });
      expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    });
  });

  describe('JWT algorithm pinned to HS256', () => {
    const claimsOf = (token: string) => JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
    const b64 = (value: object) => Buffer.from(JSON.stringify(value)).toString('base64url');

    async function expect401(token: string) {
      const res = await client.get('/api/me', { token });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
      const viaCookie = await client.get('/api/me', { cookies: { pacs_access_token: token } });
      expect(viaCookie.status).toBe(401);
    }

    it('accepts the token it issued (control)', async () => {
      const { token } = await member();
      expect((await client.get('/api/me', { token })).status).toBe(200);
    });

    it('refuses an unsigned token (alg none), whatever the case of "none"', async () => {
      const { token } = await member();
      const claims = claimsOf(token);
      for (const alg of ['none', 'None', 'NONE']) {
        await expect401(`${b64({ alg, typ: 'JWT' })}.${b64(claims)}.`);
        await expect401(`${b64({ alg, typ: 'JWT' })}.${b64(claims)}`);
      }
    });

    it('refuses a token signed with RS256, even with the claims of a real session', async () => {
      const { token } = await member();
      const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 });
      const forged = jwt.sign(claimsOf(token), privateKey.export({ type: 'pkcs1', format: 'pem' }), {
        algorithm: 'RS256',
      });
      await expect401(forged);
    });

    it('refuses HS384 and HS512 tokens even when signed with the real secret', async () => {
      const { token } = await member();
      for (const algorithm of ['HS384', 'HS512'] as const) {
        await expect401(jwt.sign(claimsOf(token), config.JWT_SECRET, { algorithm }));
      }
    });

    it('refuses a token signed with another secret', async () => {
      const { token } = await member();
      await expect401(jwt.sign(claimsOf(token), 'another-secret-of-sufficient-length-0123456789', { algorithm: 'HS256' }));
    });

    it('refuses an expired token, a blacklisted one and one with a tampered payload', async () => {
      const { token, user } = await member();
      const claims = claimsOf(token);
      const now = Math.floor(Date.now() / 1000);
      await expect401(
        jwt.sign({ ...claims, jti: randomUUID(), iat: now - 7200, exp: now - 3600 }, config.JWT_SECRET, { algorithm: 'HS256' }),
      );
      const [header, , signature] = token.split('.');
      await expect401(`${header}.${b64({ ...claims, is_super_admin: true })}.${signature}`);
      expect((await client.post('/api/logout', { token })).status).toBe(200);
      await expect401(token);
      // The claims are not enough on their own: another session of the user still works.
      expect((await client.get('/api/me', { token: await login(client, user.email) })).status).toBe(200);
    });
  });

  describe('size limits', () => {
    it('answers 413 with a JSON body past the 10 MiB body limit', async () => {
      const body = JSON.stringify({ email: 'a@b.c', password: 'x'.repeat(10 * 1024 * 1024) });
      const res = await client.post('/api/login', { raw: body, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(413);
      expect(res.body).toEqual({ message: 'Payload too large.' });
    });

    it('reads a body of exactly 10 MiB, and refuses one byte more with 413', async () => {
      const sized = (bytes: number) => {
        const head = '{"email":"a@b.c","password":"wrong-password","pad":"';
        return `${head}${'x'.repeat(bytes - head.length - 2)}"}`;
      };
      const post = async (raw: string) => {
        const res = await client.post('/api/login', { raw, headers: { 'content-type': 'application/json' } });
        return { status: res.status, body: res.body };
      };
      expect(sized(10 * 1024 * 1024)).toHaveLength(10 * 1024 * 1024);
      expect(await post(sized(10 * 1024 * 1024))).toEqual({ status: 401, body: { error: 'Credenciais inválidas.' } });
      expect(await post(sized(10 * 1024 * 1024 + 1))).toEqual({ status: 413, body: { message: 'Payload too large.' } });
    });

    it('answers 431 with a JSON body to request headers over 16 KiB on a real socket, and keeps serving', async () => {
      await app.listen(0, '127.0.0.1');
      const { port } = app.getHttpServer().address() as AddressInfo;
      // A raw socket: Node's client gives up ("socket hang up") when the server answers mid-upload.
      const exchange = (headers: string) =>
        new Promise<{ status: number; body: string }>((resolve, reject) => {
          const socket = net.connect(port, '127.0.0.1', () =>
            socket.write(`GET /api/health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n${headers}\r\n`),
          );
          let data = '';
          socket.on('data', (chunk) => (data += chunk));
          socket.on('error', reject);
          socket.on('close', () => {
            const [head, body = ''] = data.split('\r\n\r\n');
            resolve({ status: Number(head.split(' ')[1]), body });
          });
        });
      const padded = await exchange(`X-Padding: ${'a'.repeat(17 * 1024)}\r\n`);
      expect(padded).toEqual({ status: 431, body: JSON.stringify({ message: 'Request header fields too large.' }) });
      const cookie = await exchange(`Cookie: pacs_access_token=${'b'.repeat(20 * 1024)}\r\n`);
      expect(cookie.status).toBe(431);
      const garbage = await exchange(`Bad Header Without Colon\r\n`);
      expect(garbage).toEqual({ status: 400, body: JSON.stringify({ message: 'Bad request.' }) });
      const normal = await exchange(`X-Padding: ${'a'.repeat(8 * 1024)}\r\n`);
      expect(normal.status).toBe(200);
    });
  });

  describe('error bodies carry no stack, SQL or driver detail', () => {
    it("errors raised while Fastify reads the body have the API shape, not Fastify's", async () => {
      const cases: Array<[string, string, number, object]> = [
        ['application/json', '{"email":', 400, { message: 'Malformed request body.' }],
        ['application/json', '\u0000\u0001', 400, { message: 'Malformed request body.' }],
        ['application/xml', '<a/>', 415, { message: 'Unsupported media type.' }],
        ['image/png', 'PNG', 415, { message: 'Unsupported media type.' }],
      ];
      for (const [type, raw, status, body] of cases) {
        const res = await client.post('/api/login', { raw, headers: { 'content-type': type } });
        expect({ type, status: res.status, body: res.body }).toEqual({ type, status, body });
        expect(res.raw.toString()).not.toMatch(/FST_|statusCode/);
      }
      // The same bodies without a type, and to a route that does not exist.
      const untyped = await client.post('/api/login', { raw: '{"email":"a@b.c","password":"x"}' });
      expect({ status: untyped.status, body: untyped.body }).toEqual({
        status: 415,
        body: { message: 'Unsupported media type.' },
      });
      const nowhere = await client.post('/api/no-such-route', { raw: '<a/>', headers: { 'content-type': 'application/xml' } });
      expect(nowhere.status).toBe(404);
    });

    it('a failed query is a generic 500', async () => {
      const res = await client.get('/api/__test__/errors/sql');
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ message: 'Server error.' });
      expect(res.raw.toString()).not.toMatch(/SELECT|password|syntax|42601|victim/i);
    });

    it('a programming error is a generic 500 without its stack', async () => {
      const res = await client.get('/api/__test__/errors/type');
      expect(res.status).toBe(500);
      expect(res.body).toEqual({ message: 'Server error.' });
      expect(res.raw.toString()).not.toMatch(/TypeError|undefined|\bat\b|\.ts:\d+/);
    });

    it('an unreachable database is a 503 the client can retry, without the address', async () => {
      const res = await client.post('/api/__test__/errors/database-down');
      expect(res.status).toBe(503);
      expect(res.body).toEqual({ message: 'Service unavailable.' });
      expect(res.raw.toString()).not.toMatch(/ECONNREFUSED|5432|127\.0\.0\.1/);
    });

    it('a NUL character in a query or a body is a 422 naming the field, not a database error', async () => {
      const { token } = await member();
      const list = await client.get('/api/studies', { token, query: { search: 'doe\u0000' } });
      expect(list.status).toBe(422);
      expect(list.body).toEqual({
        message: 'The search field must not contain NUL characters.',
        errors: { search: ['The search field must not contain NUL characters.'] },
      });
      const login = await client.post('/api/login', { body: { email: 'a\u0000@b.c', password: 'x\u0000' } });
      expect(login.status).toBe(422);
      expect(Object.keys(login.body.errors).sort()).toEqual(['email', 'password']);
    });

    it('an unauthenticated request with a NUL is still a 401', async () => {
      const res = await client.get('/api/studies', { query: { search: '\u0000' } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });

    it('a body nested deeper than 64 levels is a 400 before validation can overflow the stack', async () => {
      const { token } = await member();
      const deep = `{"study_id":${'['.repeat(5000)}${']'.repeat(5000)}}`;
      const res = await client.post('/api/viewer/token', { token, raw: deep, headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ message: 'Request body is nested more than 64 levels deep.' });
      const object = `{"email":${'{"a":'.repeat(1000)}1${'}'.repeat(1000)},"password":"x"}`;
      const login = await client.post('/api/login', { raw: object, headers: { 'content-type': 'application/json' } });
      expect(login.status).toBe(400);
      const shallow = `{"email":${'['.repeat(10)}${']'.repeat(10)},"password":"x"}`;
      expect((await client.post('/api/login', { raw: shallow, headers: { 'content-type': 'application/json' } })).status).toBe(
        422,
      );
    });

    it('a path that cannot be decoded or holds an over-long id is a 404 in the API shape', async () => {
      const { token } = await member();
      for (const url of [
        '/api/studies/%zz',
        '/api/studies/%E0%A4%A',
        `/api/studies/${'a'.repeat(600)}`,
        `/api/patients/${'9'.repeat(501)}/studies`,
      ]) {
        const res = await client.get(url, { token });
        expect({ url: url.slice(0, 40), status: res.status, body: res.body }).toEqual({
          url: url.slice(0, 40),
          status: 404,
          body: { message: 'Not found.' },
        });
      }
    });

    it('a validation error names the field, not the validator internals', async () => {
      const res = await client.post('/api/login', { body: { email: { $gt: '' }, password: ['x'] } });
      expect(res.status).toBe(422);
      expect(Object.keys(res.body).sort()).toEqual(['errors', 'message']);
      expect(res.raw.toString()).not.toMatch(/constraint|class-validator|stack/i);
    });
  });
});
