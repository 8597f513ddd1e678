import { TtlCache } from './ttl-cache';

describe('TtlCache', () => {
  let now = 1_000;
  const clock = () => now;

  it('forgets an entry at its own expiry time', () => {
    const cache = new TtlCache<string>(10, clock);
    cache.set('a', 'A', now + 100);
    now += 99;
    expect(cache.get('a')).toBe('A');
    now += 1;
    expect(cache.get('a')).toBeUndefined();
    expect(cache.size).toBe(0);
  });

  it('stores nothing for a time already past', () => {
    const cache = new TtlCache<string>(10, clock);
    cache.set('a', 'A', now);
    expect(cache.get('a')).toBeUndefined();
  });

  it('drops the oldest insertion past its bound', () => {
    const cache = new TtlCache<number>(3, clock);
    for (const [i, key] of ['a', 'b', 'c', 'd'].entries()) cache.set(key, i, now + 1000);
    expect(cache.size).toBe(3);
    expect(cache.get('a')).toBeUndefined();
    expect(cache.get('d')).toBe(3);
    cache.set('b', 9, now + 1000);
    cache.set('e', 4, now + 1000);
    expect(cache.get('b')).toBe(9);
    expect(cache.get('c')).toBeUndefined();
  });
});
