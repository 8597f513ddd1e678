import type Redis from 'ioredis';
import type { AccountState, AccountStatusService } from '../auth';
import type { AppConfig } from '../config/environment';
import type { StudiesRepository } from '../studies';
import { StudyTenantsCache } from './study-tenants.cache';
import { ALLOW, FORBIDDEN, INVALID_TOKEN, MISSING_TOKEN, ViewerService, ViewerSession } from './viewer.service';

const TOKEN = '6f1c7a52-8d0e-4b8e-9c55-0c8f0b9a1d23';
const TENANT = 'tenant-a';
const UID = '1.2.3.4';
const URI = `/dicom-web/studies/${UID}`;

function build(overrides: {
  redisGet?: () => Promise<string | null>;
  account?: () => Promise<AccountState | null>;
  tenantsOf?: () => Promise<Map<string, string[]>>;
  session?: Partial<ViewerSession>;
  metrics?: { viewerValidation: jest.Mock };
} = {}) {
  const session: ViewerSession = {
    user_id: 'user-1',
    tenant_id: TENANT,
    unit_id: 'unit-1',
    study_id: 'study-1',
    expires_at: Date.now() + 600_000,
    ...overrides.session,
  };
  const redis = { get: jest.fn(overrides.redisGet ?? (async () => JSON.stringify(session))) };
  const account: AccountState = {
    id: 'user-1',
    email: 'a@b.c',
    name: 'A',
    tenant_id: TENANT,
    unit_id: 'unit-1',
    is_super_admin: false,
    is_tenant_admin: false,
    usable: true,
  };
  // As AccountStatusService: `peek` answers what the last `get` read, until then nothing.
  let cachedAccount: AccountState | null | undefined;
  const loadAccount = overrides.account ?? (async () => account);
  const accounts = {
    get: jest.fn(async () => (cachedAccount = await loadAccount())),
    peek: jest.fn(() => cachedAccount),
  };
  const studies = {
    tenantsOfStudyUids: jest.fn(overrides.tenantsOf ?? (async () => new Map([[UID, [TENANT]]]))),
  };
  const service = new ViewerService(
    { VIEWER_TOKEN_TTL: 600 } as AppConfig,
    redis as unknown as Redis,
    studies as unknown as StudiesRepository,
    new StudyTenantsCache(studies as unknown as StudiesRepository),
    accounts as unknown as AccountStatusService,
    overrides.metrics as never,
  );
  return { service, redis, accounts, studies };
}

describe('ViewerService.validate', () => {
  afterEach(() => jest.useRealTimers());

  it('allows a stored token for a study of its tenant', async () => {
    expect(await build().service.validate(TOKEN, URI)).toBe(ALLOW);
  });

  it.each([undefined, '', '   ', ['a', 'b']])('answers Missing token for %p', async (header) => {
    expect(await build().service.validate(header, URI)).toBe(MISSING_TOKEN);
  });

  it('refuses (401) when Redis fails', async () => {
    const { service } = build({ redisGet: async () => Promise.reject(new Error('ECONNREFUSED')) });
    expect(await service.validate(TOKEN, URI)).toBe(INVALID_TOKEN);
  });

  it('refuses (401) when Redis does not answer within 2 s', async () => {
    jest.useFakeTimers();
    const { service } = build({ redisGet: () => new Promise(() => undefined) });
    const verdict = service.validate(TOKEN, URI);
    await jest.advanceTimersByTimeAsync(2_000);
    expect(await verdict).toBe(INVALID_TOKEN);
  });

  it('refuses (401) a value it did not write', async () => {
    expect(await build({ redisGet: async () => '{"user_id":1}' }).service.validate(TOKEN, URI)).toBe(INVALID_TOKEN);
    expect(await build({ redisGet: async () => 'not json' }).service.validate(TOKEN, URI)).toBe(INVALID_TOKEN);
  });

  it('refuses (401) when the account check fails or the account is unusable', async () => {
    expect(await build({ account: async () => Promise.reject(new Error('pg down')) }).service.validate(TOKEN, URI)).toBe(INVALID_TOKEN);
    expect(await build({ account: async () => null }).service.validate(TOKEN, URI)).toBe(INVALID_TOKEN);
  });

  it('refuses (403) when the study lookup fails', async () => {
    const { service } = build({ tenantsOf: async () => Promise.reject(new Error('pg down')) });
    expect(await service.validate(TOKEN, URI)).toBe(FORBIDDEN);
  });

  it('honours the stored expiry even while the token is cached', async () => {
    let now = 1_000_000;
    const spy = jest.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      const { service, redis } = build({ session: { expires_at: now + 1_000 } });
      expect(await service.validate(TOKEN, URI)).toBe(ALLOW);
      now += 999;
      expect(await service.validate(TOKEN, URI)).toBe(ALLOW);
      expect(redis.get).toHaveBeenCalledTimes(1);
      now += 1;
      expect(await service.validate(TOKEN, URI)).toBe(INVALID_TOKEN);
    } finally {
      spy.mockRestore();
    }
  });

  it('shares one database query among concurrent first validations', async () => {
    const { service, studies } = build();
    const verdicts = await Promise.all(Array.from({ length: 20 }, () => service.validate(TOKEN, URI)));
    expect(verdicts.every((v) => v === ALLOW)).toBe(true);
    expect(studies.tenantsOfStudyUids).toHaveBeenCalledTimes(1);
  });

  it('reports each outcome and whether the study lookup was cached', async () => {
    const metrics = { viewerValidation: jest.fn() };
    const { service } = build({ metrics });
    await service.validate(undefined, URI);
    await service.validate(TOKEN, URI);
    await service.validate(TOKEN, URI);
    await service.validate(TOKEN, '/dicom-web/studies');
    expect(metrics.viewerValidation.mock.calls).toEqual([
      ['missing_token', undefined],
      ['allowed', false],
      ['allowed', true],
      ['forbidden', undefined],
    ]);
  });
});

describe('ViewerService.validateNow (the answer from process memory)', () => {
  const OTHER_UID = '1.2.3.5';

  it('has no answer until the token, the account and the study are cached, then the same one as validate', async () => {
    const { service, redis, studies } = build();
    expect(service.validateNow(TOKEN, URI)).toBeUndefined();
    expect(await service.validate(TOKEN, URI)).toBe(ALLOW);
    expect(service.validateNow(TOKEN, URI)).toBe(ALLOW);
    expect(service.validateNow(TOKEN, `${URI}/series/1.2/instances/1.3`)).toBe(ALLOW);
    expect(redis.get).toHaveBeenCalledTimes(1);
    expect(studies.tenantsOfStudyUids).toHaveBeenCalledTimes(1);
  });

  it('answers what needs no lookup at once: no token, a token that is not a uuid, a URI without a study', async () => {
    const { service } = build();
    expect(service.validateNow(undefined, URI)).toBe(MISSING_TOKEN);
    expect(service.validateNow('  ', URI)).toBe(MISSING_TOKEN);
    expect(service.validateNow('not-a-uuid', URI)).toBe(INVALID_TOKEN);
    await service.validate(TOKEN, URI);
    expect(service.validateNow(TOKEN, '/dicom-web/studies')).toBe(FORBIDDEN);
  });

  it('goes back to the stores for a study it has not seen, and refuses one of another tenant', async () => {
    const { service, studies } = build({
      tenantsOf: async () => new Map([[UID, [TENANT]], [OTHER_UID, ['tenant-b']]]),
    });
    await service.validate(TOKEN, URI);
    expect(service.validateNow(TOKEN, `/dicom-web/studies/${OTHER_UID}`)).toBeUndefined();
    expect(await service.validate(TOKEN, `/dicom-web/studies/${OTHER_UID}`)).toBe(FORBIDDEN);
    expect(service.validateNow(TOKEN, `/dicom-web/studies/${OTHER_UID}`)).toBe(FORBIDDEN);
    expect(service.validateNow(TOKEN, `/dicom-web/studies?StudyInstanceUIDs=${UID},${OTHER_UID}`)).toBe(FORBIDDEN);
    expect(studies.tenantsOfStudyUids).toHaveBeenCalledTimes(2);
  });

  it('refuses a cached token past its expiry, and one whose account is no longer usable', async () => {
    let now = 1_000_000;
    const spy = jest.spyOn(Date, 'now').mockImplementation(() => now);
    try {
      const expiring = build({ session: { expires_at: now + 1_000 } }).service;
      await expiring.validate(TOKEN, URI);
      now += 999;
      expect(expiring.validateNow(TOKEN, URI)).toBe(ALLOW);
      now += 1;
      // The cached entry ends with the token: memory has no answer, and validate refuses it.
      expect(expiring.validateNow(TOKEN, URI)).toBeUndefined();
      expect(await expiring.validate(TOKEN, URI)).toBe(INVALID_TOKEN);
    } finally {
      spy.mockRestore();
    }
    const { service } = build({ account: async () => null });
    expect(await service.validate(TOKEN, URI)).toBe(INVALID_TOKEN);
    expect(service.validateNow(TOKEN, URI)).toBe(INVALID_TOKEN);
  });

  it('reports its outcomes like validate, the study lookup as a cache hit', async () => {
    const metrics = { viewerValidation: jest.fn() };
    const { service } = build({ metrics });
    await service.validate(TOKEN, URI);
    service.validateNow(TOKEN, URI);
    service.validateNow(undefined, URI);
    expect(metrics.viewerValidation.mock.calls).toEqual([
      ['allowed', false],
      ['allowed', true],
      ['missing_token', undefined],
    ]);
  });
});
