import { FAIR_SHARE_LIMITS, FairShareCounters, isWildcardOnly } from './fair-share';

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
  it("refuses past the user's and the clinic's limits, and frees a slot once, however often it is released", () => {
    const counters = new FairShareCounters();
    const limit = Math.min(FAIR_SHARE_LIMITS.expensive.user, FAIR_SHARE_LIMITS.expensive.tenant);
    const slots = Array.from({ length: limit }, () => counters.take('u1', 't1', 'expensive'));
    expect(slots.every(Boolean)).toBe(true);
    expect(counters.take('u1', 't1', 'expensive')).toBeNull();
    expect(counters.take('u9', 't2', 'expensive')).not.toBeNull();
    slots[0]!.release();
    slots[0]!.release();
    expect(counters.count('tenant:t1:expensive')).toBe(limit - 1);
    expect(counters.take('u1', 't1', 'expensive')).not.toBeNull();
  });

  it('holds wildcard-only searches to their own limits, and a super admin (no clinic) to the user limits only', () => {
    const counters = new FairShareCounters();
    expect(counters.take('u1', 't1', 'wildcard')).not.toBeNull();
    expect(counters.take('u2', 't1', 'wildcard')).toBeNull();
    expect(counters.take('root', null, 'wildcard')).not.toBeNull();
    expect(counters.take('root2', null, 'wildcard')).not.toBeNull();
  });
});
