/**
 * The `total` of the studies and patients lists comes from counters (unfiltered) or from a count kept
 * per scope version (searches, a unit's patients). These tests change the data between two requests
 * of the same list and expect the next total to be exact every time: a kept count must never be
 * served once anything it counted has changed.
 */
import { randomBytes } from 'crypto';
import { createTestApp, TestApp } from '../support/app';
import { createPatient, createStudy, PatientRow } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser, createTenant, createUnit } from '../support/factories';

jest.setTimeout(30_000);

describe('list totals stay exact while the data changes', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let superToken: string;

  const total = async (url: string, token: string, query: Record<string, string> = {}) => {
    const response = await t.http.get(url, { token, query });
    expect(response.status).toBe(200);
    return response.body.total as number;
  };
  const directCount = async (sql: string, params: unknown[]) => Number((await t.db.query(sql, params))[0].n);

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
  });
  afterAll(() => t.close());

  it('unfiltered studies totals follow inserts, moves and deletes, per role', async () => {
    const admin = () => total('/api/studies', clinic.adminToken);
    const user1 = () => total('/api/studies', clinic.token1);
    const user2 = () => total('/api/studies', clinic.token2);
    expect([await admin(), await user1(), await user2()]).toEqual([0, 0, 0]);

    const a = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
    await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
    await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit2.id });
    await createStudy(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id });
    expect([await admin(), await user1(), await user2()]).toEqual([3, 2, 1]);
    expect(await total('/api/studies', other.adminToken)).toBe(1);

    await t.db.query(`UPDATE studies SET unit_id = $1 WHERE id = $2`, [clinic.unit2.id, a.id]);
    expect([await admin(), await user1(), await user2()]).toEqual([3, 1, 2]);

    await t.db.query(`UPDATE studies SET tenant_id = $1, unit_id = $2 WHERE id = $3`, [other.tenant.id, other.unit2.id, a.id]);
    expect([await admin(), await user1(), await user2()]).toEqual([2, 1, 1]);
    expect(await total('/api/studies', other.adminToken)).toBe(2);
    expect(await total('/api/studies', other.token2)).toBe(1);

    await t.db.query(`DELETE FROM studies WHERE id = $1`, [a.id]);
    expect(await total('/api/studies', other.adminToken)).toBe(1);
  });

  it("exclude_id takes one off only when that study is in the caller's scope", async () => {
    const tenant = await createTenant(t.db);
    const unit = await createUnit(t.db, tenant.id);
    const clinicStudy = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
    const foreign = await createStudy(t.db, { tenant_id: tenant.id, unit_id: unit.id });
    const all = await total('/api/studies', clinic.adminToken);
    expect(await total('/api/studies', clinic.adminToken, { exclude_id: clinicStudy.id })).toBe(all - 1);
    expect(await total('/api/studies', clinic.adminToken, { exclude_id: foreign.id })).toBe(all);
    expect(await total('/api/studies', clinic.token2, { exclude_id: clinicStudy.id })).toBe(
      await total('/api/studies', clinic.token2),
    );
  });

  it('a search total is recounted after every change that could alter it, and only its scope sees it', async () => {
    const word = `Zq${randomBytes(4).toString('hex')}`;
    const search = () => total('/api/studies', clinic.adminToken, { search: word });
    expect(await search()).toBe(0);

    const s1 = await createStudy(t.db, {
      tenant_id: clinic.tenant.id,
      unit_id: clinic.unit1.id,
      patient_name: `Maria ${word}`,
    });
    expect(await search()).toBe(1);
    expect(await search()).toBe(1);

    const s2 = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit2.id, patient_name: 'Ana Costa' });
    expect(await search()).toBe(1);
    await t.db.query(`UPDATE studies SET accession_number = $1 WHERE id = $2`, [`ACC-${word}`, s2.id]);
    expect(await search()).toBe(2);
    expect(await total('/api/studies', clinic.token1, { search: word })).toBe(1);
    expect(await total('/api/studies', clinic.token2, { search: word })).toBe(1);

    await t.db.query(`UPDATE studies SET patient_name = 'Maria Souza' WHERE id = $1`, [s1.id]);
    expect(await search()).toBe(1);
    await t.db.query(`UPDATE studies SET patient_id = $1 WHERE id = $2`, [`PID-${word}`, s1.id]);
    expect(await search()).toBe(2);

    await createStudy(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id, patient_name: `José ${word}` });
    expect(await search()).toBe(2);
    expect(await total('/api/studies', other.adminToken, { search: word })).toBe(1);
    expect(await total('/api/studies', superToken, { search: word })).toBe(3);

    await t.db.query(`UPDATE studies SET tenant_id = $1, unit_id = $2 WHERE id = $3`, [other.tenant.id, other.unit2.id, s2.id]);
    expect(await search()).toBe(1);
    expect(await total('/api/studies', other.adminToken, { search: word })).toBe(2);
    expect(await total('/api/studies', superToken, { search: word })).toBe(3);

    await t.db.query(`DELETE FROM studies WHERE id = $1`, [s1.id]);
    expect(await search()).toBe(0);
    expect(await total('/api/studies', superToken, { search: word })).toBe(2);
  });

  it('a page past the first and a search with patient_uuid report the same exact total', async () => {
    const word = `Yk${randomBytes(4).toString('hex')}`;
    const patient = await createPatient(t.db, clinic.tenant.id, { patient_name: `Pedro ${word}` });
    for (let i = 0; i < 17; i++) {
      await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id, patient });
    }
    const page2 = await t.http.get('/api/studies', { token: clinic.adminToken, query: { search: word, page: '2' } });
    expect(page2.status).toBe(200);
    expect(page2.body).toMatchObject({ total: 17, current_page: 2, per_page: 15, last_page: 2 });
    expect(page2.body.data).toHaveLength(2);
    expect(await total('/api/studies', clinic.adminToken, { patient_uuid: patient.id })).toBe(17);
    expect(await total('/api/studies', clinic.adminToken, { patient_uuid: patient.id, search: word })).toBe(17);
    expect(await total(`/api/patients/${patient.id}/studies`, clinic.adminToken)).toBe(17);
    expect(await total(`/api/patients/${patient.id}/studies`, clinic.token1)).toBe(17);
    // A unit user of the other unit does not see the patient at all.
    const hidden = await t.http.get(`/api/patients/${patient.id}/studies`, { token: clinic.token2 });
    expect(hidden.status).toBe(404);
    expect(hidden.body).toEqual({ message: 'Patient not found.' });
  });

  it('patients totals: per tenant from the counter, per unit and per search recounted after changes', async () => {
    const tenantPatients = () => directCount(`SELECT count(*) AS n FROM patients WHERE tenant_id = $1`, [clinic.tenant.id]);
    const word = `Wx${randomBytes(4).toString('hex')}`;
    const user1 = () => total('/api/patients', clinic.token1);
    const before = { admin: await total('/api/patients', clinic.adminToken), user1: await user1() };
    expect(before.admin).toBe(await tenantPatients());

    const p: PatientRow = await createPatient(t.db, clinic.tenant.id, { patient_name: `Clara ${word}` });
    expect(await total('/api/patients', clinic.adminToken)).toBe(before.admin + 1);
    // No study in unit1 yet: a unit user does not see the patient.
    expect(await user1()).toBe(before.user1);
    expect(await total('/api/patients', clinic.token1, { search: word })).toBe(0);
    expect(await total('/api/patients', clinic.adminToken, { search: word })).toBe(1);

    const study = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id, patient: p });
    expect(await user1()).toBe(before.user1 + 1);
    expect(await total('/api/patients', clinic.token1, { search: word })).toBe(1);
    expect(await total('/api/patients', clinic.token2, { search: word })).toBe(0);

    await t.db.query(`UPDATE studies SET unit_id = $1 WHERE id = $2`, [clinic.unit2.id, study.id]);
    expect(await user1()).toBe(before.user1);
    expect(await total('/api/patients', clinic.token2, { search: word })).toBe(1);

    await t.db.query(`UPDATE patients SET patient_name = 'Clara Lima' WHERE id = $1`, [p.id]);
    expect(await total('/api/patients', clinic.adminToken, { search: word })).toBe(0);
    expect(await total('/api/patients', clinic.token2, { search: word })).toBe(0);

    await t.db.query(`DELETE FROM patients WHERE id = $1`, [p.id]);
    expect(await total('/api/patients', clinic.adminToken)).toBe(before.admin);
    expect(await total('/api/patients', other.adminToken)).toBe(
      await directCount(`SELECT count(*) AS n FROM patients WHERE tenant_id = $1`, [other.tenant.id]),
    );
  });
});
