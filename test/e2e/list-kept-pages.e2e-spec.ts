/**
 * A searched page is kept by id under the scope's version (ListTotals.keepPage) and read again by id
 * while the version stands. These tests ask for the same searched pages again after every kind of
 * change and expect exactly the page the search finds in the database at that moment: same rows,
 * same order, current values. A kept page served after a change of its rows' match, scope or place
 * in the list would fail them.
 */
import { randomBytes } from 'crypto';
import { createTestApp, TestApp } from '../support/app';
import { createPatient, createStudy } from '../support/clinical-factories';
import { createClinic } from '../support/factories';

jest.setTimeout(60_000);

describe('searched pages read again by id stay the pages the search finds', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
  });
  afterAll(() => t.close());

  const page = async (list: string, token: string, search: string, pageNo: number) => {
    const response = await t.http.get(`/api/${list}`, { token, query: { search, page: String(pageNo) } });
    expect(response.status).toBe(200);
    return response.body as { data: Array<Record<string, unknown>>; total: number };
  };

  /** The studies page as the database orders it now: the list's order, the fragment, the scope. */
  const expectedStudies = async (search: string, unitId: string | null, pageNo: number) =>
    (
      await t.db.query(
        `SELECT id FROM studies WHERE tenant_id = $1 AND ($2::uuid IS NULL OR unit_id = $2) AND patient_name LIKE $3
          ORDER BY study_date DESC, created_at DESC, id DESC LIMIT 15 OFFSET $4`,
        [clinic.tenant.id, unitId, `%${search}%`, (pageNo - 1) * 15],
      )
    ).map((row: { id: string }) => row.id);

  /**
   * Pages 1 and 2 of the search, each asked twice per caller (the second read is the kept one), are
   * the pages the database orders now (`expected`, per caller's scope and page).
   */
  const expectPagesAsDatabase = async <Scope>(
    list: 'studies' | 'patients',
    search: string,
    callers: ReadonlyArray<readonly [string, Scope]>,
    expected: (scope: Scope, pageNo: number) => Promise<string[]>,
  ) => {
    for (const [token, scope] of callers) {
      for (const pageNo of [1, 2]) {
        const wanted = await expected(scope, pageNo);
        for (let read = 0; read < 2; read++) {
          expect((await page(list, token, search, pageNo)).data.map((row) => row.id)).toEqual(wanted);
        }
      }
    }
  };

  const expectStudiesPages = (search: string) =>
    expectPagesAsDatabase(
      'studies',
      search,
      [
        [clinic.adminToken, null],
        [clinic.token1, clinic.unit1.id],
      ],
      (unitId: string | null, pageNo) => expectedStudies(search, unitId, pageNo),
    );

  it('studies: after a date, a creation time, a name, a unit, a deletion and a report status change', async () => {
    const word = `Kp${randomBytes(4).toString('hex')}`;
    const studies = [];
    for (let i = 0; i < 20; i++) {
      studies.push(
        await createStudy(t.db, {
          tenant_id: clinic.tenant.id,
          unit_id: i % 4 === 0 ? clinic.unit2.id : clinic.unit1.id,
          patient_name: `Maria ${word} ${i}`,
          study_date: `2024-02-${String(i + 1).padStart(2, '0')}`,
        }),
      );
    }
    await expectStudiesPages(word);

    // The oldest study becomes the newest: the kept pages' order is no longer the list's.
    await t.db.query(`UPDATE studies SET study_date = '2025-06-01' WHERE id = $1`, [studies[1].id]);
    await expectStudiesPages(word);
    // Two studies of one date, ordered by their creation times.
    await t.db.query(`UPDATE studies SET study_date = '2025-06-01', created_at = now() + interval '1 hour' WHERE id = $1`, [
      studies[5].id,
    ]);
    await expectStudiesPages(word);
    await t.db.query(`UPDATE studies SET created_at = now() + interval '2 hours' WHERE id = $1`, [studies[1].id]);
    await expectStudiesPages(word);

    await t.db.query(`UPDATE studies SET patient_name = 'Ana Costa' WHERE id = $1`, [studies[19].id]);
    await expectStudiesPages(word);
    await t.db.query(`UPDATE studies SET unit_id = $1 WHERE id = $2`, [clinic.unit2.id, studies[18].id]);
    await expectStudiesPages(word);
    await t.db.query(`DELETE FROM studies WHERE id = $1`, [studies[17].id]);
    await expectStudiesPages(word);
    expect((await page('studies', clinic.adminToken, word, 1)).total).toBe(18);

    // A change that moves no page (the version stays): the rows read by id show it at once.
    const first = (await page('studies', clinic.adminToken, word, 1)).data[0];
    await t.db.query(`UPDATE studies SET report_status = 'final' WHERE id = $1`, [first.id]);
    const again = (await page('studies', clinic.adminToken, word, 1)).data[0];
    expect(again).toMatchObject({ id: first.id, report_status: 'final' });
    await expectStudiesPages(word);
  });

  it("patients: after a rename and a creation time change, and never another clinic's", async () => {
    const word = `Pq${randomBytes(4).toString('hex')}`;
    const patients = [];
    for (let i = 0; i < 24; i++) {
      patients.push(
        await createPatient(t.db, clinic.tenant.id, { patient_name: `Silva^${word}^${String(i).padStart(2, '0')}` }),
      );
    }
    const other = await createClinic(t.db, t.http);
    await createPatient(t.db, other.tenant.id, { patient_name: `Silva^${word}^99` });
    const expected = async (tenantId: string, pageNo: number) =>
      (
        await t.db.query(
          `SELECT id FROM patients WHERE tenant_id = $1 AND patient_name LIKE $2
            ORDER BY patient_name ASC, created_at DESC, id ASC LIMIT 20 OFFSET $3`,
          [tenantId, `%${word}%`, (pageNo - 1) * 20],
        )
      ).map((row: { id: string }) => row.id);
    const expectPages = () =>
      expectPagesAsDatabase(
        'patients',
        word,
        [
          [clinic.adminToken, clinic.tenant.id],
          [other.adminToken, other.tenant.id],
        ],
        expected,
      );
    await expectPages();
    expect((await page('patients', other.adminToken, word, 1)).total).toBe(1);

    await t.db.query(`UPDATE patients SET patient_name = $1 WHERE id = $2`, [`Silva^${word}^00a`, patients[23].id]);
    await expectPages();
    // One name for all: the creation time alone orders them, and the oldest, last on page 2,
    // becomes the newest, first on page 1.
    await t.db.query(`UPDATE patients SET patient_name = $1 WHERE tenant_id = $2 AND patient_name LIKE $3`, [
      `Silva^${word}^same`,
      clinic.tenant.id,
      `%${word}%`,
    ]);
    await expectPages();
    await t.db.query(`UPDATE patients SET created_at = now() + interval '1 hour' WHERE id = $1`, [patients[0].id]);
    await expectPages();
    expect((await page('patients', clinic.adminToken, word, 1)).data[0].id).toBe(patients[0].id);
  });
});
