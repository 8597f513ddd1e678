import { createTestApp, TestApp } from '../support/app';

describe('GET /api/health when a dependency is down', () => {
  let t: TestApp;

  afterEach(async () => {
    await t?.close().catch(() => undefined);
  });

  it('answers 503 naming Redis when Redis does not answer', async () => {
    // Nothing listens on port 1; the service still starts and reports itself unhealthy.
    t = await createTestApp({ REDIS_URL: 'redis://127.0.0.1:1' });
    const res = await t.http.get('/api/health');
    expect(res.status).toBe(503);
    expect(res.body).toEqual({
      status: 'error',
      info: { database: { status: 'up' } },
      error: { redis: { status: 'down', message: 'not answering' } },
      details: { database: { status: 'up' }, redis: { status: 'down', message: 'not answering' } },
    });
  }, 30_000);

  it('answers 503 naming the database when PostgreSQL does not answer', async () => {
    t = await createTestApp();
    expect((await t.http.get('/api/health')).status).toBe(200);
    await t.db.destroy();
    const res = await t.http.get('/api/health');
    expect(res.status).toBe(503);
    // Named, never described: no driver message (addresses, ports, versions) on a public endpoint.
    expect(res.body.error).toEqual({ database: { status: 'down', message: 'not answering' } });
    expect(res.body.details.database).toEqual({ status: 'down', message: 'not answering' });
  }, 30_000);
});
