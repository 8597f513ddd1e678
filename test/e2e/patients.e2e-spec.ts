import { createTestApp, TestApp } from '../support/app';
import { createPatient, createStudy, PatientRow, StudyRow } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser, createUser, login } from '../support/factories';

jest.setTimeout(30_000);

type Caller = 'user1' | 'user2' | 'tenantAdmin' | 'otherAdmin' | 'superAdmin';
const CALLERS: Caller[] = ['user1', 'user2', 'tenantAdmin', 'otherAdmin', 'superAdmin'];

describe('Patients', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let tokens: Record<Caller, string>;

  beforeAll(async () => {
    t = await createTestApp();
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    const superAdmin = await createSuperAdminUser(t.db, t.http);
    tokens = {
      user1: clinic.token1,
      user2: clinic.token2,
      tenantAdmin: clinic.adminToken,
      otherAdmin: other.adminToken,
      superAdmin: superAdmin.token,
    };
  });
  afterAll(() => t?.close());

  const idsOf = (body: { data: Array<{ id: string }> }) => body.data.map((row) => row.id);

  /** `count` patients of a tenant in one statement, patient ids 'P-<n>', named by `name` (SQL of n). */
  const insertPatients = (tenantId: string, count: number, name: string) =>
    t.db.query(
      `INSERT INTO patients (tenant_id, patient_id, patient_name)
       SELECT $1, 'P-' || n, ${name} FROM generate_series(1, $2::int) n`,
      [tenantId, count],
    );

  describe('isolation', () => {
    // A patient with studies in unit 1 only; one with studies in both units; one without studies.
    let inUnit1: PatientRow;
    let inBoth: PatientRow;
    let noStudy: PatientRow;
    let unit1Study: StudyRow;
    let bothStudies: StudyRow[];
    const tag = `ISO${Date.now()}`;

    beforeAll(async () => {
      inUnit1 = await createPatient(t.db, clinic.tenant.id, { patient_name: `${tag}^ONE` });
      inBoth = await createPatient(t.db, clinic.tenant.id, { patient_name: `${tag}^BOTH` });
      noStudy = await createPatient(t.db, clinic.tenant.id, { patient_name: `${tag}^NONE` });
      unit1Study = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id, patient: inUnit1 });
      bothStudies = [
        await createStudy(t.db, {
          tenant_id: clinic.tenant.id,
          unit_id: clinic.unit1.id,
          patient: inBoth,
          study_date: '2024-05-01',
        }),
        await createStudy(t.db, {
          tenant_id: clinic.tenant.id,
          unit_id: clinic.unit2.id,
          patient: inBoth,
          study_date: '2024-04-01',
        }),
      ];
    });

    async function statuses(url: string) {
      const seen: Record<string, string | number> = {};
      for (const caller of CALLERS) {
        const res = await t.http.get(url, { token: tokens[caller] });
        seen[caller] = res.status === 200 ? 200 : `${res.status} ${JSON.stringify(res.body)}`;
      }
      return seen;
    }
    const NOT_FOUND = '404 {"message":"Patient not found."}';

    it('GET /api/patients/{id}: a patient with a study in unit 1 only', async () => {
      expect(await statuses(`/api/patients/${inUnit1.id}`)).toEqual({
        user1: 200,
        user2: NOT_FOUND,
        tenantAdmin: 200,
        otherAdmin: NOT_FOUND,
        superAdmin: 200,
      });
    });

    it('GET /api/patients/{id}: a patient without studies is seen by admins only', async () => {
      expect(await statuses(`/api/patients/${noStudy.id}`)).toEqual({
        user1: NOT_FOUND,
        user2: NOT_FOUND,
        tenantAdmin: 200,
        otherAdmin: NOT_FOUND,
        superAdmin: 200,
      });
    });

    it('GET /api/patients/{id}/studies: status per caller', async () => {
      expect(await statuses(`/api/patients/${inUnit1.id}/studies`)).toEqual({
        user1: 200,
        user2: NOT_FOUND,
        tenantAdmin: 200,
        otherAdmin: NOT_FOUND,
        superAdmin: 200,
      });
    });

    it('GET /api/patients/{id}/studies: a regular user gets only the studies of their unit', async () => {
      const seen: Record<string, unknown> = {};
      for (const caller of CALLERS) {
        const res = await t.http.get(`/api/patients/${inBoth.id}/studies`, { token: tokens[caller] });
        seen[caller] = res.status === 200 ? { ids: idsOf(res.body), total: res.body.total } : res.status;
      }
      expect(seen).toEqual({
        user1: { ids: [bothStudies[0].id], total: 1 },
        user2: { ids: [bothStudies[1].id], total: 1 },
        tenantAdmin: { ids: bothStudies.map((s) => s.id), total: 2 },
        otherAdmin: 404,
        superAdmin: { ids: bothStudies.map((s) => s.id), total: 2 },
      });
    });

    it("GET /api/patients lists (and counts) each caller's visible patients only", async () => {
      const theirs = await createPatient(t.db, other.tenant.id, { patient_name: `${tag}^THEIRS` });
      await createStudy(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id, patient: theirs });
      const seen: Record<string, unknown> = {};
      for (const caller of CALLERS) {
        const res = await t.http.get('/api/patients', { token: tokens[caller], query: { search: tag } });
        expect(res.status).toBe(200);
        seen[caller] = { ids: idsOf(res.body).sort(), total: res.body.total };
      }
      const of = (...rows: PatientRow[]) => ({ ids: rows.map((r) => r.id).sort(), total: rows.length });
      expect(seen).toEqual({
        user1: of(inUnit1, inBoth),
        user2: of(inBoth),
        tenantAdmin: of(inUnit1, inBoth, noStudy),
        otherAdmin: of(theirs),
        superAdmin: of(inUnit1, inBoth, noStudy, theirs),
      });
    });

    it('a regular user without a unit sees no patient', async () => {
      const loose = await createUser(t.db, { tenant_id: clinic.tenant.id, unit_id: null });
      const token = await login(t.http, loose.email);
      const list = await t.http.get('/api/patients', { token });
      expect(list.body).toEqual({ data: [], current_page: 1, per_page: 20, total: 0, last_page: 1, total_exact: true });
      for (const url of [`/api/patients/${inUnit1.id}`, `/api/patients/${inUnit1.id}/studies`]) {
        const res = await t.http.get(url, { token });
        expect({ url, status: res.status, body: res.body }).toEqual({
          url,
          status: 404,
          body: { message: 'Patient not found.' },
        });
      }
      expect(unit1Study.patient_uuid).toBe(inUnit1.id);
    });
  });

  describe('GET /api/patients', () => {
    it('orders by patient_name asc, then created_at desc, then id, 20 per page', async () => {
      const fresh = await createClinic(t.db, t.http);
      const rows: Array<PatientRow & { created_at: string }> = [];
      for (let i = 0; i < 23; i++) {
        const created_at = `2024-01-0${1 + (i % 3)}T00:00:00Z`;
        const row = await createPatient(t.db, fresh.tenant.id, {
          patient_name: `NAME^${String.fromCharCode(65 + (i % 7))}`,
          created_at,
        });
        rows.push({ ...row, created_at });
      }
      const expected = [...rows]
        .sort(
          (a, b) =>
            (a.patient_name < b.patient_name ? -1 : a.patient_name > b.patient_name ? 1 : 0) ||
            b.created_at.localeCompare(a.created_at) ||
            a.id.localeCompare(b.id),
        )
        .map((r) => r.id);
      const page1 = await t.http.get('/api/patients', { token: fresh.adminToken });
      expect(page1.status).toBe(200);
      expect(page1.body).toMatchObject({ current_page: 1, per_page: 20, total: 23, last_page: 2 });
      expect(page1.body.data).toHaveLength(20);
      const page2 = await t.http.get('/api/patients', { token: fresh.adminToken, query: { page: '2', per_page: '50' } });
      expect(page2.body).toMatchObject({ current_page: 2, per_page: 20, total: 23, last_page: 2 });
      expect([...idsOf(page1.body), ...idsOf(page2.body)]).toEqual(expected);
      const past = await t.http.get('/api/patients', { token: fresh.adminToken, query: { page: '3' } });
      expect(past.body).toEqual({ data: [], current_page: 3, per_page: 20, total: 23, last_page: 2, total_exact: true });
    });

    it('returns the Patient shape', async () => {
      const fresh = await createClinic(t.db, t.http);
      const patient = await createPatient(t.db, fresh.tenant.id, { patient_birth_date: '2001-07-08', patient_sex: 'M' });
      const res = await t.http.get('/api/patients', { token: fresh.adminToken });
      expect(res.body.data).toEqual([
        {
          id: patient.id,
          tenant_id: fresh.tenant.id,
          patient_id: patient.patient_id,
          patient_name: patient.patient_name,
          patient_birth_date: '2001-07-08',
          patient_sex: 'M',
          created_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/),
          updated_at: expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        },
      ]);
      const detail = await t.http.get(`/api/patients/${patient.id}`, { token: fresh.adminToken });
      expect(detail.status).toBe(200);
      expect(detail.body).toEqual(res.body.data[0]);
    });

    it('searches patient_name and patient_id case-insensitively, % _ and \\ literally', async () => {
      const fresh = await createClinic(t.db, t.http);
      const make = (patient_name: string, patient_id?: string) =>
        createPatient(t.db, fresh.tenant.id, { patient_name, ...(patient_id ? { patient_id } : {}) });
      const percent = await make('LIMA^50% OFF');
      const fifty = await make('LIMA^500 OFF');
      const underscore = await make('COSTA^X_Y');
      const plain = await make('COSTA^XAY');
      const slash = await make('BACK\\SLASH');
      const byId = await make('SOMEONE^ELSE', 'MRN-ZZ9');
      const search = async (text: string) => {
        const res = await t.http.get('/api/patients', { token: fresh.adminToken, query: { search: text } });
        expect(res.status).toBe(200);
        return { ids: idsOf(res.body).sort(), total: res.body.total };
      };
      const of = (...rows: PatientRow[]) => ({ ids: rows.map((r) => r.id).sort(), total: rows.length });
      expect(await search('lima')).toEqual(of(percent, fifty));
      expect(await search('50%')).toEqual(of(percent));
      expect(await search('x_y')).toEqual(of(underscore));
      expect(await search('\\')).toEqual(of(slash));
      expect(await search('mrn-zz')).toEqual(of(byId));
      expect(plain.id).toBeDefined();
    });

    it('searches regardless of accents and case, a fragment cut anywhere', async () => {
      const fresh = await createClinic(t.db, t.http);
      const joao = await createPatient(t.db, fresh.tenant.id, { patient_name: 'JOÃO^SÃO PEDRO', patient_id: 'ÇA-123' });
      const plain = await createPatient(t.db, fresh.tenant.id, { patient_name: 'Joana Sao Pedro', patient_id: 'X-9' });
      const search = async (text: string) => {
        const res = await t.http.get('/api/patients', { token: fresh.adminToken, query: { search: text } });
        expect(res.status).toBe(200);
        return { ids: idsOf(res.body).sort(), total: res.body.total };
      };
      const of = (...rows: PatientRow[]) => ({ ids: rows.map((r) => r.id).sort(), total: rows.length });
      expect(await search('joao')).toEqual(of(joao));
      expect(await search('SÃO PED')).toEqual(of(joao, plain));
      expect(await search('ao^sao p')).toEqual(of(joao));
      expect(await search('ca-12')).toEqual(of(joao));
      expect(await search('oan')).toEqual(of(plain));
    });

    it("collects a rare name of a clinic of more than 10,000 patients, never another clinic's", async () => {
      // More than 10,000 patients: a rare name is collected through the search index, its scope in
      // the index scan, while another clinic has the same name.
      const big = await createClinic(t.db, t.http);
      const neighbour = await createClinic(t.db, t.http);
      await insertPatients(big.tenant.id, 10_100, `CASE WHEN n <= 2 THEN 'QUINTANILHA^RARA ' || n ELSE 'SOUZA^ANA ' || n END`);
      const foreign = await createPatient(t.db, neighbour.tenant.id, { patient_name: 'QUINTANILHA^RARA 0' });
      const [{ expected }] = await t.db.query(
        `SELECT array_agg(patient_id ORDER BY patient_id) AS expected FROM patients WHERE tenant_id = $1 AND patient_name LIKE 'QUINTANILHA%'`,
        [big.tenant.id],
      );
      for (const search of ['quintanilha', 'ilha^rara']) {
        for (let request = 0; request < 2; request++) {
          const res = await t.http.get('/api/patients', { token: big.adminToken, query: { search } });
          expect(res.status).toBe(200);
          const found = res.body.data.map((p: PatientRow) => p.patient_id).sort();
          expect({ search, request, total: res.body.total, found }).toEqual({ search, request, total: 2, found: expected });
          expect(idsOf(res.body)).not.toContain(foreign.id);
        }
      }
      const superRes = await t.http.get('/api/patients', { token: tokens.superAdmin, query: { search: 'quintanilha' } });
      expect(idsOf(superRes.body)).toContain(foreign.id);
    });

    it('pages a clinic of more than 10,000 patients in name order, whether the matches are spread or held together', async () => {
      // 11,000 "ALVES^ANA n" then 1,000 "ZZ^MARIA n" and 1 "ZZ^MARIA^X": "alves" matches nearly
      // every name (past the cap: total 1000, not exact) and is walked in name order (inside
      // patients_tenant_order_idx); "maria" has 1,001 matches, none within the walk's cap of 2,000
      // names, so the walk comes back short and the page is collected, then and on the next request.
      const big = await createClinic(t.db, t.http);
      await insertPatients(big.tenant.id, 12_001, `CASE WHEN n <= 11000 THEN 'ALVES^ANA ' || n ELSE 'ZZ^MARIA ' || n END`);
      for (const [fragment, like, total] of [
        ['alves', 'ALVES%', 1_000],
        ['maria', 'ZZ^MARIA%', 1_000],
      ] as const) {
        for (const page of [1, 3]) {
          const rows = await t.db.query(
            `SELECT patient_id FROM patients WHERE tenant_id = $1 AND patient_name LIKE $2
              ORDER BY patient_name, created_at DESC, id LIMIT 20 OFFSET $3`,
            [big.tenant.id, like, (page - 1) * 20],
          );
          const expected = rows.map((row: { patient_id: string }) => row.patient_id);
          for (let request = 0; request < 2; request++) {
            const res = await t.http.get('/api/patients', {
              token: big.adminToken,
              query: { search: fragment, page: String(page) },
            });
            expect(res.status).toBe(200);
            const found = res.body.data.map((p: PatientRow) => p.patient_id);
            expect({ fragment, page, request, total: res.body.total, exact: res.body.total_exact, found }).toEqual({
              fragment,
              page,
              request,
              total,
              exact: false,
              found: expected,
            });
          }
        }
      }
    });

    it.each([
      ['search of 256 characters', { search: 'y'.repeat(256) }, 'search'],
      ['page=0', { page: '0' }, 'page'],
      ['page=x', { page: 'x' }, 'page'],
    ])('answers 422 for %s', async (_, query, field) => {
      const res = await t.http.get('/api/patients', { token: tokens.tenantAdmin, query });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        message: expect.any(String),
        errors: { [field]: expect.arrayContaining([expect.any(String)]) },
      });
    });
  });

  describe('GET /api/patients/{id}/studies', () => {
    it("pages the patient's studies 15 at a time, newest first", async () => {
      const fresh = await createClinic(t.db, t.http);
      const patient = await createPatient(t.db, fresh.tenant.id);
      const rows: StudyRow[] = [];
      for (let i = 0; i < 16; i++) {
        rows.push(
          await createStudy(t.db, {
            tenant_id: fresh.tenant.id,
            unit_id: fresh.unit1.id,
            patient,
            study_date: `2023-${String(1 + (i % 12)).padStart(2, '0')}-01`,
          }),
        );
      }
      await createStudy(t.db, { tenant_id: fresh.tenant.id, unit_id: fresh.unit1.id });
      const expected = [...rows]
        .sort(
          (a, b) =>
            b.study_date.localeCompare(a.study_date) ||
            b.created_at.getTime() - a.created_at.getTime() ||
            b.id.localeCompare(a.id),
        )
        .map((r) => r.id);
      const page1 = await t.http.get(`/api/patients/${patient.id}/studies`, { token: fresh.token1 });
      expect(page1.status).toBe(200);
      expect(page1.body).toMatchObject({ current_page: 1, per_page: 15, total: 16, last_page: 2 });
      const page2 = await t.http.get(`/api/patients/${patient.id}/studies`, { token: fresh.token1, query: { page: '2' } });
      expect([...idsOf(page1.body), ...idsOf(page2.body)]).toEqual(expected);
      expect(page1.body.data[0]).not.toHaveProperty('patient');
      expect(page1.body.data[0]).toHaveProperty('study_instance_uid');
      const bad = await t.http.get(`/api/patients/${patient.id}/studies`, { token: fresh.token1, query: { page: '0' } });
      expect(bad.status).toBe(422);
      expect(bad.body).toEqual({ message: expect.any(String), errors: { page: [expect.any(String)] } });
    });
  });

  it.each(['x', '00000000-0000-0000-0000-000000000000'])('answers 404 {message: Patient not found.} for %s', async (id) => {
    for (const url of [`/api/patients/${id}`, `/api/patients/${id}/studies`]) {
      const res = await t.http.get(url, { token: tokens.superAdmin });
      expect(res.status).toBe(404);
      expect(res.body).toEqual({ message: 'Patient not found.' });
    }
  });

  it.each([
    '/api/patients',
    '/api/patients/00000000-0000-4000-8000-000000000000',
    '/api/patients/00000000-0000-4000-8000-000000000000/studies',
  ])('GET %s without a token is 401', async (url) => {
    const res = await t.http.get(url);
    expect(res.status).toBe(401);
    expect(res.body).toEqual({ message: 'Unauthenticated.' });
  });
});
