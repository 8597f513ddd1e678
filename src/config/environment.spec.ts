import { ConfigError, loadConfig } from './environment';

describe('loadConfig', () => {
  it('has defaults that work on a machine with local PostgreSQL and Redis', () => {
    const config = loadConfig({});
    expect(config).toMatchObject({
      PORT: 3000,
      DATABASE_URL: 'postgres://postgres@127.0.0.1:5432/pacs',
      REDIS_URL: 'redis://127.0.0.1:6379',
      IMGSRV_URL: 'http://127.0.0.1:8042',
      JWT_TTL: 3600,
      JWT_REFRESH_TTL: 20160,
      VIEWER_TOKEN_TTL: 600,
      MIGRATIONS_RUN: true,
      trustProxy: false,
    });
    expect(config.JWT_SECRET.length).toBeGreaterThanOrEqual(32);
  });

  it('names every bad variable in one error', () => {
    let error: unknown;
    try {
      loadConfig({ PORT: 'eighty', REDIS_URL: 'localhost', JWT_TTL: '-1' });
    } catch (e) {
      error = e;
    }
    expect(error).toBeInstanceOf(ConfigError);
    const message = (error as Error).message;
    expect(message).toMatch(/PORT="eighty"/);
    expect(message).toMatch(/REDIS_URL="localhost"/);
    expect(message).toMatch(/JWT_TTL="-1"/);
  });

  it('requires JWT_SECRET and WEBHOOK_SECRET in production', () => {
    expect(() => loadConfig({ NODE_ENV: 'production' })).toThrow(/JWT_SECRET is required[\s\S]*WEBHOOK_SECRET is required/);
    expect(() =>
      loadConfig({ NODE_ENV: 'production', JWT_SECRET: 'x'.repeat(32), WEBHOOK_SECRET: 'y'.repeat(16) }),
    ).not.toThrow();
  });

  it.each([
    ['off', false],
    ['true', true],
    ['1', 1],
    ['10.0.0.1, 10.0.0.2', ['10.0.0.1', '10.0.0.2']],
  ])('reads TRUST_PROXY=%s', (value, expected) => {
    expect(loadConfig({ TRUST_PROXY: value }).trustProxy).toEqual(expected);
  });

  it('reads MIGRATIONS_RUN=false as false', () => {
    expect(loadConfig({ MIGRATIONS_RUN: 'false' }).MIGRATIONS_RUN).toBe(false);
  });
});
