import type { DataSource, SelectQueryBuilder } from 'typeorm';
import { ListTotals } from './list-totals';

/** A stand-in for the count query: answers each count with the next of `answers`, after `gate`. */
function countQuery(answers: Array<{ total: string; version: string }>, gate: Promise<void> = Promise.resolve()) {
  const calls: string[] = [];
  const qb = {
    select: (sql: string) => (calls.push(sql), qb),
    addSelect: (sql: string) => (calls.push(sql), qb),
    setParameters: () => qb,
    getRawOne: async () => {
      await gate;
      return answers.shift();
    },
  };
  return { qb: qb as unknown as SelectQueryBuilder<object>, calls };
}

const version = { sql: '(SELECT 1)', params: {} };

describe('ListTotals.cached', () => {
  const totals = () => new ListTotals({} as DataSource);

  it('counts once per key and version, and again when the version moves', async () => {
    const cache = totals();
    const first = countQuery([{ total: '42', version: '7.3' }]);
    expect(await cache.cached('k', '7.3', first.qb, version)).toBe(42);
    const again = countQuery([{ total: '0', version: '7.3' }]);
    expect(await cache.cached('k', '7.3', again.qb, version)).toBe(42);
    expect(again.calls).toEqual([]);

    const moved = countQuery([{ total: '43', version: '9.3' }]);
    expect(await cache.cached('k', '9.3', moved.qb, version)).toBe(43);
    expect(moved.calls).toEqual(['COUNT(*)::bigint', '(SELECT 1)']);
  });

  it('keeps a count under the version read with it, not the one the caller saw before', async () => {
    const cache = totals();
    // The caller read 5.1, a write committed, the count saw 6.1: it is exact for 6.1 only.
    expect(await cache.cached('k', '5.1', countQuery([{ total: '10', version: '6.1' }]).qb, version)).toBe(10);
    const at5 = countQuery([{ total: '9', version: '5.1' }]);
    expect(await cache.cached('k', '5.1', at5.qb, version)).toBe(9);
    const at6 = countQuery([]);
    expect(await cache.cached('k', '6.1', at6.qb, version)).toBe(10);
    expect(at6.calls).toEqual([]);
  });

  it('shares one count between concurrent misses of the same key and version only', async () => {
    const cache = totals();
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const shared = countQuery([{ total: '5', version: '1.1' }], gate);
    const second = countQuery([{ total: '99', version: '1.1' }]);
    const otherVersion = countQuery([{ total: '6', version: '2.1' }]);
    const a = cache.cached('k', '1.1', shared.qb, version);
    const b = cache.cached('k', '1.1', second.qb, version);
    const c = cache.cached('k', '2.1', otherVersion.qb, version);
    open();
    expect(await Promise.all([a, b, c])).toEqual([5, 5, 6]);
    expect(second.calls).toEqual([]);
  });

  it('does not keep a failed count', async () => {
    const cache = totals();
    const failing = {
      select: () => failing,
      addSelect: () => failing,
      setParameters: () => failing,
      getRawOne: () => Promise.reject(new Error('connection lost')),
    } as unknown as SelectQueryBuilder<object>;
    await expect(cache.cached('k', '1.1', failing, version)).rejects.toThrow('connection lost');
    expect(await cache.cached('k', '1.1', countQuery([{ total: '3', version: '1.1' }]).qb, version)).toBe(3);
  });
});
