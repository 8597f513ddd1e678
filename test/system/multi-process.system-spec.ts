import { DataSource } from 'typeorm';
import { loadConfig } from '../../src/config/environment';
import { openDataSource } from '../../src/database/data-source-options';
import { createTenant, createUnit, createUser, TEST_PASSWORD } from '../support/factories';
import { getFreePort } from '../../scripts/stack/orthanc';
import { ServiceProcess, startBuiltProcess } from '../../scripts/stack/processes';

/**
 * Two API processes on one PostgreSQL and one Redis: the blacklist and the rate limits are shared,
 * and a worker process starts, connects to its queues and stops cleanly on SIGTERM.
 */
describe('several API processes', () => {
  let db: DataSource;
  let a: ServiceProcess;
  let b: ServiceProcess;
  // As behind nginx: the loopback proxy is trusted, so each test names its own client address.
  const env = { QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}_mp`, TRUST_PROXY: '127.0.0.1' };
  let clientIp = '198.51.100.1';

  beforeAll(async () => {
    db = await openDataSource(loadConfig().DATABASE_URL, { migrate: false });
    [a, b] = await Promise.all([
      getFreePort().then((port) => startBuiltProcess('main', env, { port })),
      getFreePort().then((port) => startBuiltProcess('main', env, { port })),
    ]);
  }, 60_000);

  afterAll(async () => {
    await Promise.all([a?.stop(), b?.stop()]);
    await db?.destroy();
  });

  const post = (base: string, path: string, body?: unknown, token?: string) =>
    fetch(`${base}${path}`, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        'x-forwarded-for': clientIp,
        ...(token ? { authorization: `Bearer ${token}` } : {}),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });

  it('refuses on one process a token logged out on the other', async () => {
    const tenant = await createTenant(db);
    const unit = await createUnit(db, tenant.id);
    const user = await createUser(db, { tenant_id: tenant.id, unit_id: unit.id });
    const session = await (await post(a.url, '/api/login', { email: user.email, password: TEST_PASSWORD })).json();
    const me = (base: string) => fetch(`${base}/api/me`, { headers: { authorization: `Bearer ${session.access_token}` } });
    expect((await me(b.url)).status).toBe(200);
    expect((await post(a.url, '/api/logout', undefined, session.access_token)).status).toBe(200);
    const refused = await me(b.url);
    expect(refused.status).toBe(401);
    expect(await refused.json()).toEqual({ message: 'Unauthenticated.' });
  });

  // 13 sign-ins with an unknown email, each hashing a password at the service's cost on purpose
  // (about 0.25 s idle): the default 5 s ran out on a loaded machine.
  it('counts login attempts of one client IP across both processes', async () => {
    clientIp = '198.51.100.2';
    const attempt = (base: string) => post(base, '/api/login', { email: 'nobody@example.test', password: 'wrong-password' });
    const statuses: number[] = [];
    for (let i = 0; i < 10; i++) statuses.push((await attempt(i % 2 ? a.url : b.url)).status);
    expect(statuses).toEqual(Array(10).fill(401));
    const limited = await attempt(a.url);
    expect(limited.status).toBe(429);
    expect(await limited.json()).toEqual({ message: 'Too Many Attempts.' });
    expect((await attempt(b.url)).status).toBe(429);
    clientIp = '198.51.100.3';
    expect((await attempt(b.url)).status).toBe(401);
  }, 60_000);

  it('runs a worker process that stops cleanly on SIGTERM', async () => {
    const worker = await startBuiltProcess('worker', env);
    await new Promise((resolve) => setTimeout(resolve, 3000));
    expect(worker.process.exitCode).toBeNull();
    expect((await worker.stop('SIGTERM')).signal).not.toBe('SIGKILL');
  }, 30_000);

  it('stops an API process cleanly on SIGTERM', async () => {
    const port = await getFreePort();
    const api = await startBuiltProcess('main', env, { port });
    const ended = await api.stop('SIGTERM');
    expect(ended.signal).not.toBe('SIGKILL');
    expect(api.output()).not.toMatch(/ERROR/);
  }, 30_000);
});
