import {
  listFirstSearchSql,
  ListSpec,
  listPageSql,
  listScopeSql,
  listWalkPageSql,
  SEARCH_TOTAL_CAP,
  walkCap,
} from './list-query';
import { SqlParams } from './sql-params';

const SPEC: ListSpec = {
  from: 'things t',
  id: 't.id',
  columns: 't.id, t.name',
  order: 't.name ASC, t.id ASC',
  unindexedOrder: "(t.name || '') ASC, t.id ASC",
  scope: { tenant: 't.tenant_id', unit: 't.unit_id' },
  searchText: 't.search_text',
  walkColumns: 't.id, t.name, t.search_text',
  walkFrom: { field: 'name', condition: (name) => `t.name >= ${name}` },
};

describe('walkCap', () => {
  it('is four times what evenly spread matches need, at least 2,000 rows', () => {
    expect(walkCap(1001, 1_000_000, 0, 15)).toBe(Math.ceil((4 * 15 * 1_000_000) / 1001));
    expect(walkCap(1001, 20_000, 0, 15)).toBe(2_000);
    expect(walkCap(1001, 1_000_000, 990, 10)).toBe(Math.ceil((4 * 1000 * 1_000_000) / 1001));
  });
});

describe('list SQL', () => {
  it('binds the scope, and a unit scope of a tenant-only list through its unitScope', () => {
    const p = new SqlParams();
    expect(listScopeSql(SPEC, { kind: 'unit', tenantId: 'a', unitId: 'b' }, p)).toBe('t.tenant_id = $1 AND t.unit_id = $2');
    const tenantOnly: ListSpec = { ...SPEC, scope: { tenant: 't.tenant_id' }, unitScope: (inUnit) => `EXISTS (${inUnit})` };
    expect(listScopeSql(tenantOnly, { kind: 'unit', tenantId: 'a', unitId: 'b' }, p)).toBe(
      't.tenant_id = $3 AND EXISTS (s.tenant_id = $4 AND s.unit_id = $5)',
    );
    expect(listScopeSql(SPEC, { kind: 'all' }, p)).toBe('TRUE');
  });

  it('reads shallow pages in one ordered scan, deep or collected ones by their ids first', () => {
    const p = new SqlParams();
    expect(listPageSql(SPEC, 'TRUE', '', p, 0, 15)).toBe(
      'SELECT t.id, t.name FROM things t WHERE TRUE ORDER BY t.name ASC, t.id ASC LIMIT $1 OFFSET $2',
    );
    expect(listPageSql(SPEC, 'TRUE', '', p, 301, 15)).toContain(
      'WHERE t.id = ANY(ARRAY(SELECT t.id FROM things t WHERE TRUE ORDER BY t.name ASC',
    );
    expect(listPageSql(SPEC, 'TRUE', '', p, 0, 15, true)).toContain("ORDER BY (t.name || '') ASC, t.id ASC LIMIT $5 OFFSET $6");
  });

  it('collects a first search once, one past the cap, and walks at most `cap` rows of the scope', () => {
    const first = listFirstSearchSql(SPEC, 'x', '', new SqlParams(), 0, 15);
    expect(first).toContain(`(SELECT t.id, t.name, t.search_text FROM things t WHERE x LIMIT ${SEARCH_TOTAL_CAP + 1})`);
    expect(first).toContain(`t.id = ANY(ARRAY(SELECT t.id FROM _matches t WHERE c._total <= ${SEARCH_TOTAL_CAP}`);
    expect(first).toContain(
      `CASE WHEN row_number() OVER () = 1 THEN (SELECT string_agg(uuid_send(t.id), ''::bytea ORDER BY t.name ASC, t.id ASC)`,
    );
    // Read in list order: the first thousand's ids are known past the cap too; the page stops at the cap.
    const ordered = listFirstSearchSql(SPEC, 'x', '', new SqlParams(), 990, 15, 't.name ASC, t.id ASC');
    expect(ordered).toContain(`WHERE x ORDER BY t.name ASC, t.id ASC LIMIT ${SEARCH_TOTAL_CAP + 1})`);
    expect(ordered).toContain(
      "string_agg(uuid_send(t.id), ''::bytea ORDER BY t.name ASC, t.id ASC) FROM _matches t WHERE TRUE",
    );
    const q = new SqlParams();
    listFirstSearchSql(SPEC, 'x', '', q, 990, 15, 't.name ASC, t.id ASC');
    expect(q.values).toEqual([10, 990]);
    const p = new SqlParams();
    const sql = listWalkPageSql(SPEC, 'scope', 'match', '', p, 30, 15, 2000);
    expect(sql).toContain(
      '(SELECT t.id, t.name, t.search_text FROM things t WHERE scope ORDER BY t.name ASC, t.id ASC LIMIT $1) t WHERE match',
    );
    expect(p.values).toEqual([2000, 15, 30]);
  });
});
