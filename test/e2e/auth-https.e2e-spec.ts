import { createTestApp, TestApp } from '../support/app';
import { createTenant, createUnit, createUser, TEST_PASSWORD } from '../support/factories';

// Behind nginx terminating TLS (TRUST_PROXY=1): the session cookie is Secure on HTTPS only.
// Passport keeps one strategy per process, so this configuration gets its own test file.
describe('Session cookie behind an HTTPS proxy (TRUST_PROXY=1)', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ TRUST_PROXY: '1', COOKIE_SECURE: 'false' });
  });
  afterAll(() => t.close());

  async function signIn(headers: Record<string, string>) {
    const tenant = await createTenant(t.db);
    const unit = await createUnit(t.db, tenant.id);
    const user = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id });
    const res = await t.http.post('/api/login', { body: { email: user.email, password: TEST_PASSWORD }, headers });
    expect(res.status).toBe(200);
    return res;
  }

  it('sets pacs_access_token Secure (HttpOnly, SameSite=Lax, Path=/) when the client came over HTTPS', async () => {
    const res = await signIn({ 'x-forwarded-proto': 'https' });
    const cookie = res.cookies.find((c) => c.name === 'pacs_access_token');
    expect(cookie).toMatchObject({ value: res.body.access_token, secure: true, httpOnly: true, sameSite: 'Lax', path: '/' });
    const refreshed = await t.http.post('/api/refresh', {
      token: res.body.access_token,
      headers: { 'x-forwarded-proto': 'https' },
    });
    expect(refreshed.cookies.find((c) => c.name === 'pacs_access_token')).toMatchObject({
      value: refreshed.body.access_token,
      secure: true,
    });
  });

  it('leaves Secure off when the client came over plain HTTP', async () => {
    const res = await signIn({ 'x-forwarded-proto': 'http' });
    const cookie = res.cookies.find((c) => c.name === 'pacs_access_token');
    expect(cookie?.value).toBe(res.body.access_token);
    expect(cookie?.secure).toBeUndefined();
  });
});
