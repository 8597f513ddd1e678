import { keepIds, uuidsAt } from './list-search';
import { KeptSearch } from './list-totals';

describe('uuidsAt', () => {
  const uuids = [
    '00112233-4455-6677-8899-aabbccddeeff',
    'ffffffff-0000-4000-8000-000000000001',
    '0a0b0c0d-0e0f-4a1b-9c2d-3e4f50617283',
  ];
  // As uuid_send writes them: the 16 bytes of each, one after the other.
  const ids = new Uint8Array(Buffer.from(uuids.map((u) => u.replace(/-/g, '')).join(''), 'hex'));

  it('reads `count` uuids from the `offset`-th, in their order', () => {
    expect(uuidsAt(ids, 0, 3)).toEqual(uuids);
    expect(uuidsAt(ids, 1, 1)).toEqual([uuids[1]]);
    expect(uuidsAt(ids, 2, 15)).toEqual([uuids[2]]);
  });

  it('reads nothing past the end or from no ids', () => {
    expect(uuidsAt(ids, 3, 15)).toEqual([]);
    expect(uuidsAt(new Uint8Array(0), 0, 15)).toEqual([]);
  });

  it('reads a view of a larger buffer at its own offset', () => {
    const padded = new Uint8Array(64);
    padded.set(ids, 8);
    expect(uuidsAt(padded.subarray(8, 8 + ids.length), 1, 2)).toEqual(uuids.slice(1));
  });
});

describe('keepIds', () => {
  const uuid = (n: number) => `00000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
  const page = (from: number, count: number, version = '7.1') =>
    Array.from({ length: count }, (_, i) => ({ id: uuid(from + i), _version: version }));
  const search = (): KeptSearch => ({ total: 1001, version: '7.1', walked: 50_000 });

  it('keeps the ids of pages read in order from the start, at the kept version', () => {
    const kept = search();
    const first = page(0, 15);
    expect(keepIds(kept, 0, first)).toBe(first);
    keepIds(kept, 15, page(15, 15));
    expect(uuidsAt(kept.ids!, 0, 100)).toEqual(Array.from({ length: 30 }, (_, i) => uuid(i)));
  });

  it('keeps nothing from a page that does not start where the kept ids end', () => {
    const kept = search();
    keepIds(kept, 15, page(15, 15));
    expect(kept.ids).toBeUndefined();
    keepIds(kept, 0, page(0, 15));
    keepIds(kept, 45, page(45, 15));
    keepIds(kept, 0, page(0, 15));
    expect(uuidsAt(kept.ids!, 0, 100)).toEqual(Array.from({ length: 15 }, (_, i) => uuid(i)));
  });

  it('keeps nothing from a page read at another version, or an empty one', () => {
    const kept = search();
    keepIds(kept, 0, page(0, 15, '8.1'));
    keepIds(kept, 0, []);
    expect(kept.ids).toBeUndefined();
  });

  it('keeps at most the first 1,000', () => {
    const kept = search();
    for (let offset = 0; offset < 1020; offset += 15) keepIds(kept, offset, page(offset, 15));
    expect(kept.ids!.length).toBe(16 * 1000);
    expect(uuidsAt(kept.ids!, 999, 1)).toEqual([uuid(999)]);
  });
});
