import type Redis from 'ioredis';
import type { AccountState, AccountStatusService } from '../auth/account-status.service';
import type { AppConfig } from '../config/environment';
import type { StudiesRepository } from '../studies/studies.repository';
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
  const accounts = { get: jest.fn(overrides.account ?? (async () => account)) };
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
