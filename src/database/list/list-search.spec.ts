import { uuidsAt } from './list-search';

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
