import { request as httpRequest } from 'http';
import { AddressInfo } from 'net';
import { createTestApp, TestApp } from '../support/app';
import { createClinic, createSuperAdminUser, login } from '../support/factories';

const SURROGATE_EMAIL = 'The email field must be well-formed Unicode text (it holds a lone surrogate).';
const NOT_OBJECT = 'The request body must be a JSON object.';
const CROSS_SITE = {
  error: 'Forbidden',
  message: 'Cross-site request refused: the Origin is neither this API nor one of CORS_ORIGINS.',
};

/** A request on a real socket: the body written whole (or in chunks), then the answer read. */
function send(
  port: number,
  path: string,
  body: Buffer,
  options: { chunked?: boolean; headers?: Record<string, string> } = {},
): Promise<{ status: number; body: unknown }> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: 'POST',
        headers: {
          'content-type': 'application/json',
          ...(options.chunked ? {} : { 'content-length': String(body.length) }),
          ...options.headers,
        },
      },
      (response) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk) => (text += chunk));
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: JSON.parse(text) }));
      },
    );
    request.on('error', reject);
    if (options.chunked) {
      for (let at = 0; at < body.length; at += 256 * 1024) request.write(body.subarray(at, at + 256 * 1024));
      request.end();
    } else {
      request.end(body);
    }
  });
}

describe('Hostile input answers its documented 4xx', () => {
  let t: TestApp;
  let root: string;
  let clinic: Awaited<ReturnType<typeof createClinic>>;

  beforeAll(async () => {
    t = await createTestApp({ CORS_ORIGINS: 'https://app.clinic.example' });
    root = (await createSuperAdminUser(t.db, t.http)).token;
    clinic = await createClinic(t.db, t.http);
  }, 60_000);
  afterAll(() => t.close());

  describe('text PostgreSQL cannot store', () => {
    it("refuses a lone surrogate in a new user's email (422), in POST and PATCH /api/admin/users", async () => {
      const created = await t.http.post('/api/admin/users', {
        token: root,
        raw: `{"email":"a\\ud800@example.test","name":"X","password":"a-long-password","tenant_id":"${clinic.tenant.id}","unit_id":"${clinic.unit1.id}"}`,
        headers: { 'content-type': 'application/json' },
      });
      expect({ status: created.status, body: created.body }).toEqual({
        status: 422,
        body: { message: SURROGATE_EMAIL, errors: { email: [SURROGATE_EMAIL] } },
      });
      const patched = await t.http.patch(`/api/admin/users/${clinic.user1.id}`, { token: root, body: { email: '\ud800' } });
      expect({ status: patched.status, body: patched.body }).toEqual({
        status: 422,
        body: { message: SURROGATE_EMAIL, errors: { email: [SURROGATE_EMAIL] } },
      });
    });

    it('refuses it in any string field of any body or query, by its name', async () => {
      const name = 'The name field must be well-formed Unicode text (it holds a lone surrogate).';
      const tenant = await t.http.post('/api/admin/tenants', { token: root, body: { name: 'Clinic \udc00' } });
      expect({ status: tenant.status, body: tenant.body }).toEqual({
        status: 422,
        body: { message: name, errors: { name: [name] } },
      });
      const [template] = await t.db.query(
        `INSERT INTO report_templates (tenant_id, name, is_active) VALUES ($1, 'T', false) RETURNING id`,
        [clinic.tenant.id],
      );
      const renamed = await t.http.patch(`/api/tenant/templates/${template.id}`, {
        token: clinic.adminToken,
        body: { name: '\ud800\ud800' },
      });
      expect({ status: renamed.status, body: renamed.body }).toEqual({
        status: 422,
        body: { message: name, errors: { name: [name] } },
      });
      // (A query string cannot carry one: percent-encoded UTF-8 has no lone surrogates.)
      // Well-formed text outside the BMP is fine.
      const fine = await t.http.post('/api/admin/tenants', { token: root, body: { name: `Clínica \u{1F3E5} ${Date.now()}` } });
      expect(fine.status).toBe(201);
    });
  });

  describe('a body that is not an object', () => {
    it.each(['null', '[]', '1', '"text"'])(
      'PATCH /api/admin/users/{id} and /api/tenant/templates/{id} refuse %s (422)',
      async (raw) => {
        const [template] = await t.db.query(
          `INSERT INTO report_templates (tenant_id, name, is_active) VALUES ($1, 'T', false) RETURNING id`,
          [clinic.tenant.id],
        );
        const headers = { 'content-type': 'application/json' };
        for (const [url, token] of [
          [`/api/admin/users/${clinic.user1.id}`, root],
          [`/api/tenant/templates/${template.id}`, clinic.adminToken],
        ]) {
          const res = await t.http.patch(url, { token, raw, headers });
          expect({ url, status: res.status, body: res.body }).toEqual({
            url,
            status: 422,
            body: { message: NOT_OBJECT, errors: { body: [NOT_OBJECT] } },
          });
        }
        const created = await t.http.post('/api/admin/tenants', { token: root, raw, headers });
        expect({ status: created.status, body: created.body }).toEqual({
          status: 422,
          body: { message: NOT_OBJECT, errors: { body: [NOT_OBJECT] } },
        });
      },
    );
  });

  describe('an oversized body on a real socket', () => {
    let port: number;
    const twelveMiB = Buffer.alloc(12 * 1024 * 1024, 0x20);

    beforeAll(async () => {
      await t.app.listen(0, '127.0.0.1');
      port = (t.app.getHttpServer().address() as AddressInfo).port;
    });

    it.each([
      ['with Content-Length', false],
      ['chunked', true],
    ])(
      'answers a 413 the client reads, %s, on /api/admin/tenants and the webhook',
      async (_label, chunked) => {
        for (const path of ['/api/admin/tenants', '/api/imgsrv/webhook']) {
          const answer = await send(port, path, twelveMiB, { chunked, headers: { authorization: `Bearer ${root}` } });
          expect({ path, ...answer }).toEqual({ path, status: 413, body: { message: 'Payload too large.' } });
        }
        // The webhook reads a body of any type: under the same limit.
        const untyped = await send(port, '/api/imgsrv/webhook', twelveMiB, {
          chunked,
          headers: { 'content-type': 'application/octet-stream', 'x-webhook-secret': t.config.WEBHOOK_SECRET },
        });
        expect(untyped).toEqual({ status: 413, body: { message: 'Payload too large.' } });
        // And keeps serving.
        const health = await fetch(`http://127.0.0.1:${port}/api/health`);
        expect(health.status).toBe(200);
      },
      60_000,
    );

    it('still takes a body just under the limit', async () => {
      const answer = await send(port, '/api/imgsrv/webhook', Buffer.from(`{"ID":"x","pad":"${'a'.repeat(9 * 1024 * 1024)}"}`), {
        chunked: true,
        headers: { 'x-webhook-secret': 'wrong' },
      });
      expect(answer).toEqual({ status: 401, body: { error: 'Unauthorized' } });
    }, 60_000);
  });

  describe('form-encoded bodies', () => {
    it('are refused (415) everywhere but the webhook', async () => {
      const headers = { 'content-type': 'application/x-www-form-urlencoded' };
      const signIn = await t.http.post('/api/login', {
        raw: `email=${encodeURIComponent(clinic.user1.email)}&password=x`,
        headers,
      });
      expect({ status: signIn.status, body: signIn.body }).toEqual({
        status: 415,
        body: { message: 'Unsupported media type.' },
      });
      const tenant = await t.http.post('/api/admin/tenants', { token: root, raw: 'name=Clinic', headers });
      expect({ status: tenant.status, body: tenant.body }).toEqual({
        status: 415,
        body: { message: 'Unsupported media type.' },
      });
      const webhook = await t.http.post('/api/imgsrv/webhook', {
        raw: 'ID=abc',
        headers: { ...headers, 'x-webhook-secret': t.config.WEBHOOK_SECRET },
      });
      expect(webhook.status).not.toBe(415);
    });
  });

  describe('cookie-authenticated writes from another origin', () => {
    const cookieWrite = async (headers: Record<string, string>, token?: string) => {
      const session = token ?? (await login(t.http, clinic.user2.email));
      return t.http.post('/api/logout', {
        cookies: { pacs_access_token: session },
        headers: { host: 'archive.clinic.example', ...headers },
      });
    };

    it.each([
      ['a foreign Origin', { origin: 'https://evil.example' }],
      ['a foreign Referer and no Origin', { referer: 'https://evil.example/page' }],
      ['Origin null (a sandboxed or privacy-stripped page)', { origin: 'null' }],
      [
        'an Origin on another port of the same host',
        { host: 'archive.clinic.example:8443', origin: 'http://archive.clinic.example:8080' },
      ],
    ])('are refused with 403 for %s', async (_label, headers) => {
      const res = await cookieWrite(headers);
      expect({ status: res.status, body: res.body }).toEqual({ status: 403, body: CROSS_SITE });
    });

    it.each([
      ["the API's own origin", { origin: 'http://archive.clinic.example' }],
      ['a Referer of the own origin', { referer: 'http://archive.clinic.example/login' }],
      ['an origin of CORS_ORIGINS', { origin: 'https://app.clinic.example' }],
      ['no Origin and no Referer (not a browser page)', {}],
    ])('are let through from %s', async (_label, headers) => {
      const res = await cookieWrite(headers);
      expect({ status: res.status, body: res.body }).toEqual({ status: 200, body: { message: 'Successfully logged out' } });
    });

    it('does not check bearer-authenticated writes nor cookie reads', async () => {
      const token = await login(t.http, clinic.user2.email);
      const bearer = await t.http.post('/api/logout', {
        token,
        cookies: { pacs_access_token: token },
        headers: { origin: 'https://evil.example' },
      });
      expect(bearer.status).toBe(200);
      const read = await t.http.get('/api/me', {
        cookies: { pacs_access_token: await login(t.http, clinic.user2.email) },
        headers: { origin: 'https://evil.example' },
      });
      expect(read.status).toBe(200);
    });

    it('behind a trusted proxy, takes the own origin from X-Forwarded-Host; an untrusted one cannot claim it', async () => {
      const proxied = await createTestApp({ TRUST_PROXY: '127.0.0.1' });
      try {
        const token = await login(proxied.http, clinic.user2.email);
        const sent = (ip: string) =>
          proxied.http.post('/api/logout', {
            ip,
            cookies: { pacs_access_token: token },
            headers: {
              host: '127.0.0.1:3000',
              'x-forwarded-host': 'pacs.clinic.example',
              origin: 'https://pacs.clinic.example',
            },
          });
        const forged = await sent('203.0.113.9');
        expect({ status: forged.status, body: forged.body }).toEqual({ status: 403, body: CROSS_SITE });
        const viaProxy = await sent('127.0.0.1');
        expect({ status: viaProxy.status, body: viaProxy.body }).toEqual({
          status: 200,
          body: { message: 'Successfully logged out' },
        });
      } finally {
        await proxied.close();
      }
    });
  });

  describe('X-Request-Id', () => {
    it('keeps a short id of safe characters and replaces any other', async () => {
      const kept = await t.http.get('/api/health', { headers: { 'x-request-id': 'trace-123.abc:9_Z' } });
      expect(kept.headers['x-request-id']).toBe('trace-123.abc:9_Z');
      expect((await t.http.get('/api/health', { headers: { 'x-request-id': 'a'.repeat(64) } })).headers['x-request-id']).toBe(
        'a'.repeat(64),
      );
      for (const bad of ['a'.repeat(65), 'id with spaces', 'x"><script>', 'a/b', 'é']) {
        const res = await t.http.get('/api/health', { headers: { 'x-request-id': bad } });
        expect({ bad, id: res.headers['x-request-id'] }).toEqual({ bad, id: expect.stringMatching(/^[0-9a-f-]{36}$/) });
      }
    });
  });
});
