import { MAX_OFFSET, pageOffset, paginated } from './pagination';

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
