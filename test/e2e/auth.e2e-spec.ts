import { JwtService } from '@nestjs/jwt';
import { randomUUID } from 'crypto';
import { TokenService } from '../../src/auth/token.service';
import { createTestApp, TestApp } from '../support/app';
import { createTenant, createUnit, createUser, login, TEST_PASSWORD } from '../support/factories';

describe('Session: login, logout, refresh, me', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  async function member() {
    const tenant = await createTenant(t.db);
    const unit = await createUnit(t.db, tenant.id);
    const user = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id, signature: 'data:image/png;base64,AAAA' });
    return { tenant, unit, user };
  }

  /** A token with every claim of a real session of `user`, signed with a secret the service does not hold. */
  function forgedToken(user: { id: string; tenant_id: string | null; unit_id: string | null }): Promise<string> {
    const now = Math.floor(Date.now() / 1000);
    return new JwtService({ secret: 'not-the-service-secret-but-as-long-as-one' }).signAsync(
      {
        sub: user.id,
        jti: randomUUID(),
        typ: 'access',
        tenant_id: user.tenant_id,
        unit_id: user.unit_id,
        is_super_admin: true,
        is_tenant_admin: true,
        orig_iat: now,
      },
      { algorithm: 'HS256', expiresIn: 3600 },
    );
  }

  /** POST `path` with a malformed token, then a forged one in the header and in the cookie: 401 Unauthenticated. each time. */
  async function expectBadTokensRefused(path: string): Promise<void> {
    const { user } = await member();
    const forged = await forgedToken(user);
    for (const options of [{ token: 'not-a-jwt' }, { token: forged }, { cookies: { pacs_access_token: forged } }]) {
      const res = await t.http.post(path, options);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    }
  }

  describe('POST /api/login', () => {
    it('returns the token, its type and lifetime, and only the listed user fields', async () => {
      const { user } = await member();
      const res = await t.http.post('/api/login', { body: { email: user.email.toUpperCase(), password: TEST_PASSWORD } });
      expect(res.status).toBe(200);
      expect(Object.keys(res.body).sort()).toEqual(['access_token', 'expires_in', 'token_type', 'user']);
      expect(res.body.token_type).toBe('bearer');
      expect(res.body.expires_in).toBe(3600);
      expect(res.body.user).toEqual({
        id: user.id,
        email: user.email,
        name: user.name,
        tenant_id: user.tenant_id,
        unit_id: user.unit_id,
        is_super_admin: false,
        is_tenant_admin: false,
      });
    });

    it('sets the httpOnly pacs_access_token cookie with the lifetime of the token', async () => {
      const { user } = await member();
      const res = await t.http.post('/api/login', { body: { email: user.email, password: TEST_PASSWORD } });
      const cookie = res.cookies.find((c) => c.name === 'pacs_access_token');
      expect(cookie).toMatchObject({ value: res.body.access_token, httpOnly: true, path: '/', maxAge: 3600, sameSite: 'Lax' });
    });

    it('puts the contract claims in the JWT', async () => {
      const { user } = await member();
      const token = await login(t.http, user.email);
      const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
      expect(claims).toMatchObject({
        sub: user.id,
        tenant_id: user.tenant_id,
        unit_id: user.unit_id,
        is_super_admin: false,
        is_tenant_admin: false,
      });
      expect(claims.exp - claims.iat).toBe(3600);
      expect(typeof claims.jti).toBe('string');
    });

    it('answers 401 with the contract body for a wrong password and for an unknown email', async () => {
      const { user } = await member();
      for (const body of [
        { email: user.email, password: 'wrong-password' },
        { email: 'nobody@example.test', password: TEST_PASSWORD },
      ]) {
        const res = await t.http.post('/api/login', { body });
        expect(res.status).toBe(401);
        expect(res.body).toEqual({ error: 'Credenciais inválidas.' });
      }
    });

    it('answers 403 when the user is inactive', async () => {
      const { tenant, unit } = await member();
      const user = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id, is_active: false });
      const res = await t.http.post('/api/login', { body: { email: user.email, password: TEST_PASSWORD } });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'Conta desativada.' });
      expect(res.cookies.find((c) => c.name === 'pacs_access_token')).toBeUndefined();
    });

    it('answers 403 when the tenant is inactive', async () => {
      const tenant = await createTenant(t.db, { is_active: false });
      const unit = await createUnit(t.db, tenant.id);
      const user = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id });
      const res = await t.http.post('/api/login', { body: { email: user.email, password: TEST_PASSWORD } });
      expect(res.status).toBe(403);
      expect(res.body).toEqual({ error: 'Conta desativada.' });
    });

    it('answers 422 with errors keyed by field for missing or mistyped fields', async () => {
      const res = await t.http.post('/api/login', { body: { email: 42 } });
      expect(res.status).toBe(422);
      expect(typeof res.body.message).toBe('string');
      expect(Object.keys(res.body.errors).sort()).toEqual(['email', 'password']);
      expect(res.body.errors.password).toEqual(['The password field is required.']);
    });

    it('answers 400 with a message for malformed JSON', async () => {
      const res = await t.http.post('/api/login', { raw: '{"email":', headers: { 'content-type': 'application/json' } });
      expect(res.status).toBe(400);
      expect(typeof res.body.message).toBe('string');
    });

    it('answers 413 past the 10 MiB body limit', async () => {
      const res = await t.http.post('/api/login', {
        raw: JSON.stringify({ email: 'a', password: 'x'.repeat(10 * 1024 * 1024) }),
        headers: { 'content-type': 'application/json' },
      });
      expect(res.status).toBe(413);
      expect(typeof res.body.message).toBe('string');
    });

    it('answers 429 with Retry-After on the 11th attempt in a minute from one IP', async () => {
      const ip = '192.0.2.77';
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) {
        statuses.push(
          (await t.http.post('/api/login', { ip, body: { email: 'x@example.test', password: 'wrong-one' } })).status,
        );
      }
      expect(statuses).toEqual(Array(10).fill(401));
      const res = await t.http.post('/api/login', { ip, body: { email: 'x@example.test', password: 'wrong-one' } });
      expect(res.status).toBe(429);
      expect(res.body).toEqual({ message: 'Too Many Attempts.' });
      expect(Number(res.headers['retry-after'])).toBeGreaterThan(0);
      // Another client is not affected.
      expect(
        (await t.http.post('/api/login', { ip: '192.0.2.78', body: { email: 'x@example.test', password: 'wrong-one' } }))
          .status,
      ).toBe(401);
      // Each unknown email costs a full cost-12 verification (constant-cost login).
    }, 60_000);

    it('counts by the connection address while TRUST_PROXY is off: a forged X-Forwarded-For does not dodge the limit', async () => {
      const attempt = (i: number) =>
        t.http.post('/api/login', {
          ip: '192.0.2.79',
          headers: { 'x-forwarded-for': `198.51.100.${i + 1}` },
          body: { email: 'x@example.test', password: 'wrong-one' },
        });
      const statuses: number[] = [];
      for (let i = 0; i < 10; i++) statuses.push((await attempt(i)).status);
      expect(statuses).toEqual(Array(10).fill(401));
      const res = await attempt(10);
      expect({ status: res.status, body: res.body }).toEqual({ status: 429, body: { message: 'Too Many Attempts.' } });
      expect(res.headers['retry-after']).toMatch(/^[1-9]\d*$/);
    }, 60_000);
  });

  describe('GET /api/me', () => {
    it('returns the user with tenant and unit', async () => {
      const { tenant, unit, user } = await member();
      const res = await t.http.get('/api/me', { token: await login(t.http, user.email) });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({
        id: user.id,
        email: user.email,
        name: user.name,
        tenant_id: tenant.id,
        unit_id: unit.id,
        is_super_admin: false,
        is_tenant_admin: false,
        tenant: { id: tenant.id, name: tenant.name },
        unit: { id: unit.id, name: unit.name },
      });
      expect(JSON.stringify(res.body)).not.toMatch(/password|signature|remember_token/);
    });

    it('returns null tenant and unit for a super admin without a tenant', async () => {
      const admin = await createUser(t.db, { is_super_admin: true });
      const res = await t.http.get('/api/me', { token: await login(t.http, admin.email) });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ is_super_admin: true, tenant_id: null, unit_id: null, tenant: null, unit: null });
    });

    it('accepts the cookie alone', async () => {
      const { user } = await member();
      const token = await login(t.http, user.email);
      const res = await t.http.get('/api/me', { cookies: { pacs_access_token: token } });
      expect(res.status).toBe(200);
      expect(res.body.id).toBe(user.id);
    });

    it('prefers the bearer header over the cookie', async () => {
      const a = await member();
      const b = await member();
      const res = await t.http.get('/api/me', {
        token: await login(t.http, a.user.email),
        cookies: { pacs_access_token: await login(t.http, b.user.email) },
      });
      expect(res.body.id).toBe(a.user.id);
    });

    it.each([
      ['no token', {}],
      ['a malformed token', { token: 'not-a-jwt' }],
      [
        'a token signed with another secret',
        { token: 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4IiwidHlwIjoiYWNjZXNzIn0.c2lnbmF0dXJl' },
      ],
      ['an alg:none token', { token: 'eyJhbGciOiJub25lIn0.eyJzdWIiOiJ4IiwidHlwIjoiYWNjZXNzIiwianRpIjoiMSJ9.' }],
    ])('answers 401 Unauthenticated. with %s', async (_, options) => {
      const res = await t.http.get('/api/me', options);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });

    it('answers 401 Unauthenticated. to a token with a real session’s claims signed with another secret', async () => {
      const { user } = await member();
      const res = await t.http.get('/api/me', { token: await forgedToken(user) });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });

    it('refuses a token at once when the user or the tenant is deactivated', async () => {
      const { tenant, user } = await member();
      const token = await login(t.http, user.email);
      expect((await t.http.get('/api/me', { token })).status).toBe(200);
      await t.db.query('UPDATE tenants SET is_active = false WHERE id = $1', [tenant.id]);
      t.app.get((await import('../../src/auth/account-status.service')).AccountStatusService).forgetAll();
      expect((await t.http.get('/api/me', { token })).body).toEqual({ message: 'Unauthenticated.' });
      await t.db.query('UPDATE tenants SET is_active = true WHERE id = $1', [tenant.id]);
      await t.db.query('UPDATE users SET is_active = false WHERE id = $1', [user.id]);
      t.app.get((await import('../../src/auth/account-status.service')).AccountStatusService).forgetAll();
      expect((await t.http.get('/api/me', { token })).status).toBe(401);
    });
  });

  describe('POST /api/logout', () => {
    it('blacklists the token, removes the cookie, and leaves other sessions working', async () => {
      const { user } = await member();
      const first = await login(t.http, user.email);
      const second = await login(t.http, user.email);
      const res = await t.http.post('/api/logout', { token: first });
      expect(res.status).toBe(200);
      expect(typeof res.body.message).toBe('string');
      const cleared = res.cookies.find((c) => c.name === 'pacs_access_token');
      expect(cleared?.value).toBe('');
      expect((await t.http.get('/api/me', { token: first })).status).toBe(401);
      expect((await t.http.post('/api/logout', { token: first })).body).toEqual({ message: 'Unauthenticated.' });
      expect((await t.http.get('/api/me', { token: second })).status).toBe(200);
    });

    it('answers 401 without a token', async () => {
      const res = await t.http.post('/api/logout');
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });

    it('answers 401 Unauthenticated. to an invalid token, in the header or the cookie', async () => {
      await expectBadTokensRefused('/api/logout');
    });
  });

  describe('POST /api/refresh', () => {
    it('issues a new token, blacklists the old one and updates the cookie', async () => {
      const { user } = await member();
      const old = await login(t.http, user.email);
      const res = await t.http.post('/api/refresh', { token: old });
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ token_type: 'bearer', expires_in: 3600, user: { id: user.id } });
      expect(res.body.access_token).not.toBe(old);
      expect(res.cookies.find((c) => c.name === 'pacs_access_token')?.value).toBe(res.body.access_token);
      expect((await t.http.get('/api/me', { token: res.body.access_token })).status).toBe(200);
      expect((await t.http.get('/api/me', { token: old })).status).toBe(401);
      const again = await t.http.post('/api/refresh', { token: old });
      expect(again.status).toBe(401);
      expect(again.body).toEqual({ message: 'The token has been blacklisted' });
    });

    it('refreshes for 14 days from the original login, then answers 401 "Token Refresh window has expired"', async () => {
      const { user } = await member();
      const tokens = t.app.get(TokenService);
      const now = Math.floor(Date.now() / 1000);
      const day = 24 * 3600;
      const inside = tokens.issue({ ...user }, now - 14 * day + 120).access_token;
      const res = await t.http.post('/api/refresh', { token: inside });
      expect(res.status).toBe(200);
      expect(JSON.parse(Buffer.from(res.body.access_token.split('.')[1], 'base64url').toString()).orig_iat).toBe(
        now - 14 * day + 120,
      );
      const over = tokens.issue({ ...user }, now - 14 * day - 60).access_token;
      const expired = await t.http.post('/api/refresh', { token: over });
      expect(expired.status).toBe(401);
      expect(expired.body).toEqual({ message: 'Token Refresh window has expired' });
    });

    it('refuses a token blacklisted by logout', async () => {
      const { user } = await member();
      const token = await login(t.http, user.email);
      await t.http.post('/api/logout', { token });
      const res = await t.http.post('/api/refresh', { token });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'The token has been blacklisted' });
    });

    it('accepts the cookie alone', async () => {
      const { user } = await member();
      const token = await login(t.http, user.email);
      const res = await t.http.post('/api/refresh', { cookies: { pacs_access_token: token } });
      expect(res.status).toBe(200);
    });

    it('lets exactly one of two concurrent refreshes of one token win', async () => {
      const { user } = await member();
      const token = await login(t.http, user.email);
      const results = await Promise.all([t.http.post('/api/refresh', { token }), t.http.post('/api/refresh', { token })]);
      expect(results.map((r) => r.status).sort()).toEqual([200, 401]);
    });

    it.each(['tenants', 'users'] as const)('refuses the token of a deactivated account (%s.is_active false)', async (table) => {
      const { tenant, user } = await member();
      const token = await login(t.http, user.email);
      await t.db.query(`UPDATE ${table} SET is_active = false WHERE id = $1`, [table === 'tenants' ? tenant.id : user.id]);
      t.app.get((await import('../../src/auth/account-status.service')).AccountStatusService).forgetAll();
      const res = await t.http.post('/api/refresh', { token });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });

    it('answers 401 Unauthenticated. to a malformed token or one signed with another secret', async () => {
      await expectBadTokensRefused('/api/refresh');
    });

    it('answers 401 Unauthenticated. without a token', async () => {
      const res = await t.http.post('/api/refresh');
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });

    it('limits refresh to 30 per minute per user', async () => {
      const { user } = await member();
      let token = await login(t.http, user.email);
      for (let i = 0; i < 30; i++) {
        const res = await t.http.post('/api/refresh', { token });
        expect(res.status).toBe(200);
        token = res.body.access_token;
      }
      const res = await t.http.post('/api/refresh', { token });
      expect(res.status).toBe(429);
      expect(res.body).toEqual({ message: 'Too Many Attempts.' });
      expect(res.headers['retry-after']).toMatch(/^[1-9]\d*$/);
      expect(Number(res.headers['retry-after'])).toBeLessThanOrEqual(60);
    });
  });

  describe('errors', () => {
    it('answers 404 with a message for an unknown route', async () => {
      const res = await t.http.get('/api/does-not-exist');
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Not found.' });
    });

    // The contract names no answer for a method a route does not take: the route does not exist.
    it.each([
      ['DELETE', '/api/login'],
      ['GET', '/api/logout'],
      ['POST', '/api/health'],
      ['PUT', '/api/studies'],
    ] as const)('answers 404 with a message to %s %s, a method the route does not take', async (method, url) => {
      const res = await t.http.request(method, url, { body: {} });
      expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { message: 'Not found.' } });
    });
  });
});
