/**
 * The list pages the hand-written list SQL produces, compared with plain ORDER BY ... OFFSET queries:
 * shallow pages (one ordered scan), deep pages (ids first, then the rows), and a search whose page
 * is found by walking the list order (a fragment most rows match) or through the trigram indexes
 * (a rare fragment).
 */
import { createTestApp, TestApp } from '../support/app';
import { createClinic } from '../support/factories';

jest.setTimeout(60_000);

const STUDIES = 340; // 23 pages of 15: page 22 starts at offset 315, past the direct-scan limit.
const PATIENTS = 330; // 17 pages of 20: page 17 starts at offset 320.

describe('list pages, shallow and deep, with and without search', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;

  const ids = async (url: string, token: string, query: Record<string, string>) => {
    const response = await t.http.get(url, { token, query });
    expect(response.status).toBe(200);
    return { ids: (response.body.data as Array<{ id: string }>).map((row) => row.id), body: response.body };
  };
  const expectedStudies = async (where: string, params: unknown[], offset: number) =>
    (
      await t.db.query(
        `SELECT id FROM studies s WHERE ${where} ORDER BY s.study_date DESC, s.created_at DESC, s.id DESC OFFSET ${offset} LIMIT 15`,
        params,
      )
    ).map((row: { id: string }) => row.id);

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
    // Many studies share a date and some a created_at, so the id tie-break decides their order.
    await t.db.query(
      `INSERT INTO patients (tenant_id, patient_id, patient_name, created_at)
       SELECT $1, 'LP-' || n, CASE WHEN n = 7 THEN 'Raro Quintal' ELSE 'Maria Silva ' || (n % 9) END,
              timestamptz '2024-01-01' + (n % 5) * interval '1 hour'
         FROM generate_series(1, ${PATIENTS}) AS n`,
      [clinic.tenant.id],
    );
    await t.db.query(
      `INSERT INTO studies (tenant_id, unit_id, patient_uuid, imgsrv_study_id, study_instance_uid, patient_id, patient_name,
                            accession_number, study_date, created_at)
       SELECT $1, CASE WHEN n % 3 = 0 THEN $3::uuid ELSE $2::uuid END, p.id, 'lp-' || $1 || '-' || n, '1.2.99.' || n, p.patient_id,
              p.patient_name, 'AC' || lpad(n::text, 6, '0'), date '2024-03-01' - (n % 40), timestamptz '2024-03-02' + (n % 7) * interval '1 minute'
         FROM generate_series(1, ${STUDIES}) AS n
         JOIN patients p ON p.tenant_id = $1 AND p.patient_id = 'LP-' || (1 + n % ${PATIENTS})`,
      [clinic.tenant.id, clinic.unit1.id, clinic.unit2.id],
    );
  });
  afterAll(() => t.close());

  it.each([1, 2, 21, 22, 23, 24])('studies page %i is the same as ORDER BY ... OFFSET', async (page) => {
    const got = await ids('/api/studies', clinic.adminToken, { page: String(page) });
    expect(got.ids).toEqual(await expectedStudies('s.tenant_id = $1', [clinic.tenant.id], (page - 1) * 15));
    expect(got.body).toMatchObject({ total: STUDIES, current_page: page, per_page: 15, last_page: 23 });
  });

  it("a unit user's deep page, and a page past the end with its total", async () => {
    const inUnit = Number((await t.db.query(`SELECT count(*) AS n FROM studies WHERE unit_id = $1`, [clinic.unit1.id]))[0].n);
    const last = Math.ceil(inUnit / 15);
    const got = await ids('/api/studies', clinic.token1, { page: String(last) });
    expect(got.ids).toEqual(
      await expectedStudies('s.tenant_id = $1 AND s.unit_id = $2', [clinic.tenant.id, clinic.unit1.id], (last - 1) * 15),
    );
    const past = await ids('/api/studies', clinic.token1, { page: String(last + 5) });
    expect(past.ids).toEqual([]);
    expect(past.body).toMatchObject({ total: inUnit, current_page: last + 5, last_page: last });
  });

  it('a search matching most rows (list-order walk) pages like ORDER BY ... OFFSET, deep pages included', async () => {
    const where = `s.tenant_id = $1 AND (s.patient_name ILIKE $2 OR s.patient_id ILIKE $2 OR s.accession_number ILIKE $2)`;
    const matching = Number(
      (await t.db.query(`SELECT count(*) AS n FROM studies s WHERE ${where}`, [clinic.tenant.id, '%silva%']))[0].n,
    );
    for (const page of [1, 2, 22]) {
      const got = await ids('/api/studies', clinic.adminToken, { search: 'SILVA', page: String(page) });
      expect(got.ids).toEqual(await expectedStudies(where, [clinic.tenant.id, '%silva%'], (page - 1) * 15));
      expect(got.body.total).toBe(matching);
    }
  });

  it('a rare fragment (trigram plan) and an accession number find exactly their studies', async () => {
    const rare = await ids('/api/studies', clinic.adminToken, { search: 'raro quin' });
    const expected = await expectedStudies(`s.tenant_id = $1 AND s.patient_name = 'Raro Quintal'`, [clinic.tenant.id], 0);
    expect(expected.length).toBeGreaterThan(0);
    expect(rare.ids).toEqual(expected);
    expect(rare.body.total).toBe(expected.length);

    const accession = await ids('/api/studies', clinic.adminToken, { search: 'AC000123' });
    expect(accession.ids).toEqual(
      await expectedStudies(`s.tenant_id = $1 AND s.accession_number = 'AC000123'`, [clinic.tenant.id], 0),
    );
    expect(accession.body.total).toBe(1);

    const none = await ids('/api/studies', clinic.adminToken, { search: 'nobody-is-called-this' });
    expect(none.ids).toEqual([]);
    expect(none.body).toMatchObject({ total: 0, last_page: 1 });
  });

  it('patients pages, shallow and deep, and a search, in name order', async () => {
    const expectedPatients = async (where: string, params: unknown[], offset: number) =>
      (
        await t.db.query(
          `SELECT id FROM patients p WHERE ${where} ORDER BY p.patient_name ASC, p.created_at DESC, p.id ASC OFFSET ${offset} LIMIT 20`,
          params,
        )
      ).map((row: { id: string }) => row.id);
    for (const page of [1, 2, 16, 17, 18]) {
      const got = await ids('/api/patients', clinic.adminToken, { page: String(page) });
      expect(got.ids).toEqual(await expectedPatients('p.tenant_id = $1', [clinic.tenant.id], (page - 1) * 20));
      expect(got.body).toMatchObject({ total: PATIENTS, last_page: 17 });
    }
    const searched = await ids('/api/patients', clinic.adminToken, { search: 'silva 3', page: '2' });
    expect(searched.ids).toEqual(
      await expectedPatients(`p.tenant_id = $1 AND p.patient_name ILIKE '%silva 3%'`, [clinic.tenant.id], 20),
    );
    const unitOnly = await ids('/api/patients', clinic.token2, { page: '1' });
    expect(unitOnly.ids).toEqual(
      await expectedPatients(
        `p.tenant_id = $1 AND EXISTS (SELECT 1 FROM studies s WHERE s.patient_uuid = p.id AND s.unit_id = $2)`,
        [clinic.tenant.id, clinic.unit2.id],
        0,
      ),
    );
  });
});
