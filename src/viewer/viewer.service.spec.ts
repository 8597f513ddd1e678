import type Redis from 'ioredis';
import type { ViewTrail } from '../audit';
import type { AccountState, AccountStatusService, TokenService } from '../auth';
import type { AppConfig } from '../config/environment';
import type { StudiesRepository, StudyPlace } from '../studies';
import { StudyPlacesCache } from './study-places.cache';
import type { RefusedUidLimit } from './refused-uid-limit';
import type { RenderingGate } from './rendering-gate';
import { ViewerSession, ViewerTokenRecords } from './viewer-token-record';
import { ALLOW, credentialOf, FORBIDDEN, INVALID_TOKEN, MISSING_TOKEN, ViewerService } from './viewer.service';

const TOKEN = '6f1c7a52-8d0e-4b8e-9c55-0c8f0b9a1d23';
const TENANT = 'tenant-a';
const UID = '1.2.3.4';
const URI = `/dicom-web/studies/${UID}`;
const h = (token: unknown, uri: string) => ({ 'x-viewer-token': token as string, 'x-original-uri': uri });
const SECRET = 'jwt-secret-for-unit-tests';
const place = (study_id: string, tenant_id: string, unit_id: string, patient_id = 'P-1'): StudyPlace[] => [
  { study_id, tenant_id, unit_id, patient_id },
];
const at = (tenant_id: string): StudyPlace[] =>
  place(tenant_id === TENANT ? 'study-1' : `study-of-${tenant_id}`, tenant_id, 'unit-1');

/** As RefusedUidLimit, in memory: blocked past `limit` refusals. */
class FakeRefusedUidLimit {
  counts = new Map<string, number>();
  constructor(private readonly limit = 30) {}
  blocked(id: string): boolean {
    return (this.counts.get(id) ?? 0) > this.limit;
  }
  async refused(id: string, uids: number): Promise<void> {
    this.counts.set(id, (this.counts.get(id) ?? 0) + uids);
  }
}

function accountOf(changes: Partial<AccountState>): AccountState {
  return {
    id: 'user-1',
    email: 'a@b.c',
    name: 'A',
    tenant_id: TENANT,
    unit_id: 'unit-1',
    is_super_admin: false,
    is_tenant_admin: false,
    usable: true,
    ...changes,
  };
}

function build(overrides: {
  redisGet?: () => Promise<string | null>;
  account?: () => Promise<AccountState | null>;
  placesOf?: () => Promise<Map<string, StudyPlace[]>>;
  session?: Partial<ViewerSession>;
  tokens?: Partial<TokenService>;
  metrics?: { viewerValidation: jest.Mock };
  limit?: FakeRefusedUidLimit;
  renderingAllowed?: boolean;
  clinicActive?: boolean;
} = {}) {
  const session: ViewerSession = {
    user_id: 'user-1',
    tenant_id: TENANT,
    unit_id: 'unit-1',
    study_id: 'study-1',
    patient_id: 'P-1',
    share_id: null,
    expires_at: Date.now() + 600_000,
    ...overrides.session,
  };
  const records = new ViewerTokenRecords(SECRET);
  const redis = { get: jest.fn(overrides.redisGet ?? (async () => records.seal(TOKEN, session))) };
  const account = accountOf({});
  // As AccountStatusService: `peek` answers what the last `get` read, until then nothing.
  let cachedAccount: AccountState | null | undefined;
  const loadAccount = overrides.account ?? (async () => account);
  const accounts = {
    get: jest.fn(async () => (cachedAccount = await loadAccount())),
    peek: jest.fn(() => cachedAccount),
    clinicActive: jest.fn(async () => overrides.clinicActive ?? true),
  };
  const studies = {
    placesOfStudyUids: jest.fn(overrides.placesOf ?? (async () => new Map([[UID, at(TENANT)]]))),
  };
  const limit = overrides.limit ?? new FakeRefusedUidLimit();
  const trail = { opened: jest.fn() };
  const renderings = { allows: jest.fn(async () => overrides.renderingAllowed ?? true) };
  const service = new ViewerService(
    { VIEWER_TOKEN_TTL: 600, JWT_SECRET: SECRET } as AppConfig,
    redis as unknown as Redis,
    studies as unknown as StudiesRepository,
    new StudyPlacesCache(studies as unknown as StudiesRepository),
    accounts as unknown as AccountStatusService,
    (overrides.tokens ?? {}) as TokenService,
    limit as unknown as RefusedUidLimit,
    trail as unknown as ViewTrail,
    renderings as unknown as RenderingGate,
    overrides.metrics as never,
  );
  return { service, redis, accounts, studies, limit, trail, records, session, renderings };
}

describe('ViewerService.validate', () => {
  afterEach(() => jest.useRealTimers());

  it('allows a stored token for a study of its tenant', async () => {
    expect(await build().service.validate(h(TOKEN, URI))).toBe(ALLOW);
  });

  it.each([undefined, '', '   ', ['a', 'b']])('answers Missing token for %p', async (header) => {
    expect(await build().service.validate(h(header, URI))).toBe(MISSING_TOKEN);
  });

  it('refuses (401) when Redis fails', async () => {
    const { service } = build({ redisGet: async () => Promise.reject(new Error('ECONNREFUSED')) });
    expect(await service.validate(h(TOKEN, URI))).toBe(INVALID_TOKEN);
  });

  it('refuses (401) when Redis does not answer within 2 s', async () => {
    jest.useFakeTimers();
    const { service } = build({ redisGet: () => new Promise(() => undefined) });
    const verdict = service.validate(h(TOKEN, URI));
    await jest.advanceTimersByTimeAsync(2_000);
    expect(await verdict).toBe(INVALID_TOKEN);
  });

  it('refuses (401) a value it did not write', async () => {
    expect(await build({ redisGet: async () => '{"user_id":1}' }).service.validate(h(TOKEN, URI))).toBe(INVALID_TOKEN);
    expect(await build({ redisGet: async () => 'not json' }).service.validate(h(TOKEN, URI))).toBe(INVALID_TOKEN);
  });

  it('refuses (401) a well-formed record that is unsigned, signed with another key, or copied from another token', async () => {
    const { session } = build();
    const json = JSON.stringify(session);
    const otherKey = new ViewerTokenRecords('another-secret').seal(TOKEN, session);
    const otherToken = new ViewerTokenRecords(SECRET).seal('0b3f3b0e-1111-4111-8111-111111111111', session);
    for (const stored of [json, `${json}.`, otherKey, otherToken]) {
      expect(await build({ redisGet: async () => stored }).service.validate(h(TOKEN, URI))).toBe(INVALID_TOKEN);
    }
    expect(await build({ redisGet: async () => new ViewerTokenRecords(SECRET).seal(TOKEN, session) }).service.validate(h(TOKEN, URI))).toBe(ALLOW);
  });

  it('refuses (401) when the account check fails or the account is unusable', async () => {
    expect(await build({ account: async () => Promise.reject(new Error('pg down')) }).service.validate(h(TOKEN, URI))).toBe(INVALID_TOKEN);
    expect(await build({ account: async () => null }).service.validate(h(TOKEN, URI))).toBe(INVALID_TOKEN);
  });

  it('refuses (403) when the study lookup fails', async () => {
    const { service } = build({ placesOf: async () => Promise.reject(new Error('pg down')) });
    expect(await service.validate(h(TOKEN, URI))).toBe(FORBIDDEN);
  });

  it('honours the stored expiry even while the token is cached', async () => {
    let now = 1_000_000;
    const spy = jest.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      const { service, redis } = build({ session: { expires_at: now + 1_000 } });
      expect(await service.validate(h(TOKEN, URI))).toBe(ALLOW);
      now += 999;
      expect(await service.validate(h(TOKEN, URI))).toBe(ALLOW);
      expect(redis.get).toHaveBeenCalledTimes(1);
      now += 1;
      expect(await service.validate(h(TOKEN, URI))).toBe(INVALID_TOKEN);
    } finally {
      spy.mockRestore();
    }
  });

  it('shares one database query among concurrent first validations', async () => {
    const { service, studies } = build();
    const verdicts = await Promise.all(Array.from({ length: 20 }, () => service.validate(h(TOKEN, URI))));
    expect(verdicts.every((v) => v === ALLOW)).toBe(true);
    expect(studies.placesOfStudyUids).toHaveBeenCalledTimes(1);
  });

  it('reports each outcome and whether the study lookup was cached', async () => {
    const metrics = { viewerValidation: jest.fn() };
    const { service } = build({ metrics });
    await service.validate(h(undefined, URI));
    await service.validate(h(TOKEN, URI));
    await service.validate(h(TOKEN, URI));
    await service.validate(h(TOKEN, '/dicom-web/studies'));
    expect(metrics.viewerValidation.mock.calls).toEqual([
      ['missing_token', undefined],
      ['allowed', false],
      ['allowed', true],
      ['forbidden', undefined],
    ]);
  });
});

describe('ViewerService.validate of a rendering', () => {
  const instance = `${URI}/series/1.2/instances/1.3/frames/1/rendered?quality=90`;

  it('allows it when RenderingGate does, with the instance named in the path', async () => {
    const { service, renderings, trail } = build();
    expect(await service.validate(h(TOKEN, instance))).toBe(ALLOW);
    expect(renderings.allows).toHaveBeenCalledWith({ study: UID, series: '1.2', instance: '1.3' });
    expect(trail.opened).toHaveBeenCalledTimes(1);
  });

  it('refuses it when RenderingGate does, leaving no study.view and no refused UID', async () => {
    const limit = new FakeRefusedUidLimit();
    const { service, renderings, trail } = build({ renderingAllowed: false, limit });
    expect(await service.validate(h(TOKEN, instance))).toBe(FORBIDDEN);
    expect(await service.validate(h(TOKEN, `${URI}/rendered`))).toBe(FORBIDDEN);
    expect(renderings.allows.mock.calls).toEqual([[{ study: UID, series: '1.2', instance: '1.3' }], ['whole']]);
    expect(trail.opened).not.toHaveBeenCalled();
    expect(limit.counts.size).toBe(0);
  });

  it('asks nothing of the image server for a study the reader does not reach', async () => {
    const { service, renderings } = build({ placesOf: async () => new Map([[UID, at('tenant-b')]]) });
    expect(await service.validate(h(TOKEN, instance))).toBe(FORBIDDEN);
    expect(renderings.allows).not.toHaveBeenCalled();
  });
});

describe('ViewerService.validateNow (the answer from process memory)', () => {
  const OTHER_UID = '1.2.3.5';

  it('has no answer until the token, the account and the study are cached, then the same one as validate', async () => {
    const { service, redis, studies } = build();
    expect(service.validateNow(h(TOKEN, URI))).toBeUndefined();
    expect(await service.validate(h(TOKEN, URI))).toBe(ALLOW);
    expect(service.validateNow(h(TOKEN, URI))).toBe(ALLOW);
    expect(service.validateNow(h(TOKEN, `${URI}/series/1.2/instances/1.3`))).toBe(ALLOW);
    expect(redis.get).toHaveBeenCalledTimes(1);
    expect(studies.placesOfStudyUids).toHaveBeenCalledTimes(1);
  });

  it('answers what needs no lookup at once: no token, a token that is not a uuid, a URI without a study', async () => {
    const { service } = build();
    expect(service.validateNow(h(undefined, URI))).toBe(MISSING_TOKEN);
    expect(service.validateNow(h('  ', URI))).toBe(MISSING_TOKEN);
    expect(service.validateNow(h('not-a-uuid', URI))).toBe(INVALID_TOKEN);
    await service.validate(h(TOKEN, URI));
    expect(service.validateNow(h(TOKEN, '/dicom-web/studies'))).toBe(FORBIDDEN);
  });

  it('goes back to the stores for a study it has not seen, and refuses one of another tenant', async () => {
    const { service, studies } = build({
      placesOf: async () => new Map([[UID, at(TENANT)], [OTHER_UID, at('tenant-b')]]),
    });
    await service.validate(h(TOKEN, URI));
    expect(service.validateNow(h(TOKEN, `/dicom-web/studies/${OTHER_UID}`))).toBeUndefined();
    expect(await service.validate(h(TOKEN, `/dicom-web/studies/${OTHER_UID}`))).toBe(FORBIDDEN);
    expect(service.validateNow(h(TOKEN, `/dicom-web/studies/${OTHER_UID}`))).toBe(FORBIDDEN);
    expect(service.validateNow(h(TOKEN, `/dicom-web/studies?StudyInstanceUID=${UID},${OTHER_UID}`))).toBe(FORBIDDEN);
    expect(studies.placesOfStudyUids).toHaveBeenCalledTimes(2);
  });

  it('refuses a cached token past its expiry, and one whose account is no longer usable', async () => {
    let now = 1_000_000;
    const spy = jest.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      const expiring = build({ session: { expires_at: now + 1_000 } }).service;
      await expiring.validate(h(TOKEN, URI));
      now += 999;
      expect(expiring.validateNow(h(TOKEN, URI))).toBe(ALLOW);
      now += 1;
      // The cached entry ends with the token: memory has no answer, and validate refuses it.
      expect(expiring.validateNow(h(TOKEN, URI))).toBeUndefined();
      expect(await expiring.validate(h(TOKEN, URI))).toBe(INVALID_TOKEN);
    } finally {
      spy.mockRestore();
    }
    const { service } = build({ account: async () => null });
    expect(await service.validate(h(TOKEN, URI))).toBe(INVALID_TOKEN);
    expect(service.validateNow(h(TOKEN, URI))).toBe(INVALID_TOKEN);
  });

  it('has no answer for a rendering: the image server is asked about the instance first', async () => {
    const { service, renderings, trail } = build();
    await service.validate(h(TOKEN, URI));
    expect(service.validateNow(h(TOKEN, `${URI}/series/1.2/instances/1.3/rendered`))).toBeUndefined();
    expect(service.validateNow(h(TOKEN, `${URI}/rendered`))).toBeUndefined();
    expect(renderings.allows).not.toHaveBeenCalled();
    expect(trail.opened).toHaveBeenCalledTimes(1);
  });

  it('reports its outcomes like validate, the study lookup as a cache hit', async () => {
    const metrics = { viewerValidation: jest.fn() };
    const { service } = build({ metrics });
    await service.validate(h(TOKEN, URI));
    service.validateNow(h(TOKEN, URI));
    service.validateNow(h(undefined, URI));
    expect(metrics.viewerValidation.mock.calls).toEqual([
      ['allowed', false],
      ['allowed', true],
      ['missing_token', undefined],
    ]);
  });
});

describe('credentialOf', () => {
  const JWT = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ4In0.c2lnbmF0dXJl';
  it.each([
    ['X-Viewer-Token', { 'x-viewer-token': ` ${TOKEN} ` }, { kind: 'viewer_token', token: TOKEN }],
    ['X-Viewer-Token before a bearer', { 'x-viewer-token': TOKEN, authorization: `Bearer ${JWT}` }, { kind: 'viewer_token', token: TOKEN }],
    ['a uuid bearer (OHIF\'s token parameter)', { authorization: `Bearer ${TOKEN}` }, { kind: 'viewer_token', token: TOKEN }],
    ['a bearer that is not a uuid', { authorization: `bearer ${JWT}` }, { kind: 'session', token: JWT }],
    ['the session cookie', { cookie: `a=1; pacs_access_token=${JWT}` }, { kind: 'session', token: JWT }],
    ['a bearer before the cookie', { authorization: `Bearer ${TOKEN}`, cookie: `pacs_access_token=${JWT}` }, { kind: 'viewer_token', token: TOKEN }],
    ['a blank X-Viewer-Token, then the cookie', { 'x-viewer-token': ' ', cookie: `pacs_access_token=${JWT}` }, { kind: 'session', token: JWT }],
    ['Basic credentials', { authorization: 'Basic dXNlcjpwdw==' }, null],
    ['an empty cookie', { cookie: 'pacs_access_token=' }, null],
    ['nothing', {}, null],
  ])('reads %s', (_, headers, expected) => {
    expect(credentialOf(headers)).toEqual(expected);
  });
});

describe('ViewerService.validate with a session', () => {
  const ACCESS = 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1c2VyLTEifQ.c2ln';
  const withSession = (uri: string) => ({ authorization: `Bearer ${ACCESS}`, 'x-original-uri': uri });
  const OTHER_UNIT = '1.2.3.6';
  const OTHER_TENANT = '1.2.3.7';
  const account = accountOf;
  const sessionBuild = (state: AccountState | null, tokens: Partial<TokenService> = {}) =>
    build({
      account: async () => state,
      placesOf: async () =>
        new Map([
          [UID, at(TENANT)],
          [OTHER_UNIT, place('study-6', TENANT, 'unit-2', 'P-6')],
          [OTHER_TENANT, at('tenant-b')],
        ]),
      tokens: {
        verify: jest.fn(() => ({ sub: 'user-1', jti: 'jti-1' }) as never),
        isBlacklisted: jest.fn(async () => false),
        ...tokens,
      },
    }).service;
  const verdicts = async (service: ViewerService) =>
    Promise.all([UID, OTHER_UNIT, OTHER_TENANT].map((uid) => service.validate(withSession(`/dicom-web/studies/${uid}`))));

  it('opens a regular user\'s unit only', async () => {
    expect(await verdicts(sessionBuild(account({})))).toEqual([ALLOW, FORBIDDEN, FORBIDDEN]);
  });

  it('opens a tenant admin\'s clinic, and everything for a super admin', async () => {
    expect(await verdicts(sessionBuild(account({ is_tenant_admin: true })))).toEqual([ALLOW, ALLOW, FORBIDDEN]);
    expect(await verdicts(sessionBuild(account({ is_super_admin: true, tenant_id: null, unit_id: null })))).toEqual([ALLOW, ALLOW, ALLOW]);
  });

  it('opens nothing for a regular user without a unit', async () => {
    expect(await verdicts(sessionBuild(account({ unit_id: null })))).toEqual([FORBIDDEN, FORBIDDEN, FORBIDDEN]);
  });

  it('refuses (401) an invalid, logged-out or unusable session, and when Redis fails', async () => {
    expect(await sessionBuild(account({}), { verify: jest.fn(() => null) }).validate(withSession(URI))).toBe(INVALID_TOKEN);
    expect(await sessionBuild(account({}), { isBlacklisted: jest.fn(async () => true) }).validate(withSession(URI))).toBe(INVALID_TOKEN);
    expect(await sessionBuild(account({ usable: false })).validate(withSession(URI))).toBe(INVALID_TOKEN);
    expect(await sessionBuild(null).validate(withSession(URI))).toBe(INVALID_TOKEN);
    const redisDown = sessionBuild(account({}), { isBlacklisted: jest.fn(async () => Promise.reject(new Error('down'))) });
    expect(await redisDown.validate(withSession(URI))).toBe(INVALID_TOKEN);
  });

  it('has no answer from memory alone (a logout is seen in Redis only)', async () => {
    const service = sessionBuild(account({}));
    expect(await service.validate(withSession(URI))).toBe(ALLOW);
    expect(service.validateNow(withSession(URI))).toBeUndefined();
  });
});

describe('What a viewer token reads', () => {
  const OWN_UNIT = '1.2.9.1';
  const PRIOR_OTHER_UNIT = '1.2.9.2';
  const OTHER_PATIENT_OTHER_UNIT = '1.2.9.3';
  const SAME_PATIENT_ID_OTHER_CLINIC = '1.2.9.4';
  const UNKNOWN = '1.2.9.5';
  const places = async () =>
    new Map([
      [UID, place('study-1', TENANT, 'unit-1', 'P-1')],
      [OWN_UNIT, place('study-2', TENANT, 'unit-1', 'P-2')],
      [PRIOR_OTHER_UNIT, place('study-3', TENANT, 'unit-2', 'P-1')],
      [OTHER_PATIENT_OTHER_UNIT, place('study-4', TENANT, 'unit-2', 'P-4')],
      [SAME_PATIENT_ID_OTHER_CLINIC, place('study-5', 'tenant-b', 'unit-9', 'P-1')],
    ]);
  const all = [UID, OWN_UNIT, PRIOR_OTHER_UNIT, OTHER_PATIENT_OTHER_UNIT, SAME_PATIENT_ID_OTHER_CLINIC, UNKNOWN];
  const verdicts = async (service: ViewerService) => {
    const answers: Record<string, string> = {};
    for (const uid of all) answers[uid] = (await service.validate(h(TOKEN, `/dicom-web/studies/${uid}/metadata`))).result;
    return answers;
  };

  it("a unit doctor's token: its study, the unit's studies and the patient's priors in the clinic, nothing else", async () => {
    expect(await verdicts(build({ placesOf: places }).service)).toEqual({
      [UID]: 'allowed',
      [OWN_UNIT]: 'allowed',
      [PRIOR_OTHER_UNIT]: 'allowed',
      [OTHER_PATIENT_OTHER_UNIT]: 'forbidden',
      [SAME_PATIENT_ID_OTHER_CLINIC]: 'forbidden',
      [UNKNOWN]: 'forbidden',
    });
  });

  it('a user\'s token stops when its issuer moves to another unit or loses their unit (it is bound to the unit)', async () => {
    for (const unit_id of ['unit-2', null]) {
      const { service } = build({ placesOf: places, account: async () => accountOf({ unit_id }) });
      expect(await service.validate(h(TOKEN, URI))).toBe(INVALID_TOKEN);
    }
    const promoted = build({ placesOf: places, account: async () => accountOf({ is_tenant_admin: true }) }).service;
    expect(await verdicts(promoted)).toMatchObject({ [UID]: 'allowed', [OTHER_PATIENT_OTHER_UNIT]: 'allowed' });
  });

  it('a token for a study of an empty Patient ID does not take every other such study for a prior', async () => {
    const emptyPatient = async () =>
      new Map([
        [UID, place('study-1', TENANT, 'unit-1', '')],
        [OTHER_PATIENT_OTHER_UNIT, place('study-4', TENANT, 'unit-2', '')],
      ]);
    const { service } = build({ placesOf: emptyPatient, session: { patient_id: '' } });
    expect(await service.validate(h(TOKEN, `/dicom-web/studies/${OTHER_PATIENT_OTHER_UNIT}`))).toBe(FORBIDDEN);
    expect(await service.validate(h(TOKEN, URI))).toBe(ALLOW);
  });

  it("a share's token: its one study only, whoever created the share", async () => {
    const { service, trail } = build({
      placesOf: places,
      account: async () => accountOf({ is_tenant_admin: true }),
      session: { share_id: '5a1e0000-0000-4000-8000-000000000001' },
    });
    expect(await verdicts(service)).toEqual({
      [UID]: 'allowed',
      [OWN_UNIT]: 'forbidden',
      [PRIOR_OTHER_UNIT]: 'forbidden',
      [OTHER_PATIENT_OTHER_UNIT]: 'forbidden',
      [SAME_PATIENT_ID_OTHER_CLINIC]: 'forbidden',
      [UNKNOWN]: 'forbidden',
    });
    expect(trail.opened.mock.calls[0][0]).toMatchObject({ userId: null, shareId: '5a1e0000-0000-4000-8000-000000000001' });
  });

  it("a share's token is invalid while the study's clinic is inactive, whoever created the share", async () => {
    const { service, accounts } = build({
      placesOf: places,
      account: async () => accountOf({ is_super_admin: true, tenant_id: null, unit_id: null }),
      session: { share_id: '5a1e0000-0000-4000-8000-000000000001' },
      clinicActive: false,
    });
    expect(await service.validate(h(TOKEN, URI))).toBe(INVALID_TOKEN);
    expect(accounts.clinicActive).toHaveBeenCalledWith(TENANT);
  });

  it('counts refused UIDs per token and, past the limit, refuses even its own study without a lookup', async () => {
    const limit = new FakeRefusedUidLimit(3);
    const { service, studies } = build({ placesOf: places, limit });
    expect(await service.validate(h(TOKEN, URI))).toBe(ALLOW);
    expect(await service.validate(h(TOKEN, `/dicom-web/studies?StudyInstanceUID=${OTHER_PATIENT_OTHER_UNIT},${UNKNOWN}`))).toBe(FORBIDDEN);
    expect(limit.counts.get(`token:${TOKEN}`)).toBe(2);
    expect(await service.validate(h(TOKEN, `/dicom-web/studies/${SAME_PATIENT_ID_OTHER_CLINIC}`))).toBe(FORBIDDEN);
    expect(service.validateNow(h(TOKEN, URI))).toBe(ALLOW);
    await service.validate(h(TOKEN, `/dicom-web/studies/${UNKNOWN}`));
    const lookups = studies.placesOfStudyUids.mock.calls.length;
    expect(service.validateNow(h(TOKEN, URI))).toBe(FORBIDDEN);
    expect(await service.validate(h(TOKEN, '/dicom-web/studies/1.2.9.77'))).toBe(FORBIDDEN);
    expect(studies.placesOfStudyUids.mock.calls.length).toBe(lookups);
  });

  it('leaves a study.view for what it allows, naming the reader', async () => {
    const { service, trail } = build({ placesOf: places });
    await service.validate(h(TOKEN, URI));
    await service.validate(h(TOKEN, `/dicom-web/studies/${OTHER_PATIENT_OTHER_UNIT}`));
    expect(trail.opened).toHaveBeenCalledTimes(1);
    const [reader, opened] = trail.opened.mock.calls[0];
    expect(reader).toMatchObject({ userId: 'user-1', shareId: null });
    expect([...opened]).toEqual([place('study-1', TENANT, 'unit-1', 'P-1')]);
  });
});
