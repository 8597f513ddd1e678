import { TokenService } from '../../src/auth/token.service';
import { createTestApp, TestApp } from '../support/app';
import { createTenant, createUnit, createUser, login } from '../support/factories';

// Passport keeps one strategy per process, so each configuration gets its own test file.
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('Session expiry (JWT_TTL=1 s, JWT_REFRESH_TTL=1 min)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ JWT_TTL: '1', JWT_REFRESH_TTL: '1' });
  });
  afterAll(() => t.close());

  async function member() {
    const tenant = await createTenant(t.db);
    const unit = await createUnit(t.db, tenant.id);
    return createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id });
  }

  it('refuses an expired token with 401 Unauthenticated., at /api/me and at logout', async () => {
    const user = await member();
    const token = await login(t.http, user.email);
    expect((await t.http.get('/api/me', { token })).status).toBe(200);
    await sleep(2100);
    for (const res of [await t.http.get('/api/me', { token }), await t.http.post('/api/logout', { token })]) {
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    }
  });

  it('refreshes an expired token inside the window and keeps the original login time', async () => {
    const user = await member();
    const token = await login(t.http, user.email);
    await sleep(2100);
    const res = await t.http.post('/api/refresh', { token });
    expect(res.status).toBe(200);
    expect(res.body.expires_in).toBe(1);
    const before = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString());
    const after = JSON.parse(Buffer.from(res.body.access_token.split('.')[1], 'base64url').toString());
    expect(after.orig_iat).toBe(before.orig_iat);
    expect(after.jti).not.toBe(before.jti);
  });

  it('answers 401 "Token Refresh window has expired" once the window since login is over', async () => {
    const user = await member();
    // Issued as if the original login was 2 minutes ago; the window is 1 minute.
    const { access_token } = t.app.get(TokenService).issue({ ...user }, Math.floor(Date.now() / 1000) - 120);
    const res = await t.http.post('/api/refresh', { token: access_token });
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: 'Token Refresh window has expired' });
  });
});
