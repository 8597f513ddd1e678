import {
  COVERED_WALK_ROWS_PER_MATCH,
  ListSpec,
  collectsFirstPage,
  collectsFirstPageSql,
  DIRECT_OFFSET_MAX,
  listCountSql,
  listFirstPageSql,
  listKeptPageSql,
  listMatchesCountSql,
  listPageSql,
  plannedOnce,
  listScopeSql,
  listSearchCountSql,
  listSearchSql,
  listWalkPageSql,
  searchCountPlan,
  searchPlan,
  walkCap,
  walkCapSql,
  widerWalkCap,
  reachOf,
} from './list-query';
import { SqlParams } from './sql-params';

const SPEC: ListSpec = {
  from: 'things t',
  id: 't.id',
  columns: 't.id, t.name',
  order: 't.name ASC, t.id ASC',
  unindexedOrder: "(t.name || '') ASC, t.id ASC",
  orderColumns: 't.id, t.name',
  scope: { tenant: 't.tenant_id' },
  unitScope: (inUnit) => `EXISTS (SELECT 1 FROM studies s WHERE s.thing_id = t.id AND ${inUnit})`,
  searchText: 't.search_text',
  pieceCounts: { table: 'thing_piece_counts', tenantTable: 'thing_tenant_piece_counts', count: 'things', perUnit: false },
  walkColumns: 't.id, t.name, t.search_text',
};

describe('searchPlan', () => {
  it('walks the list order for a common fragment and collects the matches of a rare one', () => {
    // Largest tenant: 200,000 studies; a walk to fill page 1 visits 15 x 200,000 / matches rows.
    expect(searchPlan(38_000, 200_000, 0, 15, true)).toBe('walk'); // "silva": ~80 rows
    expect(searchPlan(2_900, 200_000, 0, 15, true)).toBe('walk'); // a surname on 1.4%: ~1,000 rows
    expect(searchPlan(1_100, 200_000, 0, 15, true)).toBe('index'); // ~2,700 rows to walk
    expect(searchPlan(1, 200_000, 0, 15, true)).toBe('index'); // an accession number
  });

  it('collects the matches when a deep page would make the walk long', () => {
    expect(searchPlan(38_000, 200_000, 7_500, 15, true)).toBe('index');
  });

  it('collects the matches of a search whose walk came back short (bunched), unless walking the whole scope costs less', () => {
    const covered = COVERED_WALK_ROWS_PER_MATCH;
    expect(searchPlan(1_858, 200_000, 0, 15, true, false, covered)).toBe('walk');
    expect(searchPlan(1_858, 200_000, 0, 15, true, true, covered)).toBe('index'); // "23010"
    expect(searchPlan(9_999, 200_000, 0, 15, true, true, covered)).toBe('index');
    expect(searchPlan(24_999, 200_000, 0, 15, true, true, covered)).toBe('index');
    expect(searchPlan(25_000, 200_000, 0, 15, true, true, covered)).toBe('walk'); // 8 x 25,000 >= 200,000
    expect(walkCap(25_000, 200_000, 0, 15, true)).toBe(200_000);
    expect(searchPlan(3, 200_000, 0, 15, false, true, covered)).toBe('walk');
  });

  it('walks sooner when a walk stays inside the order index (a collected match costs 8 walked entries)', () => {
    // Break-even at 200,000 rows and page 1: 15 x 200,000 / m <= 8 m, m >= 613.
    expect(searchPlan(1_300, 200_000, 0, 15, true)).toBe('index');
    expect(searchPlan(1_300, 200_000, 0, 15, true, false, COVERED_WALK_ROWS_PER_MATCH)).toBe('walk');
    expect(searchPlan(613, 200_000, 0, 15, true, false, COVERED_WALK_ROWS_PER_MATCH)).toBe('walk');
    expect(searchPlan(612, 200_000, 0, 15, true, false, COVERED_WALK_ROWS_PER_MATCH)).toBe('index');
    expect(searchPlan(1_300, 200_000, 7_500, 15, true, false, COVERED_WALK_ROWS_PER_MATCH)).toBe('index');
  });

  it('widens a short walk eightfold while that costs less than collecting the matches, and keeps the width as reach', () => {
    const covered = COVERED_WALK_ROWS_PER_MATCH;
    // The super admin's "3000": 41,067 matches in 1,000,000, the 15th at the 30,421st newest study.
    const first = walkCap(41_067, 1_000_000, 0, 15);
    expect(first).toBe(2_000);
    expect(widerWalkCap(first, 41_067, 1_000_000, covered)).toBe(16_000);
    expect(widerWalkCap(16_000, 41_067, 1_000_000, covered)).toBe(128_000); // <= 8 x 41,067 = 328,536
    expect(widerWalkCap(128_000, 41_067, 1_000_000, covered)).toBeNull(); // 1,024,000: the whole archive
    const reach = reachOf(128_000, 0, 15);
    expect(walkCap(41_067, 1_000_000, 0, 15, false, reach)).toBe(128_000);
    expect(walkCap(41_067, 1_000_000, 15, 15, false, reach)).toBe(256_000); // page 2 reaches twice as deep
    expect(searchPlan(41_067, 1_000_000, 0, 15, true, false, covered, reach)).toBe('walk');
    // Deep enough that the reach costs more than collecting: 8 x 41,067 < 300 x 128,000 / 60.
    expect(searchPlan(41_067, 1_000_000, 285, 15, true, false, covered, reach)).toBe('index');
    // "04017": 922 matches; 8 x 922 = 7,376 rows: a wider walk than its 65,076 would cost more.
    expect(widerWalkCap(walkCap(922, 1_000_000, 0, 15), 922, 1_000_000, covered)).toBeNull();
    // Never as wide as the scope: the bunched plan walks all of it (walkCap) or collects.
    expect(widerWalkCap(2_000, 1_000_000, 15_000, covered)).toBeNull();
  });

  it('caps a walk at four times the rows spread-out matches need, 2,000 at least', () => {
    expect(walkCap(1_858, 200_000, 0, 15)).toBe(6_459); // 15 x 200,000 / 1,858 = 1,615 rows expected
    expect(walkCap(38_000, 200_000, 0, 15)).toBe(2_000);
    expect(walkCap(38_000, 200_000, 285, 15)).toBe(6_316);
    expect(walkCap(0, 200_000, 0, 15)).toBe(12_000_000);
  });

  it('walks when the index cannot serve the fragment, whatever the matches', () => {
    expect(searchPlan(3, 200_000, 0, 15, false)).toBe('walk');
  });

  it("counts a walk over what is walked: for a unit, its studies; for a unit's patients, the tenant's", () => {
    expect(searchPlan(300, 3_000, 0, 15, true)).toBe('walk');
    expect(searchPlan(300, 200_000, 0, 15, true)).toBe('index');
    expect(searchPlan(0, 200_000, 0, 15, true)).toBe('index');
  });

  it('walks a scope of 10,000 rows or fewer whole, for its pages and its count, bunched or not', () => {
    expect(searchPlan(1, 10_000, 0, 15, true)).toBe('walk');
    expect(searchPlan(1, 10_000, 0, 15, true, true)).toBe('walk');
    expect(searchPlan(1, 10_001, 0, 15, true)).toBe('index');
    expect(walkCap(1, 3_453, 0, 15)).toBe(207_180);
    expect(walkCap(3_000, 9_000, 0, 15)).toBe(9_000);
    expect(searchCountPlan(10_000, true)).toBe('walk');
    expect(searchCountPlan(10_001, true)).toBe('index');
    expect(searchCountPlan(200_000, false)).toBe('walk');
  });
});

describe('list SQL', () => {
  it('scopes a tenant-only record for a unit user through its studies in the unit', () => {
    const p = new SqlParams();
    const sql = listScopeSql(SPEC, { kind: 'unit', tenantId: 'T', unitId: 'U' }, p);
    expect(sql).toBe(
      't.tenant_id = $1 AND EXISTS (SELECT 1 FROM studies s WHERE s.thing_id = t.id AND s.tenant_id = $2 AND s.unit_id = $3)',
    );
    expect(p.values).toEqual(['T', 'T', 'U']);
    expect(listScopeSql(SPEC, { kind: 'all' }, new SqlParams())).toBe('TRUE');
    expect(listScopeSql(SPEC, { kind: 'none' }, new SqlParams())).toBe('FALSE');
  });

  it("tests the tenant on the rows for a search through the tenant's own terms, a unit's own column in the scan", () => {
    const p = new SqlParams();
    expect(listScopeSql(SPEC, { kind: 'unit', tenantId: 'T', unitId: 'U' }, p, true)).toBe(
      '(t.tenant_id = $1 AND EXISTS (SELECT 1 FROM studies s WHERE s.thing_id = t.id AND s.tenant_id = $2 AND s.unit_id = $3)) IS TRUE',
    );
    expect(p.values).toEqual(['T', 'T', 'U']);
    expect(listScopeSql(SPEC, { kind: 'tenant', tenantId: 'T' }, new SqlParams(), true)).toBe('(t.tenant_id = $1) IS TRUE');
    expect(listScopeSql(SPEC, { kind: 'all' }, new SqlParams(), true)).toBe('TRUE');
    expect(listScopeSql(SPEC, { kind: 'none' }, new SqlParams(), true)).toBe('FALSE');
    const ofUnits: ListSpec = { ...SPEC, scope: { tenant: 't.tenant_id', unit: 't.unit_id' }, unitScope: undefined };
    const q = new SqlParams();
    expect(listScopeSql(ofUnits, { kind: 'unit', tenantId: 'T', unitId: 'U' }, q, true)).toBe(
      '(t.tenant_id = $1) IS TRUE AND t.unit_id = $2',
    );
    expect(q.values).toEqual(['T', 'U']);
    expect(listScopeSql(ofUnits, { kind: 'unit', tenantId: 'T', unitId: 'U' }, new SqlParams())).toBe(
      't.tenant_id = $1 AND t.unit_id = $2',
    );
  });

  it('matches the folded, escaped fragment, through the index terms or opaquely for a walk', () => {
    const p = new SqlParams();
    expect(listSearchSql(SPEC, 'Jo_%ão', p, 'index')).toBe(
      't.search_text LIKE (SELECT search_fold($1)) AND search_lexemes(t.search_text) @@ (SELECT search_query($2))',
    );
    expect(p.values).toEqual(['%Jo\\_\\%ão%', 'Jo_%ão']);
    const q = new SqlParams();
    expect(listSearchSql(SPEC, 'silva', q, 'walk')).toBe('coalesce(t.search_text LIKE (SELECT search_fold($1)), false)');
    const r = new SqlParams();
    expect(listSearchSql(SPEC, 'silva', r, 'index', 'tenant-a')).toBe(
      't.search_text LIKE (SELECT search_fold($1)) AND search_tenant_lexemes(t.tenant_id, t.search_text) @@ (SELECT search_tenant_query($2::uuid, $3))',
    );
    expect(r.values).toEqual(['%silva%', 'tenant-a', 'silva']);
    expect(q.values).toEqual(['%silva%']);
  });

  it('reads a shallow page directly and a deep one through its ids', () => {
    const p = new SqlParams();
    expect(listPageSql(SPEC, 'TRUE', 'NULL AS _total', p, 300, 15)).toBe(
      'SELECT t.id, t.name, NULL AS _total FROM things t WHERE TRUE ORDER BY t.name ASC, t.id ASC LIMIT $1 OFFSET $2',
    );
    const deep = listPageSql(SPEC, 'TRUE', 'NULL AS _total', new SqlParams(), 315, 15);
    expect(deep).toContain(
      'WHERE t.id IN (SELECT t.id FROM things t WHERE TRUE ORDER BY t.name ASC, t.id ASC LIMIT $1 OFFSET $2)',
    );
    expect(deep).toMatch(/ORDER BY t\.name ASC, t\.id ASC$/);
  });

  it('sorts only the ids of collected matches, at any depth, then reads the page whole', () => {
    const shallow = listPageSql(SPEC, 'TRUE', 'NULL AS _total', new SqlParams(), 0, 15, true);
    expect(shallow).toContain(
      "WHERE t.id IN (SELECT t.id FROM things t WHERE TRUE ORDER BY (t.name || '') ASC, t.id ASC LIMIT $1 OFFSET $2)",
    );
    expect(shallow).toMatch(/ORDER BY t\.name ASC, t\.id ASC$/);
    const deep = listPageSql(SPEC, 'TRUE', 'NULL AS _total', new SqlParams(), 315, 15, true);
    expect(deep).toContain(
      "WHERE t.id IN (SELECT t.id FROM things t WHERE TRUE ORDER BY (t.name || '') ASC, t.id ASC LIMIT $1 OFFSET $2)",
    );
    expect(deep).toMatch(/ORDER BY t\.name ASC, t\.id ASC$/);
  });

  it('writes the bounds of a page planned once into its text, shallow pages only', () => {
    const p = new SqlParams();
    const once = listPageSql(SPEC, `t.tenant_id = ${p.add('x')}`, 'NULL AS _total', p, 300, 15, true, true);
    expect(once).toContain("ORDER BY (t.name || '') ASC, t.id ASC LIMIT 15 OFFSET 300)");
    expect(p.values).toEqual(['x']);
    expect([0, 285, 300, 315].map(plannedOnce)).toEqual([true, true, true, false]);
    expect(() => listPageSql(SPEC, 'TRUE', '', new SqlParams(), 1.5, 15, true, true)).toThrow();
    expect(() => listPageSql(SPEC, 'TRUE', '', new SqlParams(), -15, 15, true, true)).toThrow();
  });

  it("reads a first search's collected page with its sizes, gated on them, bounds in the text", () => {
    const sql = listFirstPageSql(SPEC, 'SELECT 1', 't.x = $1', 30, 15).replace(/\s+/g, ' ');
    // The matches are collected once, with their order, for the count and the page.
    expect(sql).toMatch(/^WITH _matches AS MATERIALIZED \(SELECT t\.id, t\.name FROM things t WHERE t\.x = \$1\) SELECT /);
    expect(sql).toContain(
      'FROM (SELECT z.*, FALSE AS _kept FROM (SELECT 1 OFFSET 0) z OFFSET 0) m LEFT JOIN LATERAL (SELECT t.id FROM _matches t WHERE ((m._indexed AND',
    );
    expect(sql).toContain('ORDER BY t.name ASC, t.id ASC LIMIT 15 OFFSET 30) page ON TRUE');
    expect(sql).toContain('LEFT JOIN things t ON t.id = page.id ORDER BY t.name ASC, t.id ASC');
    expect(listMatchesCountSql).toBe('(SELECT count(*) FROM _matches)');
    expect(collectsFirstPageSql('m', DIRECT_OFFSET_MAX + 15, 15)).toBe('FALSE');
    expect(collectsFirstPage(10, 200_000, true, DIRECT_OFFSET_MAX + 15, 15)).toBe(false);
    expect(collectsFirstPage(10, 200_000, true, 0, 15)).toBe(true);
    expect(collectsFirstPage(10, 200_000, false, 0, 15)).toBe(false);
    expect(collectsFirstPage(5_000, 200_000, true, 0, 15)).toBe(false);
  });

  it("walks a first search's page in the same statement when asked, where it does not collect, up to walkCapSql", () => {
    const sql = listFirstPageSql(SPEC, 'SELECT 1', 't.x = $1', 30, 15, {
      scope: 't.tenant_id = $2',
      match: 't.search_text LIKE $3',
    }).replace(/\s+/g, ' ');
    const gate = `(${collectsFirstPageSql('m', 30, 15).replace(/\s+/g, ' ')})`;
    const cap = walkCapSql('m._total', 'm._walked', 30, 15).replace(/\s+/g, ' ');
    expect(sql).toContain(
      `LEFT JOIN LATERAL ((SELECT t.id FROM _matches t WHERE ${gate} ORDER BY t.name ASC, t.id ASC LIMIT 15 OFFSET 30) UNION ALL (`,
    );
    expect(sql).toContain(
      `(SELECT t.id FROM (SELECT t.id, t.name, t.search_text FROM things t WHERE t.tenant_id = $2 AND NOT ${gate} AND m._total > 30 ` +
        `ORDER BY t.name ASC, t.id ASC LIMIT ${cap}) t WHERE t.search_text LIKE $3 ORDER BY t.name ASC, t.id ASC LIMIT 15 OFFSET 30)) page ON TRUE`,
    );
    expect(cap).toBe(
      'greatest(2000, CASE WHEN m._walked <= 10000 THEN m._walked ELSE 0 END, ceil(4 * ((45 * m._walked)::float8 / greatest(1, m._total)::float8) - 1e-6))::bigint',
    );
  });

  it("reads a tenant's kept first page of a one-piece fragment, gated on its total, where it would collect or walk", () => {
    const spec: ListSpec = {
      ...SPEC,
      piecePages: {
        ids: (tenant, piece, limit, offset) =>
          `SELECT k.thing_id AS id FROM kept k WHERE k.tenant_id = ${tenant} AND k.piece = ${piece} LIMIT ${limit} OFFSET ${offset}`,
        rows: 15,
        minMatches: 50,
      },
    };
    const p = new SqlParams();
    const kept = listKeptPageSql(spec, 't1', 'silva', () => 't.tenant_id = $9', p, 0, 15);
    expect(kept?.gate('z._total')).toBe('(coalesce(search_piece($1), search_tenant_piece($1)) IS NOT NULL AND z._total >= 50)');
    expect(p.values).toEqual(['silva', 't1']);
    const sql = listFirstPageSql(spec, 'SELECT 1', 't.x = $1', 0, 15, { scope: 'TRUE', match: 'TRUE' }, kept).replace(
      /\s+/g,
      ' ',
    );
    expect(sql).toContain(
      'FROM (SELECT z.*, (coalesce(search_piece($1), search_tenant_piece($1)) IS NOT NULL AND z._total >= 50) AS _kept',
    );
    expect(sql).toContain('FROM _matches t WHERE (NOT m._kept AND (m._indexed AND');
    expect(sql).toContain('AND NOT m._kept AND m._total > 0 ORDER BY');
    expect(sql).toContain(
      'UNION ALL (SELECT k.id FROM (SELECT k.thing_id AS id FROM kept k WHERE k.tenant_id = $2 AND k.piece = coalesce(search_piece($1), search_tenant_piece($1)) LIMIT 15 OFFSET 0) k WHERE m._kept)) page ON TRUE',
    );
    // Every row the page names is tested against the list's conditions.
    expect(sql).toContain('LEFT JOIN things t ON t.id = page.id AND t.tenant_id = $9 ORDER BY');
    // Past the kept rows, or for a list that keeps none, no kept page, and no parameter added.
    const none = new SqlParams();
    const conditions = (q: SqlParams) => `t.tenant_id = ${q.add('t1')}`;
    expect(listKeptPageSql(spec, 't1', 'silva', conditions, none, 15, 15)).toBeNull();
    expect(listKeptPageSql(SPEC, 't1', 'silva', conditions, none, 0, 15)).toBeNull();
    expect(none.values).toEqual([]);
  });

  it('walks at most the cap of the scope in list order, testing only the walk columns, then reads the ids found', () => {
    const p = new SqlParams();
    const scope = `t.tenant_id = ${p.add('tenant')}`;
    const match = `t.search_text LIKE ${p.add('%a%')}`;
    const sql = listWalkPageSql(SPEC, scope, match, 'NULL AS _total', p, 0, 15, 6_459);
    expect(sql.replace(/\s+/g, ' ')).toBe(
      'SELECT t.id, t.name, NULL AS _total FROM things t WHERE t.id IN (SELECT t.id FROM (SELECT t.id, t.name, t.search_text ' +
        'FROM things t WHERE t.tenant_id = $1 ORDER BY t.name ASC, t.id ASC LIMIT $3) t WHERE t.search_text LIKE $2 ' +
        'ORDER BY t.name ASC, t.id ASC LIMIT $4 OFFSET $5) ORDER BY t.name ASC, t.id ASC',
    );
    expect(p.values).toEqual(['tenant', '%a%', 6_459, 15, 0]);
    expect(() => listWalkPageSql({ ...SPEC, walkColumns: undefined }, 'TRUE', 'TRUE', '', new SqlParams(), 0, 15, 1)).toThrow();
  });
});

describe('listSearchCountSql', () => {
  it('reads the piece counts of the scope for a one-piece fragment, else counts the conditions', () => {
    const p = new SqlParams();
    const counted = listCountSql(SPEC, 'TRUE');
    const sql = listSearchCountSql(SPEC, { kind: 'tenant', tenantId: 't1' }, 'rigue', counted, p);
    expect(sql).toContain('CASE WHEN search_piece($1) IS NOT NULL');
    expect(sql).toContain('FROM thing_piece_counts c WHERE c.piece = search_piece($1) AND c.tenant_id = $2');
    expect(sql).toContain('ELSE (SELECT count(*) FROM things t WHERE TRUE) END');
    expect(p.values).toEqual(['rigue', 't1']);
  });

  it('reads the tenant piece counts for a fragment across a separator or of 5-6 characters with a digit', () => {
    const p = new SqlParams();
    const sql = listSearchCountSql(SPEC, { kind: 'tenant', tenantId: 't1' }, 'a sil', 'TRUE', p).replace(/\s+/g, ' ');
    expect(sql).toContain(
      'WHEN search_tenant_piece($1) IS NOT NULL THEN (SELECT coalesce(sum(c.things), 0) FROM thing_tenant_piece_counts c ' +
        'WHERE c.piece = search_tenant_piece($1) AND c.tenant_id = $2)',
    );
    expect(p.values).toEqual(['a sil', 't1']);
  });

  it('reads no tenant piece counts for a unit: they are kept per tenant', () => {
    const p = new SqlParams();
    const sql = listSearchCountSql(
      { ...SPEC, pieceCounts: { ...SPEC.pieceCounts, perUnit: true } },
      { kind: 'unit', tenantId: 't1', unitId: 'u1' },
      'a sil',
      listCountSql(SPEC, 'x'),
      p,
    );
    expect(sql).toContain('FROM thing_piece_counts c WHERE c.piece = search_piece($1) AND c.tenant_id = $2 AND c.unit_id = $3');
    expect(sql).not.toContain('tenant_piece');
    expect(sql).toContain('ELSE (SELECT count(*) FROM things t WHERE x)');
  });

  it('counts the conditions when the piece counts cannot express the scope (a unit, per-tenant counts)', () => {
    const p = new SqlParams();
    const sql = listSearchCountSql(SPEC, { kind: 'unit', tenantId: 't1', unitId: 'u1' }, 'rigue', listCountSql(SPEC, 'x'), p);
    expect(sql).toBe('(SELECT count(*) FROM things t WHERE x)');
    expect(p.values).toEqual([]);
  });
});
