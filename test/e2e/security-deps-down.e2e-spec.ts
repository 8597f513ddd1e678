import { TokenService } from '../../src/auth/token.service';
import { PreparedQueries } from '../../src/database/list';
import { createTestApp, TestApp } from '../support/app';
import { createTenant, createUnit, createUser } from '../support/factories';

/**
 * A valid session checked while PostgreSQL or Redis is unreachable is a 503 the client retries,
 * never a 401 (which a client reads as "signed out").
 */
describe('authenticated requests while a dependency is down', () => {
  let t: TestApp;

  afterEach(async () => {
    await t?.close().catch(() => undefined);
  });

  async function validToken(app: TestApp) {
    const tenant = await createTenant(app.db);
    const unit = await createUnit(app.db, tenant.id);
    const user = await createUser(app.db, { tenant_id: tenant.id, unit_id: unit.id });
    return app.app.get(TokenService).issue({ ...user }).access_token;
  }

  it('answers 503 with a JSON body when Redis (the blacklist) does not answer', async () => {
    t = await createTestApp({ REDIS_URL: 'redis://127.0.0.1:1' });
    const token = await validToken(t);
    const res = await t.http.get('/api/me', { token });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ message: 'Service unavailable.' });
    // A forged token is still a 401: the signature is checked before any dependency.
    const forged = await t.http.get('/api/me', { token: `${token.slice(0, -4)}AAAA` });
    expect(forged.status).toBe(401);
  }, 30_000);

  it('answers 503 with a JSON body when PostgreSQL (the account state) does not answer', async () => {
    t = await createTestApp();
    const token = await validToken(t);
    await t.db.destroy();
    const res = await t.http.get('/api/studies', { token });
    expect(res.status).toBe(503);
    expect(res.body).toEqual({ message: 'Service unavailable.' });
  }, 30_000);

  it('answers 503 when a statement runs past DATABASE_STATEMENT_TIMEOUT, and answers again once the lock is gone', async () => {
    t = await createTestApp({ DATABASE_STATEMENT_TIMEOUT: '300' });
    const token = await validToken(t);
    // Another session holds the studies counters: the list's statement waits on the lock until
    // PostgreSQL cancels it at 300 ms.
    const holder = t.db.createQueryRunner();
    await holder.connect();
    try {
      await holder.startTransaction();
      await holder.query('LOCK TABLE study_counts IN ACCESS EXCLUSIVE MODE');
      const res = await t.http.get('/api/studies', { token });
      expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: { message: 'Service unavailable.' } });
      const [settings] = await t.db.query(
        `SELECT current_setting('statement_timeout') AS timeout, current_setting('work_mem') AS "workMem",
                current_setting('max_parallel_workers_per_gather') AS workers, current_setting('jit') AS jit`,
      );
      expect(settings).toEqual({ timeout: '300ms', workMem: '32MB', workers: '0', jit: 'off' });
      // A search's statements run on TypeORM's pool: they wait and are cancelled alike.
      const search = await t.http.get('/api/studies?search=silva', { token });
      expect({ status: search.status, body: search.body }).toEqual({ status: 503, body: { message: 'Service unavailable.' } });
      // Prepared list statements are planned for each execution's values.
      const prepared = t.app.get(PreparedQueries);
      expect(await prepared.query(`SELECT current_setting('plan_cache_mode') AS plans`, [])).toEqual([
        { plans: 'force_custom_plan' },
      ]);
    } finally {
      await holder.rollbackTransaction().catch(() => undefined);
      await holder.release();
    }
    expect((await t.http.get('/api/studies', { token })).status).toBe(200);
  }, 30_000);
});
