import { TokenService } from '../../src/auth/token.service';
import { GENERIC_CONNECTIONS, PreparedQueries } from '../../src/database/list';
import { createTestApp, TestApp } from '../support/app';
import { createTenant, createUnit, createUser } from '../support/factories';

/**
 * The generic-plan pool's statements wait for their turn in PreparedQueries (OrderedGate), not in
 * the pool: by when their request began, and no longer than the pool's connection timeout.
 */
describe('turns at the generic-plan pool', () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });

  afterAll(async () => {
    await t?.close();
  });

  /** Every connection of the pool busy for `seconds`, the first one only for `firstSeconds`. */
  const holdEveryConnection = (prepared: PreparedQueries, seconds: number, firstSeconds = seconds) =>
    Promise.all(
      Array.from({ length: GENERIC_CONNECTIONS }, (_, n) =>
        prepared.query(`SELECT pg_sleep($1) AS held_${n}`, [n === 0 ? firstSeconds : seconds], 'generic'),
      ),
    );

  it('gives the next connection to the statement of the request that began first, whenever it asked', async () => {
    const prepared = t.app.get(PreparedQueries);
    // One connection frees at 0.2 s, the others at 2 s: the two waiting statements take it in turn.
    const held = holdEveryConnection(prepared, 2, 0.2);
    const asOf = performance.now();
    const order: string[] = [];
    const run = (request: string, since: number) =>
      prepared.query(`SELECT pg_sleep(0.1), $1::text AS request`, [request], 'generic', since).then(() => order.push(request));
    // Asked first, by a request that began now; then a later statement of a request that began a second ago.
    await Promise.all([run('newer', asOf), run('older', asOf - 1000), held]);
    expect(order).toEqual(['older', 'newer']);
  }, 30_000);

  it('answers 503 to a search that waited past the connection timeout, and answers the next one once a connection is free', async () => {
    const tenant = await createTenant(t.db);
    const unit = await createUnit(t.db, tenant.id);
    const user = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id });
    const token = t.app.get(TokenService).issue({ ...user }).access_token;
    const held = holdEveryConnection(t.app.get(PreparedQueries), 7);
    try {
      const started = Date.now();
      const res = await t.http.get('/api/studies?search=silva', { token });
      expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: { message: 'Service unavailable.' } });
      // The pool's connectionTimeoutMillis (5 s), kept within a fifth of itself.
      expect(Date.now() - started).toBeGreaterThanOrEqual(5000);
    } finally {
      await held;
    }
    const after = await t.http.get('/api/studies?search=silva', { token });
    expect({ status: after.status, body: after.body }).toEqual({ status: 200, body: expect.objectContaining({ total: 0 }) });
  }, 30_000);
});
