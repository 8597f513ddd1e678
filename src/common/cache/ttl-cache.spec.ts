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

  it('keeps an entry without a time until the bound pushes it out', () => {
    const cache = new TtlCache<string>(2, clock);
    cache.set('a', 'A');
    now += 1e12;
    expect(cache.get('a')).toBe('A');
    cache.set('b', 'B');
    cache.set('c', 'C');
    expect(cache.get('a')).toBeUndefined();
  });

  it('shares one load between concurrent misses of a key, and keeps what the loader set', async () => {
    const cache = new TtlCache<number>(10, clock);
    let open!: () => void;
    const gate = new Promise<void>((resolve) => (open = resolve));
    const loader = jest.fn(async () => {
      await gate;
      cache.set('k', 5);
      return 5;
    });
    const pending = [cache.load('k', loader), cache.load('k', loader), cache.load('other', async () => 6)];
    open();
    expect(await Promise.all(pending)).toEqual([5, 5, 6]);
    expect(loader).toHaveBeenCalledTimes(1);
    expect(await cache.load('k', loader)).toBe(5);
    expect(loader).toHaveBeenCalledTimes(1);
    // `other`'s loader set nothing: loaded again.
    expect(await cache.load('other', async () => 7)).toBe(7);
  });

  it('keeps nothing of a failed load, and loads again on the next miss', async () => {
    const cache = new TtlCache<number>(10, clock);
    await expect(cache.load('k', () => Promise.reject(new Error('gone')))).rejects.toThrow('gone');
    expect(await cache.load('k', async () => 3)).toBe(3);
  });
});
