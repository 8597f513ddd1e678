import { paginated } from './pagination';

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
