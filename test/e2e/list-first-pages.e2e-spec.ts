/**
 * A first search of a scope larger than a walk of the whole (10,000 rows) reads its page in the
 * statement that counts it when the plan would collect its matches (ListSearch.first,
 * listFirstPageSql), and so does a first search the plan walks, with the walk's cap from its sizes.
 * The gate of a collected page and the cap of a walk are rules written twice, in TypeScript
 * (collectsFirstPage, walkCap) and in SQL (collectsFirstPageSql, walkCapSql): each pair is fed the
 * same random sizes and must agree. Then first searches of a clinic of 10,500 studies and
 * patients, with few matches and many, on shallow and deep pages and for every role, must give the
 * page and total the database gives.
 */
import { collectsFirstPage, collectsFirstPageSql, DIRECT_OFFSET_MAX, walkCap, walkCapSql } from '../../src/database/list';
import { Prng } from '../fuzz/support/prng';
import { createTestApp, TestApp } from '../support/app';
import { createClinic, createSuperAdminUser } from '../support/factories';

jest.setTimeout(120_000);

const ROWS = 10_500;
const PAGE = 15;

describe('first searches read a collected page with their count', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let superToken: string;
  const seed = Number(process.env.SEARCH_SEED ?? Date.now() % 1_000_000);
  const prng = new Prng(seed);

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    // Names with a rare word (RARO<n % 40>: about 260 each), a common one (every row) and ids.
    await t.db.query(
      `INSERT INTO patients (tenant_id, patient_id, patient_name)
       SELECT $1, 'WQP' || n, 'SILVA^RARO' || (n % 40) || '^' || n FROM generate_series(1, ${ROWS}) n`,
      [clinic.tenant.id],
    );
    await t.db.query(
      `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name,
                            accession_number, study_date, modalities, report_status, created_at)
       SELECT $1, CASE WHEN n % 3 = 0 THEN $3::uuid ELSE $2::uuid END, 'first-' || n || '-' || $4, '1.2.7.' || n || '.' || $4,
              'WQP' || n, 'SILVA^RARO' || (n % 40) || '^' || n, 'WQA' || n, date '2020-01-01' + (n % 2000), '{CT}', 'pending', now()
         FROM generate_series(1, ${ROWS}) n`,
      [clinic.tenant.id, clinic.unit1.id, clinic.unit2.id, clinic.tenant.id.slice(0, 8)],
    );
  });
  afterAll(() => t.close());

  it('the SQL gate and the TypeScript rule agree on the same sizes', async () => {
    const cases = Array.from({ length: 3_000 }, () => ({
      indexed: prng.next() < 0.9,
      walked: Math.floor(prng.next() * 40_000),
      total: Math.floor(prng.next() ** 3 * 40_000),
      offset: PAGE * Math.floor(prng.next() * 30),
    }));
    // Around the edge too: totals where the walk's length meets the matches' cost.
    for (const walked of [10_000, 10_001, 200_000]) {
      for (const offset of [0, DIRECT_OFFSET_MAX, DIRECT_OFFSET_MAX + PAGE]) {
        const edge = Math.floor(Math.sqrt(((offset + PAGE) * walked) / 8));
        for (const total of [edge - 1, edge, edge + 1, offset, offset + 1])
          cases.push({ indexed: true, walked, total, offset });
      }
    }
    const gates = [...new Set(cases.map((c) => c.offset))].map(
      (offset) => `WHEN ${offset} THEN ${collectsFirstPageSql('m', offset, PAGE)}`,
    );
    const [{ answers }] = await t.db.query(
      `SELECT array_agg(CASE m.offset_ ${gates.join(' ')} END ORDER BY m.n) AS answers
         FROM unnest($1::boolean[], $2::bigint[], $3::bigint[], $4::int[]) WITH ORDINALITY
              AS m(_indexed, _walked, _total, offset_, n)`,
      [cases.map((c) => c.indexed), cases.map((c) => c.walked), cases.map((c) => c.total), cases.map((c) => c.offset)],
    );
    const disagreeing = cases.filter((c, n) => answers[n] !== collectsFirstPage(c.total, c.walked, c.indexed, c.offset, PAGE));
    expect({ seed, disagreeing }).toEqual({ seed, disagreeing: [] });
    // Both answers occur, or the comparison proves little.
    expect(new Set(answers)).toEqual(new Set([true, false]));
  });

  it("the SQL walk cap and walkCap agree on the same sizes, as the statement's numeric sums", async () => {
    const cases = Array.from({ length: 3_000 }, () => ({
      walked: Math.floor(prng.next() ** 2 * 600_000),
      total: Math.floor(prng.next() ** 3 * 600_000),
      offset: PAGE * Math.floor(prng.next() * 21),
    }));
    for (const walked of [0, 1, 9_999, 10_000, 10_001, 200_000]) {
      for (const total of [0, 1, 15, 16, 599, 600, walked]) cases.push({ walked, total, offset: 0 });
    }
    const caps = [...new Set(cases.map((c) => c.offset))].map(
      (offset) => `WHEN ${offset} THEN ${walkCapSql('m._total', 'm._walked', offset, PAGE)}`,
    );
    const [{ answers }] = await t.db.query(
      `SELECT array_agg(CASE m.offset_ ${caps.join(' ')} END ORDER BY m.n) AS answers
         FROM unnest($1::numeric[], $2::numeric[], $3::int[]) WITH ORDINALITY AS m(_walked, _total, offset_, n)`,
      [cases.map((c) => c.walked), cases.map((c) => c.total), cases.map((c) => c.offset)],
    );
    const disagreeing = cases.filter((c, n) => Number(answers[n]) !== walkCap(c.total, c.walked, c.offset, PAGE));
    expect({ seed, disagreeing }).toEqual({ seed, disagreeing: [] });
    // Caps at the floor, of the whole scope and from the spread all occur.
    expect(new Set(answers.map(Number)).size).toBeGreaterThan(1_000);
  });

  it('gives the page and total the database gives, for every role, shallow and deep', async () => {
    const callers = [
      { caller: 'tenant admin', token: clinic.adminToken, scope: 'tenant_id = $1' },
      { caller: 'unit user', token: clinic.token1, scope: 'tenant_id = $1 AND unit_id = $2' },
      // Every clinic: only fragments no other test file's names hold (RARO).
      { caller: 'super admin', token: superToken, scope: 'TRUE' },
    ];
    // Of the clinic's 10,500 studies: "raro3^1" 38 (collected, counted through the search index),
    // "wqa771" 11 (the same), "wqa77" 111 (collected, counted through the index: 5 characters with
    // a digit), "raro17^" 262 and "raro1" 2,887 (walked), "silva^r" every study (walked, a pair
    // piece). Each search is new to the process the first time it is asked (its key holds the
    // fragment and the scope).
    for (const fragment of ['raro3^1', 'wqa771', 'wqa77', 'raro17^', 'raro1', 'silva^r']) {
      for (const { caller, token, scope } of callers) {
        if (caller === 'super admin' && !fragment.startsWith('raro')) continue;
        const studies: Array<{ id: string }> = await t.db.query(
          `SELECT id FROM studies
            WHERE ($1::uuid, $2::uuid) IS NOT NULL AND ${scope} AND lower(patient_name || ' ' || patient_id || ' ' || coalesce(accession_number, '')) LIKE $3
            ORDER BY study_date DESC, created_at DESC, id DESC`,
          [clinic.tenant.id, clinic.unit1.id, `%${fragment}%`],
        );
        for (const pageNo of [1, 2, DIRECT_OFFSET_MAX / PAGE + 1, DIRECT_OFFSET_MAX / PAGE + 2]) {
          const response = await t.http.get('/api/studies', { token, query: { search: fragment, page: String(pageNo) } });
          expect(response.status).toBe(200);
          expect({
            caller,
            fragment,
            pageNo,
            total: response.body.total,
            ids: response.body.data.map((s: { id: string }) => s.id),
          }).toEqual({
            caller,
            fragment,
            pageNo,
            total: studies.length,
            ids: studies.slice((pageNo - 1) * PAGE, pageNo * PAGE).map((s) => s.id),
          });
        }
      }
      const patients: Array<{ id: string }> = await t.db.query(
        `SELECT id FROM patients WHERE tenant_id = $1 AND lower(patient_name || ' ' || patient_id) LIKE $2
          ORDER BY patient_name ASC, created_at DESC, id ASC`,
        [clinic.tenant.id, `%${fragment}%`],
      );
      for (const pageNo of [1, 2]) {
        const response = await t.http.get('/api/patients', {
          token: clinic.adminToken,
          query: { search: fragment, page: String(pageNo) },
        });
        expect(response.status).toBe(200);
        expect({
          fragment,
          pageNo,
          total: response.body.total,
          ids: response.body.data.map((p: { id: string }) => p.id),
        }).toEqual({
          fragment,
          pageNo,
          total: patients.length,
          ids: patients.slice((pageNo - 1) * response.body.per_page, pageNo * response.body.per_page).map((p) => p.id),
        });
      }
    }
  });
});
