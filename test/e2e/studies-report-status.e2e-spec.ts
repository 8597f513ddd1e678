/**
 * GET /api/studies?report_status=: the reporting worklist. Only that status, within the caller's
 * walls, combinable with search and patient_uuid; an exact total kept under the scope's version
 * (a report's status change moves it); anything but pending, draft or final is a 422.
 */
import { createTestApp, TestApp } from '../support/app';
import { createPatient, createStudy } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser } from '../support/factories';

jest.setTimeout(60_000);

type Status = 'pending' | 'draft' | 'final';

describe('GET /api/studies?report_status=', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let superToken: string;

  const list = async (token: string, query: Record<string, string>) => {
    const res = await t.http.get('/api/studies', { token, query });
    expect(res.status).toBe(200);
    return res.body as {
      data: Array<{ id: string; report_status: Status }>;
      total: number;
      total_exact: boolean;
      last_page: number;
    };
  };
  /** The ids the database holds for that status and scope, in list order. */
  const expected = async (where: string, params: unknown[]) =>
    (
      (await t.db.query(
        `SELECT id FROM studies s WHERE ${where} ORDER BY s.study_date DESC, s.created_at DESC, s.id DESC`,
        params,
      )) as Array<{ id: string }>
    ).map((row) => row.id);

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
    const statuses: Status[] = ['pending', 'draft', 'final'];
    for (let n = 0; n < 60; n++) {
      const owner = n % 4 === 3 ? other : clinic;
      await createStudy(t.db, {
        tenant_id: owner.tenant.id,
        unit_id: n % 2 ? owner.unit1.id : owner.unit2.id,
        patient_name: n % 5 === 0 ? `SILVA^ANA ${n}` : `SOUZA^JOSE ${n}`,
        study_date: `2024-02-${String(1 + (n % 28)).padStart(2, '0')}`,
        report_status: statuses[n % 3],
      });
    }
  });
  afterAll(() => t.close());

  it.each(['pending', 'draft', 'final'] as Status[])(
    '%s: only that status, in list order, per wall, exact totals',
    async (status) => {
      const walls = [
        { token: superToken, where: 's.report_status = $1', params: [status] },
        { token: clinic.adminToken, where: 's.report_status = $1 AND s.tenant_id = $2', params: [status, clinic.tenant.id] },
        { token: clinic.token1, where: 's.report_status = $1 AND s.unit_id = $2', params: [status, clinic.unit1.id] },
        { token: other.token1, where: 's.report_status = $1 AND s.unit_id = $2', params: [status, other.unit1.id] },
      ];
      for (const wall of walls) {
        const ids = await expected(wall.where, wall.params);
        expect(ids.length).toBeGreaterThan(0);
        const body = await list(wall.token, { report_status: status });
        expect(body.data.map((row) => row.id)).toEqual(ids.slice(0, 15));
        expect(body.data.every((row) => row.report_status === status)).toBe(true);
        expect({ total: body.total, exact: body.total_exact }).toEqual({ total: ids.length, exact: true });
      }
    },
  );

  it('combines with search and patient_uuid, never leaving the walls', async () => {
    const searched = await list(clinic.token1, { report_status: 'final', search: 'silva' });
    const ids = await expected(`s.report_status = 'final' AND s.unit_id = $1 AND s.patient_name LIKE 'SILVA%'`, [
      clinic.unit1.id,
    ]);
    expect(searched.data.map((row) => row.id)).toEqual(ids);
    expect({ total: searched.total, exact: searched.total_exact }).toEqual({ total: ids.length, exact: true });

    const patient = await createPatient(t.db, other.tenant.id);
    const mine = await createStudy(t.db, {
      tenant_id: other.tenant.id,
      unit_id: other.unit1.id,
      patient,
      report_status: 'draft',
    });
    await createStudy(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id, patient, report_status: 'final' });
    const ofPatient = await list(other.adminToken, { report_status: 'draft', patient_uuid: patient.id });
    expect(ofPatient).toMatchObject({ total: 1, total_exact: true, data: [{ id: mine.id }] });
    // Another clinic asking for that patient's studies sees none.
    expect(await list(clinic.adminToken, { report_status: 'draft', patient_uuid: patient.id })).toMatchObject({
      total: 0,
      data: [],
    });
  });

  it('follows a report status change at once (the total is kept under the version it moves)', async () => {
    const before = await list(clinic.adminToken, { report_status: 'draft' });
    const study = await createStudy(t.db, {
      tenant_id: clinic.tenant.id,
      unit_id: clinic.unit1.id,
      report_status: 'pending',
      study_date: '2030-01-01',
    });
    expect((await list(clinic.adminToken, { report_status: 'draft' })).total).toBe(before.total);
    await t.db.query(`UPDATE studies SET report_status = 'draft' WHERE id = $1`, [study.id]);
    const after = await list(clinic.adminToken, { report_status: 'draft' });
    expect(after.total).toBe(before.total + 1);
    expect(after.data.map((row) => row.id)).toContain(study.id);
    await t.db.query(`UPDATE studies SET report_status = 'final' WHERE id = $1`, [study.id]);
    expect((await list(clinic.adminToken, { report_status: 'draft' })).total).toBe(before.total);
  });

  it.each([['signed'], ['PENDING'], [''], ['pending,final']])('report_status=%p is a 422 naming the field', async (value) => {
    const res = await t.http.get('/api/studies', { token: clinic.adminToken, query: { report_status: value } });
    expect(res.status).toBe(422);
    expect(res.body).toEqual({ message: expect.any(String), errors: { report_status: [expect.any(String)] } });
  });

  it('report_status given twice is a 422, not a 500', async () => {
    const res = await t.http.get('/api/studies?report_status=draft&report_status=final', { token: clinic.adminToken });
    expect(res.status).toBe(422);
    expect(res.body.errors).toHaveProperty('report_status');
  });
});
