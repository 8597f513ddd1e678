import { FAIR_SHARE_LIMITS, FAIR_SHARE_MAX_WAIT_MS, FairShareCounters, isWildcardOnly } from './fair-share';

describe('isWildcardOnly', () => {
  it.each(['*', '%', '_', '?', '%%', '%_%', 'a*', '*a*', ' ? ', 'jo%', '%\u00e9'])(
    'takes %p for a search no index narrows',
    (text) => {
      expect(isWildcardOnly(text)).toBe(true);
    },
  );
  it.each(['silva', 'jo', 'SIL*', 'MARIA*', '123*', '', '   ', undefined, ['*'], 42])(
    'lets %p through as an ordinary search',
    (text) => {
      expect(isWildcardOnly(text)).toBe(false);
    },
  );
});

describe('FairShareCounters', () => {
  afterEach(() => jest.useRealTimers());
  const limit = Math.min(FAIR_SHARE_LIMITS.expensive.user, FAIR_SHARE_LIMITS.expensive.tenant);

  it('gives the next in line the slot that frees, and frees it once however often it is released', async () => {
    const counters = new FairShareCounters();
    const slots = await Promise.all(Array.from({ length: limit }, () => counters.take('u1', 't1', 'expensive')));
    expect(slots.every(Boolean)).toBe(true);
    let next: unknown = 'waiting';
    const waiting = counters.take('u1', 't1', 'expensive').then((slot) => (next = slot));
    await Promise.resolve();
    expect(next).toBe('waiting');
    // Another clinic is not in that line.
    expect(await counters.take('u9', 't2', 'expensive')).not.toBeNull();
    slots[0]!.release();
    slots[0]!.release();
    await waiting;
    expect(next).not.toBeNull();
    expect(counters.count('tenant:t1:expensive')).toBe(limit);
  });

  it(`refuses (null) a request that waited ${FAIR_SHARE_MAX_WAIT_MS} ms, and leaves no count behind`, async () => {
    jest.useFakeTimers();
    const counters = new FairShareCounters();
    const slots = await Promise.all(Array.from({ length: limit }, () => counters.take('u1', 't1', 'expensive')));
    const late = counters.take('u1', 't1', 'expensive');
    await jest.advanceTimersByTimeAsync(FAIR_SHARE_MAX_WAIT_MS);
    expect(await late).toBeNull();
    slots.forEach((slot) => slot!.release());
    expect(counters.count('user:u1:expensive')).toBe(0);
    expect(counters.count('tenant:t1:expensive')).toBe(0);
  });

  it('holds wildcard-only searches to one per user and clinic; a super admin (no clinic) to the user limits only', async () => {
    jest.useFakeTimers();
    const counters = new FairShareCounters();
    expect(await counters.take('u1', 't1', 'wildcard')).not.toBeNull();
    const second = counters.take('u2', 't1', 'wildcard');
    await jest.advanceTimersByTimeAsync(FAIR_SHARE_MAX_WAIT_MS);
    expect(await second).toBeNull();
    expect(counters.count('user:u2:expensive')).toBe(0);
    expect(await counters.take('root', null, 'wildcard')).not.toBeNull();
    expect(await counters.take('root2', null, 'wildcard')).not.toBeNull();
  });
});
