import * as http from 'http';
import type { AddressInfo } from 'net';
import { AccountStatusService } from '../../src/auth/account-status.service';
import { StudiesService } from '../../src/studies';
import { FAIR_SHARE_LIMITS, FAIR_SHARE_MAX_WAIT_MS, FairShareCounters } from '../../src/common/fair-share/fair-share';
import { createTestApp, TestApp } from '../support/app';
import { createClinic, createUser, login } from '../support/factories';
import { TestResponse } from '../support/http';

jest.setTimeout(30_000);

/**
 * The fair share: expensive requests (here the study list search, held open by a stub of its
 * service so that they overlap) are limited per user and per clinic; the excess is 429 with
 * Retry-After, and another clinic is not affected.
 */
describe('Fair share of expensive requests', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let releases: Array<() => void>;
  /** Every request a test started: the next test begins once they have all been answered (their slots freed). */
  let inflight: Array<Promise<TestResponse>>;

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
  });
  afterAll(() => t?.close());

  beforeEach(() => {
    releases = [];
    inflight = [];
    const empty = { data: [], current_page: 1, per_page: 15, total: 0, last_page: 1 };
    jest
      .spyOn(t.app.get(StudiesService), 'list')
      .mockImplementation(() => new Promise((resolve) => releases.push(() => resolve(empty as never))));
  });
  afterEach(async () => {
    // A request may reach the held search after this: release until every one has its answer.
    let settled = false;
    void Promise.allSettled(inflight).then(() => (settled = true));
    while (!settled) {
      releases.splice(0).forEach((release) => release());
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    jest.restoreAllMocks();
  });

  const search = (token: string, text = 'silva') => {
    const response = t.http.get('/api/studies', { token, query: { search: text } });
    inflight.push(response);
    return response;
  };
  /** Starts requests and waits until each has reached the (held) search or has been answered. */
  const startHeld = async (count: number, token: string, text?: string): Promise<Array<Promise<TestResponse>>> => {
    const before = releases.length;
    const started = Array.from({ length: count }, () => search(token, text));
    const until = Date.now() + 5_000;
    while (releases.length < before + count && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 2));
    return started;
  };
  const expectTooMany = (res: TestResponse) => {
    expect({ status: res.status, body: res.body, retryAfter: res.headers['retry-after'] }).toEqual({
      status: 429,
      body: { message: 'Too Many Attempts.' },
      retryAfter: '1',
    });
  };

  it(`lets a user run ${FAIR_SHARE_LIMITS.expensive.user} searches at once; the next waits its turn, or gets 429 after ${FAIR_SHARE_MAX_WAIT_MS} ms`, async () => {
    const user = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id, is_tenant_admin: true });
    const token = await login(t.http, user.email);
    const limit = Math.min(FAIR_SHARE_LIMITS.expensive.user, FAIR_SHARE_LIMITS.expensive.tenant);
    const held = await startHeld(limit, token);
    const next = search(token);
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(releases.length).toBe(limit);
    releases.shift()!();
    // The slot that freed goes to the request waiting.
    const until = Date.now() + 5_000;
    while (releases.length < limit && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(releases.length).toBe(limit);
    const started = Date.now();
    expectTooMany(await search(token));
    expect(Date.now() - started).toBeGreaterThanOrEqual(FAIR_SHARE_MAX_WAIT_MS - 50);
    releases.splice(0).forEach((release) => release());
    for (const res of await Promise.all([...held, next])) expect(res.status).toBe(200);
  });

  it(`limits a clinic to ${FAIR_SHARE_LIMITS.expensive.tenant} at once, whoever asks, and leaves another clinic its share`, async () => {
    const users = await Promise.all(
      Array.from({ length: FAIR_SHARE_LIMITS.expensive.tenant + 1 }, () =>
        createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id }),
      ),
    );
    const tokens = await Promise.all(users.map((user) => login(t.http, user.email)));
    for (const token of tokens.slice(0, -1)) void (await startHeld(1, token));
    expectTooMany(await search(tokens[tokens.length - 1]));
    const elsewhere = await startHeld(1, other.token1);
    expect(releases.length).toBe(FAIR_SHARE_LIMITS.expensive.tenant + 1);
    releases.splice(0).forEach((release) => release());
    expect((await elsewhere[0]).status).toBe(200);
  });

  it.each(['%', '*', '%_%', 'a*', '  ?  '])(
    'holds a wildcard-only search (%p) to one at a time per user and clinic',
    async (text) => {
      const user = await createUser(t.db, { tenant_id: other.tenant.id, unit_id: other.unit2.id });
      const token = await login(t.http, user.email);
      void (await startHeld(1, token, text));
      expectTooMany(await search(token, '%%'));
      expectTooMany(await search(other.token2, '*'));
      // A search the index narrows still runs.
      const narrow = await startHeld(1, token, 'silva');
      expect(releases.length).toBe(2);
      releases.forEach((release) => release());
      expect((await narrow[0]).status).toBe(200);
    },
  );

  it('limits the QIDO-RS worklist search the same way', async () => {
    const user = await createUser(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id });
    const token = await login(t.http, user.email);
    void (await startHeld(1, token, '*'));
    const res = await t.http.get('/api/dicom-web/studies', { token, query: { PatientName: '*' } });
    expectTooMany(res);
  });

  // The QIDO-RS search reads an attribute under any spelling it accepts (OHIF sends its MRN box as
  // 00100020): the fair share must read the same keys, or a wildcard-only search escapes its limit.
  it.each(['00100020', '0010,0020', 'patientid', '00080050'])(
    'holds a wildcard-only QIDO-RS search given as %s to the wildcard limit',
    async (key) => {
      const user = await createUser(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id });
      const token = await login(t.http, user.email);
      void (await startHeld(1, token, '*'));
      expectTooMany(await t.http.get('/api/dicom-web/studies', { token, query: { [key]: '*1*' } }));
    },
  );

  it('frees the slot of a client that left before its request reached the limit (its response closed early)', async () => {
    await t.app.listen(0, '127.0.0.1');
    const port = (t.app.getHttpServer().address() as AddressInfo).port;
    const user = await createUser(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id });
    const token = await login(t.http, user.email);
    // Hold the sign-in check so that the client can leave before the request reaches the fair share.
    const accounts = t.app.get(AccountStatusService);
    const get = accounts.get.bind(accounts);
    let openCheck!: () => void;
    const checked = new Promise<void>((resolve) => (openCheck = resolve));
    jest.spyOn(accounts, 'get').mockImplementation(async (id) => {
      await checked;
      return get(id);
    });
    accounts.forgetAll();
    const request = http.get({
      host: '127.0.0.1',
      port,
      path: '/api/studies?search=silva',
      headers: { authorization: `Bearer ${token}` },
    });
    request.on('error', () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 100));
    request.destroy();
    await new Promise((resolve) => setTimeout(resolve, 100));
    openCheck();
    const counters = t.app.get(FairShareCounters);
    const until = Date.now() + 5_000;
    while (releases.length === 0 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 5));
    expect(counters.count(`user:${user.id}:expensive`)).toBe(1);
    releases.splice(0).forEach((release) => release());
    for (let i = 0; i < 100 && counters.count(`user:${user.id}:expensive`) > 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(counters.count(`user:${user.id}:expensive`)).toBe(0);
    expect(counters.count(`tenant:${other.tenant.id}:expensive`)).toBe(0);
  });

  it("leaves a list's plain page (no search) out of the limits", async () => {
    const user = await createUser(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id });
    const token = await login(t.http, user.email);
    const limit = FAIR_SHARE_LIMITS.expensive.user;
    const before = releases.length;
    const plain = Array.from({ length: limit + 2 }, () => {
      const response = t.http.get('/api/studies', { token });
      inflight.push(response);
      return response;
    });
    const until = Date.now() + 5_000;
    while (releases.length < before + limit + 2 && Date.now() < until) await new Promise((resolve) => setTimeout(resolve, 2));
    expect(releases.length).toBe(before + limit + 2);
    releases.splice(0).forEach((release) => release());
    for (const res of await Promise.all(plain)) expect(res.status).toBe(200);
  });
});
