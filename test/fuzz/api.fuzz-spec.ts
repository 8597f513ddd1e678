/**
 * Hostile input against every endpoint of the live OpenAPI document (so endpoints added later are
 * fuzzed without touching this file): generated bodies, query strings, path ids and headers, from a
 * seed drawn each run (FUZZ_SEED replays one), as every kind of caller. No answer may be a 5xx,
 * every answer must be in the documented family of its endpoint, isolation and authentication must
 * hold, error bodies must not leak internals, and the service must still be healthy at the end.
 */
import { Logger } from '@nestjs/common';
import { randomInt } from 'crypto';
import { AccountStatusService } from '../../src/auth/account-status.service';
import { TokenService } from '../../src/auth/token.service';
import { createTestApp, TestApp } from '../support/app';
import { login } from '../support/factories';
import { FuzzRequest, Operation, operationsOf, RequestGenerator } from './support/generator';
import { Prng } from './support/prng';
import { REGRESSIONS } from './support/regressions';
import { FuzzWorld, HOSTILE_CALLERS, HostileCaller } from './support/world';

const SEED = Number(process.env.FUZZ_SEED ?? randomInt(2 ** 32));
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
const CONCURRENCY = 8;
const RESTORE_EVERY = 400;

jest.setTimeout(240_000);

/** Operator routes outside /api (not in the OpenAPI document). */
const EXTRA_OPERATIONS: Operation[] = [
  { method: 'GET', path: '/queues', parameters: [], bodySchema: null, documented: new Set([200, 401, 403]), secured: false },
  { method: 'GET', path: '/metrics', parameters: [], bodySchema: null, documented: new Set([200, 401, 404]), secured: false },
];

const LEAK =
  /QueryFailedError|EntityNotFound|\bat [\w$.<>]+ \(|\/src\/|node_modules|\bSELECT\b|\bINSERT\b|\bUPDATE [a-z_]+ SET\b|FST_ERR|"statusCode"|ECONNREFUSED|duplicate key|violates/i;

const TENANT_ADMIN_WRITES = (op: Operation) =>
  (op.path.startsWith('/api/tenant/templates') && op.method !== 'GET') ||
  (op.path.startsWith('/api/tenant/report-presets') && op.method !== 'GET') ||
  (op.path === '/api/tenant/settings' && op.method === 'PATCH');
const UNIT_SCOPED = (op: Operation) => /^\/api\/(studies|series|patients)\/\{/.test(op.path);
/**
 * A super admin's change of a user can change who a fixture caller is (a user made tenant admin,
 * an admin moved to the other clinic): such a request is sent alone, after the others of its
 * batch, and the fixtures are restored once it succeeds, so every other request is judged against
 * the callers the checks below know.
 */
const RESHAPES_CALLERS = (op: Operation) => op.method === 'PATCH' && op.path === '/api/admin/users/{id}';

/**
 * The access trail's isolation: a regular user never reads it; a tenant admin reads only entries of
 * their own clinic (JSON: each entry's tenant_id; CSV: its tenant_id column).
 */
function trailViolation(
  req: FuzzRequest,
  status: number,
  raw: string,
  tenantOf: (caller: string) => string | null,
): string | null {
  if (req.op.path !== '/api/audit/access' || status !== 200) return null;
  if (['user', 'user2', 'userB'].includes(req.caller)) return `${req.caller} read the access trail`;
  const own = tenantOf(req.caller);
  if (own === null) return null;
  let tenants: string[];
  if (raw.startsWith('id,at,action')) {
    tenants = raw
      .split('\r\n')
      .slice(1)
      .filter((line) => line !== '')
      .map((line) => line.split(',')[6]);
  } else {
    tenants = ((JSON.parse(raw) as { data?: Array<{ tenant_id: string }> }).data ?? []).map((entry) => entry.tenant_id);
  }
  const foreign = tenants.filter((tenant) => tenant !== own);
  return foreign.length > 0 ? `${req.caller} read ${foreign.length} access trail entries of another clinic` : null;
}

function violationOf(req: FuzzRequest, status: number, contentType: string, raw: string): string | null {
  const { op, facts, caller } = req;
  if (status >= 500) return `${status} server error`;
  const hostile = (HOSTILE_CALLERS as readonly string[]).includes(caller);
  const bodyErrors = new Set<number>();
  if (facts.bodySent) bodyErrors.add(400);
  if (facts.oversized) bodyErrors.add(413);
  if (facts.unsupportedType) bodyErrors.add(415);
  // Answered before any body is read: a path the router cannot match (an id past its 500-character
  // limit), and the queue board's guard (an onRequest hook) refusing its caller.
  const unread =
    (facts.routeMangled && status === 404) || (op.path.startsWith('/queues') && (status === 401 || status === 403));
  if (facts.oversized && status !== 413 && !unread) return `oversized body answered ${status}, not 413`;

  if (op.secured && hostile) {
    const ok = status === 401 || bodyErrors.has(status) || (facts.routeMangled && status === 404);
    if (!ok) return `${caller} token on a secured endpoint answered ${status}, not 401`;
  }
  const allowed = new Set([...op.documented, ...bodyErrors]);
  if (op.parameters.some((p) => p.in === 'path') || facts.routeMangled) allowed.add(404);
  if (!allowed.has(status)) return `${status} is not documented (${[...op.documented].sort().join(', ')})`;

  const ok2xx = status >= 200 && status < 300;
  const validNonRoot = !hostile && caller !== 'root';
  if (ok2xx && op.path.startsWith('/api/admin') && validNonRoot) return `${caller} reached a super-admin endpoint`;
  if (ok2xx && op.path.startsWith('/queues') && caller !== 'root') return `${caller} reached the queue board`;
  if (ok2xx && TENANT_ADMIN_WRITES(op) && ['user', 'user2', 'userB'].includes(caller)) return `${caller} wrote as tenant admin`;
  if (ok2xx && facts.foreignPathId && validNonRoot) return `${caller} reached another clinic's record`;
  if (ok2xx && facts.otherUnitPathId && caller === 'user' && UNIT_SCOPED(op)) return `user reached another unit's record`;
  if (ok2xx && facts.foreignBodyStudy && validNonRoot && op.path === '/api/viewer/token')
    return `viewer token for another clinic's study`;
  if (ok2xx && facts.viewerCrossTenant) return `viewer token of one clinic validated a study of the other`;
  if (ok2xx && facts.wrongWebhookSecret) return `webhook accepted a wrong secret`;

  if (status >= 400) {
    if (!contentType.includes('application/json')) return `${status} error without a JSON body (${contentType})`;
    let parsed: unknown;
    try {
      parsed = JSON.parse(raw);
    } catch {
      return `${status} error body is not JSON`;
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) return `${status} error body is not an object`;
  }
  if (status >= 400 && LEAK.test(raw)) return `error body leaks internals: ${raw.slice(0, 200)}`;
  return null;
}

describe(`fuzz: every endpoint of the OpenAPI document (seed ${SEED})`, () => {
  let t: TestApp;
  let world: FuzzWorld;

  beforeAll(async () => {
    // Nothing listens on port 9: rendered images fail fast with their documented 404.
    t = await createTestApp({ IMGSRV_URL: 'http://127.0.0.1:9' });
    world = new FuzzWorld(t, t.app.get(TokenService), t.config.JWT_SECRET);
    await world.build();
  });
  afterAll(() => t?.close());

  it(`answers ${REQUESTS} generated requests without a 5xx, inside each endpoint's documented statuses`, async () => {
    const document = (await t.http.get('/api/docs-json')).body;
    const operations = [...operationsOf(document), ...EXTRA_OPERATIONS];
    expect(operations.length).toBeGreaterThan(30);
    const rng = new Prng(SEED);
    const generator = new RequestGenerator(rng, world, document, t.config.WEBHOOK_SECRET);
    const accounts = t.app.get(AccountStatusService);
    const tenantOf = (caller: string) =>
      caller === 'admin' ? world.a.clinic.tenant.id : caller === 'adminB' ? world.b.clinic.tenant.id : null;

    const histogram = new Map<number, number>();
    const perOperation = new Map<string, Map<number, number>>();
    const violations: string[] = [];
    // The filter logs what caused a 500; keep it so a failing run says where the bug is.
    const serverErrors: string[] = [];
    const errorSpy = jest.spyOn(Logger.prototype, 'error').mockImplementation((message: unknown) => {
      if (serverErrors.length < 20) serverErrors.push(String(message).split('\n').slice(0, 6).join('\n'));
    });
    let sent = 0;
    const started = Date.now();
    console.log(`fuzz seed ${SEED} (FUZZ_SEED=${SEED} reproduces this run), ${operations.length} operations`);

    const send = async (req: FuzzRequest): Promise<number> => {
      const response = await t.app.inject({
        method: req.op.method,
        url: req.url,
        headers: req.headers,
        payload: req.payload,
        remoteAddress: `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`,
      });
      const status = response.statusCode;
      histogram.set(status, (histogram.get(status) ?? 0) + 1);
      const key = `${req.op.method} ${req.op.path}`;
      const counts = perOperation.get(key) ?? new Map<number, number>();
      counts.set(status, (counts.get(status) ?? 0) + 1);
      perOperation.set(key, counts);
      const problem =
        violationOf(req, status, String(response.headers['content-type'] ?? ''), response.body) ??
        trailViolation(req, status, response.body, tenantOf);
      if (problem && violations.length < 200) {
        const shown = ['x-original-uri', 'x-viewer-token', 'x-webhook-secret', 'content-type']
          .filter((h) => req.headers[h] !== undefined)
          .map((h) => `${h}: ${JSON.stringify(req.headers[h].slice(0, 120))}`)
          .join('; ');
        const payload = req.payload ? ` body ${JSON.stringify(req.payload.subarray(0, 160).toString('latin1'))}` : '';
        violations.push(
          `#${sent} ${key} as ${req.caller} [${req.facts.strategy || 'no body'}] ${req.url.slice(0, 160)} ${shown}${payload}` +
            ` -> ${problem} :: ${response.body.slice(0, 200)}`,
        );
      }
      return status;
    };

    while (sent < REQUESTS) {
      if (sent > 0 && sent % RESTORE_EVERY === 0) await world.restore(accounts);
      const batch: FuzzRequest[] = [];
      for (let i = 0; i < CONCURRENCY && sent + batch.length < REQUESTS; i++) {
        batch.push(generator.next(rng.pick(operations)));
      }
      await Promise.all(batch.filter((req) => !RESHAPES_CALLERS(req.op)).map(send));
      for (const req of batch.filter((r) => RESHAPES_CALLERS(r.op))) {
        if ((await send(req)) < 300) await world.restore(accounts);
      }
      sent += batch.length;
    }
    // The regressions below read the fixtures as built.
    await world.restore(accounts);
    const seconds = (Date.now() - started) / 1000;
    errorSpy.mockRestore();

    const table = [...histogram.entries()]
      .sort(([a], [b]) => a - b)
      .map(([s, n]) => `${s}: ${n}`)
      .join(', ');
    const untouched = operations
      .filter((op) => !perOperation.has(`${op.method} ${op.path}`))
      .map((op) => `${op.method} ${op.path}`);
    const fiveXx = [...histogram.entries()].filter(([s]) => s >= 500).reduce((sum, [, n]) => sum + n, 0);
    console.log(
      [
        `fuzz: ${sent} requests in ${seconds.toFixed(1)} s (${(sent / seconds).toFixed(0)}/s), seed ${SEED}`,
        `statuses: ${table}`,
        `5xx: ${fiveXx}; violations: ${violations.length}`,
        ...[...perOperation.entries()].sort().map(
          ([op, counts]) =>
            `  ${op}: ${[...counts.entries()]
              .sort(([a], [b]) => a - b)
              .map(([s, n]) => `${s}x${n}`)
              .join(' ')}`,
        ),
        ...violations.slice(0, 40),
        ...serverErrors.map((e) => `server error log: ${e}`),
      ].join('\n'),
    );
    expect(untouched).toEqual([]);
    expect(violations).toEqual([]);
    expect(fiveXx).toBe(0);
    expect(sent).toBeGreaterThanOrEqual(REQUESTS);
  });

  it.each(REGRESSIONS.map((regression) => [regression.name, regression] as const))(
    'answers a past finding with its documented 4xx: %s',
    async (_name, regression) => {
      const token = regression.caller ? world.tokenFor(regression.caller) : null;
      const response = await t.app.inject({
        method: regression.method,
        url: regression.url(world),
        headers: { ...regression.headers, ...(token ? { authorization: `Bearer ${token}` } : {}) },
        payload: regression.payload,
        remoteAddress: `10.${randomInt(256)}.${randomInt(256)}.${randomInt(1, 255)}`,
      });
      expect({ status: response.statusCode, body: JSON.parse(response.body) }).toEqual({
        status: regression.status,
        body: regression.body,
      });
    },
  );

  it('is still healthy and serving its users afterwards', async () => {
    await world.restore(t.app.get(AccountStatusService));
    const health = await t.http.get('/api/health');
    expect(health.status).toBe(200);
    expect(health.body.status).toBe('ok');
    const token = await login(t.http, world.a.clinic.user1.email);
    const studies = await t.http.get('/api/studies', { token });
    expect(studies.status).toBe(200);
    expect(studies.body.data.map((s: { id: string }) => s.id)).toContain(world.a.study1.study.id);
    const detail = await t.http.get(`/api/studies/${world.a.study1.study.id}`, { token });
    expect(detail.status).toBe(200);
  });

  it('uses every kind of hostile caller', () => {
    const kinds: HostileCaller[] = [...HOSTILE_CALLERS];
    for (const kind of kinds) expect(kind === 'anonymous' || world.tokenFor(kind)).toBeTruthy();
  });
});
