import { createTestApp, TestApp } from '../support/app';
import { ConfigError, loadConfig } from '../../src/config/environment';
import { createTenant, createUnit, createUser, login } from '../support/factories';

describe('CORS policy from CORS_ORIGINS', () => {
  let t: TestApp;
  const allowed = 'https://app.clinic.example';
  const alsoAllowed = 'http://localhost:5173';

  beforeAll(async () => {
    t = await createTestApp({ CORS_ORIGINS: `${allowed}/, ${alsoAllowed}` });
  });
  afterAll(() => t.close());

  it('answers a preflight from a listed origin with credentials allowed and the methods and headers used', async () => {
    const res = await t.http.request('OPTIONS', '/api/studies', {
      headers: {
        origin: allowed,
        'access-control-request-method': 'GET',
        'access-control-request-headers': 'authorization',
      },
    });
    expect(res.status).toBe(204);
    expect(res.headers['access-control-allow-origin']).toBe(allowed);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(String(res.headers['access-control-allow-methods']).replace(/\s/g, '')).toBe('GET,HEAD,POST,PATCH,DELETE');
    expect(String(res.headers['access-control-allow-headers']).toLowerCase()).toContain('authorization');
    expect(res.headers['access-control-max-age']).toBe('600');
    expect(String(res.headers.vary)).toContain('Origin');
  });

  it('lets a listed origin read an authenticated answer', async () => {
    const tenant = await createTenant(t.db);
    const unit = await createUnit(t.db, tenant.id);
    const user = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id });
    const token = await login(t.http, user.email);
    const res = await t.http.get('/api/me', { token, headers: { origin: alsoAllowed } });
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(alsoAllowed);
    expect(res.headers['access-control-allow-credentials']).toBe('true');
    expect(String(res.headers['access-control-expose-headers'])).toContain('X-Request-Id');
  });

  it('gives an unlisted origin nothing to read, even one that only starts like a listed one', async () => {
    for (const origin of ['https://evil.example', `${allowed}.evil.example`, 'null', 'http://app.clinic.example']) {
      const res = await t.http.get('/api/health', { headers: { origin } });
      expect({ origin, acao: res.headers['access-control-allow-origin'] }).toEqual({ origin, acao: undefined });
      const preflight = await t.http.request('OPTIONS', '/api/me', {
        headers: { origin, 'access-control-request-method': 'GET' },
      });
      // Without a matching Allow-Origin the browser withholds the answer, credentials or not.
      expect(preflight.headers['access-control-allow-origin']).toBeUndefined();
    }
  });

  it('keeps the security headers on CORS answers', async () => {
    const res = await t.http.get('/api/health', { headers: { origin: allowed } });
    expect(res.headers['x-content-type-options']).toBe('nosniff');
    expect(String(res.headers['content-security-policy'])).toContain("default-src 'none'");
  });

  it('refuses at start-up a wildcard, a path or a non-http origin', () => {
    const base = { ...process.env };
    for (const value of ['*', 'https://app.example/path', 'ftp://files.example', 'app.example', 'https://*.example', 'null']) {
      expect(() => loadConfig({ ...base, CORS_ORIGINS: value })).toThrow(ConfigError);
      expect(() => loadConfig({ ...base, CORS_ORIGINS: value })).toThrow(/CORS_ORIGINS/);
    }
    for (const value of ['', 'https://a.example', 'https://a.example:8443, http://[::1]:3000', 'http://localhost:5173']) {
      expect(loadConfig({ ...base, CORS_ORIGINS: value }).CORS_ORIGINS).toBe(value);
    }
  });
});
