import { fetchPage, MAX_OFFSET, pageOffset, paginated } from './pagination';

describe('paginated', () => {
  it('computes last_page, at least 1', () => {
    expect(paginated([], 0, 1, 15)).toEqual({
      data: [],
      current_page: 1,
      per_page: 15,
      total: 0,
      last_page: 1,
      total_exact: true,
    });
    expect(paginated([], 1000, 2, 15, false)).toMatchObject({ total: 1000, last_page: 67, total_exact: false });
    expect(paginated([], 31, 3, 15).last_page).toBe(3);
  });
});

describe('pageOffset', () => {
  it('stops the offset at MAX_OFFSET, however large the page', () => {
    expect(pageOffset(undefined, 15)).toEqual({ page: 1, offset: 0 });
    expect(pageOffset(3, 15)).toEqual({ page: 3, offset: 30 });
    expect(pageOffset(1e20, 15)).toEqual({ page: 1e20, offset: MAX_OFFSET });
    expect(pageOffset(Number.MAX_VALUE, 15)).toEqual({ page: Number.MAX_VALUE, offset: MAX_OFFSET });
  });
});

describe('fetchPage', () => {
  // A list of `count` rows numbered from 1, read at an offset.
  const rowsOf = (count: number) => (offset: number, limit: number) => {
    const rows = Array.from({ length: Math.max(0, Math.min(limit, count - offset)) }, (_, i) => offset + i + 1);
    return Promise.resolve<[number[], number]>([rows, count]);
  };
  const page = (count: number, n: number, search?: string) => fetchPage(n, 15, rowsOf(count), (row) => row, search);

  it('answers a search past 1,000 matches with the cap and no row past it', async () => {
    expect(await page(1001, 1, 'x')).toMatchObject({ total: 1000, last_page: 67, total_exact: false });
    expect((await page(1001, 67, 'x')).data).toEqual([991, 992, 993, 994, 995, 996, 997, 998, 999, 1000]);
    expect(await page(1001, 68, 'x')).toMatchObject({ data: [], total: 1000, last_page: 67, total_exact: false });
  });

  it('counts exactly up to 1,000 matches, and without a search', async () => {
    expect(await page(1000, 67, 'x')).toMatchObject({ total: 1000, last_page: 67, total_exact: true });
    expect(await page(1001, 67)).toMatchObject({ total: 1001, last_page: 67, total_exact: true });
    expect((await page(1001, 67, '')).data.at(-1)).toBe(1001);
  });
});
