import { parseCorsOrigins } from './cors';
import { jsonDepth } from './request-limits';

describe('security helpers', () => {
  it('measures JSON depth iteratively, stopping early past the limit', () => {
    expect(jsonDepth('x')).toBe(0);
    expect(jsonDepth({})).toBe(1);
    expect(jsonDepth({ a: [{ b: 1 }] })).toBe(3);
    let deep: unknown = 1;
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(jsonDepth(deep)).toBe(200_000);
    expect(jsonDepth(deep, 64)).toBe(65);
  });

  it('reads CORS_ORIGINS as a list of origins without trailing slashes', () => {
    expect(parseCorsOrigins('')).toEqual([]);
    expect(parseCorsOrigins(undefined)).toEqual([]);
    expect(parseCorsOrigins(' https://a.example/ , http://localhost:5173,')).toEqual([
      'https://a.example',
      'http://localhost:5173',
    ]);
  });
});
