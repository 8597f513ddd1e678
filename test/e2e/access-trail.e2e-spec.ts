import type { AddressInfo } from 'net';
import { AuditService } from '../../src/audit/audit.service';
import { createTestApp, TestApp } from '../support/app';
import { createImagedStudy, createPatient, createStudy } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser } from '../support/factories';
import { socketRequest } from '../support/http';

jest.setTimeout(60_000);

const TRAIL = '/api/audit/access';
const VALIDATE = '/api/viewer/token/validate';
/** The acts the reports and exchange features record through AuditService. */
const FEATURE_ACTIONS = [
  'report.read',
  'report.write',
  'report.sign',
  'study.download',
  'study.upload',
  'share.create',
  'share.open',
  'share.revoke',
] as const;

interface Entry {
  id: string;
  at: string;
  action: string;
  user: { id: string; name: string } | null;
  share_id: string | null;
  tenant_id: string | null;
  study_id: string | null;
  patient_id: string | null;
  ip: string | null;
  count: number | null;
}

/**
 * The access trail of decisions.md 3e: one entry per act on every path, read back through
 * GET /api/audit/access (JSON and CSV), kept across a shutdown.
 */
describe('The access trail', () => {
  let t: TestApp;
  let clinic: Awaited<ReturnType<typeof createClinic>>;
  let other: Awaited<ReturnType<typeof createClinic>>;
  let superAdmin: Awaited<ReturnType<typeof createSuperAdminUser>>;
  let imaged: Awaited<ReturnType<typeof createImagedStudy>>;
  let baseUrl: string;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    clinic = await createClinic(t.db, t.http);
    other = await createClinic(t.db, t.http);
    superAdmin = await createSuperAdminUser(t.db, t.http);
    imaged = await createImagedStudy(t.db, clinic.tenant.id, clinic.unit1.id);
  });
  afterAll(() => t?.close());

  /** The entries written so far for this filter, as the clinic's admin reads them (written within 10 s). */
  const trailOf = async (query: Record<string, string>, token = clinic.adminToken): Promise<Entry[]> => {
    await t.app.get(AuditService).flush();
    const res = await t.http.get(TRAIL, { token, query });
    expect(res.status).toBe(200);
    return (res.body as { data: Entry[] }).data;
  };
  const waitForTrail = async (query: Record<string, string>, count: number, token = clinic.adminToken) => {
    const until = Date.now() + 10_000;
    let entries = await trailOf(query, token);
    while (entries.length < count && Date.now() < until) {
      await new Promise((resolve) => setTimeout(resolve, 50));
      entries = await trailOf(query, token);
    }
    return entries;
  };

  describe('what is recorded', () => {
    it('a study list search: study.search with the number of studies returned, never the search text', async () => {
      const name = imaged.patient.patient_name.split('^')[1];
      const res = await t.http.get('/api/studies', { token: clinic.token1, query: { search: name } });
      expect(res.status).toBe(200);
      const returned = (res.body as { data: unknown[] }).data.length;
      expect(returned).toBeGreaterThan(0);
      const [entry] = await waitForTrail({ user_id: clinic.user1.id, action: 'study.search' }, 1);
      expect(entry).toMatchObject({
        action: 'study.search',
        user: { id: clinic.user1.id, name: clinic.user1.name },
        tenant_id: clinic.tenant.id,
        study_id: null,
        share_id: null,
        count: returned,
      });
      const rows = await t.db.query(`SELECT row_to_json(a)::text AS row FROM access_logs a WHERE user_id = $1`, [
        clinic.user1.id,
      ]);
      for (const { row } of rows) expect(row).not.toContain(name);
    });

    it('a QIDO-RS worklist search: study.search with its count', async () => {
      const res = await t.http.get('/api/dicom-web/studies', {
        token: clinic.token2,
        query: { PatientName: '*', limit: '5' },
      });
      expect(res.status).toBe(200);
      const entries = await waitForTrail({ user_id: clinic.user2.id, action: 'study.search' }, 1);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ user: { id: clinic.user2.id }, count: (res.body as unknown[]).length });
    });

    it('a patient list: patient.search with the number of patients returned, never the search text', async () => {
      const name = imaged.patient.patient_name.split('^')[0];
      const res = await t.http.get('/api/patients', { token: clinic.token1, query: { search: name } });
      expect(res.status).toBe(200);
      const returned = (res.body as { data: unknown[] }).data.length;
      expect(returned).toBeGreaterThan(0);
      const entries = await waitForTrail({ user_id: clinic.user1.id, action: 'patient.search' }, 1);
      expect(entries).toHaveLength(1);
      expect(entries[0]).toMatchObject({ tenant_id: clinic.tenant.id, study_id: null, patient_id: null, count: returned });
      const rows = await t.db.query(`SELECT row_to_json(a)::text AS row FROM access_logs a WHERE action = 'patient.search'`);
      for (const { row } of rows) expect(row).not.toContain(name);
    });

    it("a patient opened, and the patient's studies listed: found by the DICOM Patient ID, under the patient's clinic whoever opened it", async () => {
      const patientId = imaged.patient.patient_id;
      const detail = await t.http.get(`/api/patients/${imaged.patient.id}`, { token: superAdmin.token });
      expect(detail.status).toBe(200);
      const studies = await t.http.get(`/api/patients/${imaged.patient.id}/studies`, { token: clinic.token1 });
      expect(studies.status).toBe(200);
      const returned = (studies.body as { data: unknown[] }).data.length;
      expect(returned).toBeGreaterThan(0);
      const entries = await waitForTrail({ patient_id: patientId }, 2);
      const view = entries.find((entry) => entry.action === 'patient.view');
      const listed = entries.find((entry) => entry.action === 'study.search');
      expect(view).toMatchObject({
        user: { id: superAdmin.user.id },
        tenant_id: clinic.tenant.id,
        study_id: null,
        patient_id: patientId,
      });
      expect(listed).toMatchObject({
        user: { id: clinic.user1.id },
        tenant_id: clinic.tenant.id,
        study_id: null,
        patient_id: patientId,
        count: returned,
      });
    });

    it("a patient who is not found (another clinic's) opens nothing and leaves no patient.view", async () => {
      const res = await t.http.get(`/api/patients/${imaged.patient.id}`, { token: other.adminToken });
      expect(res.status).toBe(404);
      expect(await trailOf({ user_id: other.admin.id, action: 'patient.view' }, superAdmin.token)).toEqual([]);
    });

    it("the patient's studies listed on an empty page (past the end, or a patient without studies): found by the DICOM Patient ID", async () => {
      const emptyPage = (page: number, total: number) => ({
        status: 200,
        body: { data: [], current_page: page, per_page: 15, total, last_page: 1, total_exact: true },
      });
      const past = await t.http.get(`/api/patients/${imaged.patient.id}/studies`, {
        token: clinic.adminToken,
        query: { page: '99' },
      });
      expect({ status: past.status, body: past.body }).toEqual(emptyPage(99, 1));
      const bare = await createPatient(t.db, clinic.tenant.id);
      const none = await t.http.get(`/api/patients/${bare.id}/studies`, { token: superAdmin.token });
      expect({ status: none.status, body: none.body }).toEqual(emptyPage(1, 0));

      const patientId = imaged.patient.patient_id;
      const [pastEntry] = await waitForTrail({ patient_id: patientId, user_id: clinic.admin.id, action: 'study.search' }, 1);
      expect(pastEntry).toMatchObject({
        user: { id: clinic.admin.id },
        tenant_id: clinic.tenant.id,
        study_id: null,
        patient_id: patientId,
        count: 0,
      });
      const [noneEntry] = await waitForTrail({ patient_id: bare.patient_id, action: 'study.search' }, 1);
      expect(noneEntry).toMatchObject({
        user: { id: superAdmin.user.id },
        tenant_id: clinic.tenant.id,
        study_id: null,
        patient_id: bare.patient_id,
        count: 0,
      });
    });

    it("a patient the caller cannot see (another clinic's, or no study in the unit): 404, and nothing recorded", async () => {
      const unit2Only = await createPatient(t.db, clinic.tenant.id);
      await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit2.id, patient: unit2Only });
      for (const [token, patient] of [
        [other.adminToken, imaged.patient],
        [clinic.token1, unit2Only],
      ] as const) {
        const res = await t.http.get(`/api/patients/${patient.id}/studies`, { token, query: { page: '99' } });
        expect({ status: res.status, body: res.body }).toEqual({ status: 404, body: { message: 'Patient not found.' } });
      }
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await trailOf({ user_id: other.admin.id, action: 'study.search' }, superAdmin.token)).toEqual([]);
      expect(await trailOf({ patient_id: unit2Only.patient_id }, superAdmin.token)).toEqual([]);
    });

    it('a study opened through the viewer gate with a session: one study.view per caller and study in 5 minutes', async () => {
      const study = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id, patient_id: 'TRAIL-1' });
      const uri = `/dicom-web/studies/${study.study_instance_uid}/series`;
      for (let i = 0; i < 5; i++) {
        const res = await socketRequest(baseUrl, 'GET', VALIDATE, {
          authorization: `Bearer ${clinic.token1}`,
          'x-original-uri': uri,
        });
        expect(res.status).toBe(200);
      }
      const entries = await waitForTrail({ study_id: study.id }, 1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await trailOf({ study_id: study.id })).toHaveLength(1);
      expect(entries[0]).toMatchObject({
        action: 'study.view',
        user: { id: clinic.user1.id },
        share_id: null,
        tenant_id: clinic.tenant.id,
        study_id: study.id,
        patient_id: 'TRAIL-1',
        ip: '127.0.0.1',
      });
      // Another process (no memory of the first view) still writes no second entry: the window is in Redis.
      expect(await t.redis.ttl(`audit:view:user:${clinic.user1.id}:${study.id}`)).toBeGreaterThan(290);
    });

    it('a study opened with a viewer token: study.view, and one for each prior it opens', async () => {
      const first = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id, patient_id: 'TRAIL-2' });
      const prior = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit2.id, patient_id: 'TRAIL-2' });
      const issued = await t.http.post('/api/viewer/token', { token: clinic.token1, body: { study_id: first.id } });
      const token = issued.body.token as string;
      for (const study of [first, first, prior, prior]) {
        const res = await socketRequest(baseUrl, 'GET', VALIDATE, {
          'x-viewer-token': token,
          'x-original-uri': `/dicom-web/studies/${study.study_instance_uid}/metadata`,
        });
        expect(res.status).toBe(200);
      }
      const entries = await waitForTrail({ patient_id: 'TRAIL-2', action: 'study.view' }, 2);
      expect(entries.map((entry) => entry.study_id).sort()).toEqual([first.id, prior.id].sort());
      for (const entry of entries) expect(entry).toMatchObject({ user: { id: clinic.user1.id }, patient_id: 'TRAIL-2' });
    });

    it("a study opened with a share's viewer token: study.view under the share, without a user, once in 5 minutes", async () => {
      const study = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id, patient_id: 'TRAIL-3' });
      const created = await t.http.post(`/api/studies/${study.id}/shares`, { token: clinic.token1, body: {} });
      expect(created.status).toBe(201);
      const opened = await t.http.post('/api/shares/open', { body: { token: created.body.token } });
      expect(opened.status).toBe(200);
      for (let i = 0; i < 3; i++) {
        const res = await socketRequest(baseUrl, 'GET', VALIDATE, {
          'x-viewer-token': opened.body.viewer_token,
          'x-original-uri': `/dicom-web/studies/${study.study_instance_uid}/series`,
        });
        expect(res.status).toBe(200);
      }
      const entries = await waitForTrail({ study_id: study.id, action: 'study.view' }, 1);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await trailOf({ study_id: study.id, action: 'study.view' })).toHaveLength(1);
      expect(entries[0]).toMatchObject({
        user: null,
        share_id: created.body.id,
        tenant_id: clinic.tenant.id,
        study_id: study.id,
        patient_id: 'TRAIL-3',
        ip: '127.0.0.1',
      });
    });

    it('a refused request opens nothing and leaves no study.view', async () => {
      const theirs = await createStudy(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id });
      const res = await socketRequest(baseUrl, 'GET', VALIDATE, {
        authorization: `Bearer ${clinic.token1}`,
        'x-original-uri': `/dicom-web/studies/${theirs.study_instance_uid}`,
      });
      expect(res.status).toBe(403);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(await trailOf({ study_id: theirs.id }, superAdmin.token)).toEqual([]);
    });

    it('the acts of the reports and shares features, recorded through AuditService, with the share they went through', async () => {
      const shareId = '5a1e0000-0000-4000-8000-0000000000e1';
      const audit = t.app.get(AuditService);
      for (const action of FEATURE_ACTIONS.filter((action) => action !== 'share.open')) {
        audit.record({
          action,
          userId: clinic.admin.id,
          studyId: imaged.study.id,
          shareId: action.startsWith('share') ? shareId : null,
          ip: '10.1.2.3',
        });
      }
      audit.record({
        action: 'share.open',
        userId: null,
        tenantId: clinic.tenant.id,
        studyId: imaged.study.id,
        shareId,
        ip: '10.9.9.9',
      });
      const entries = await waitForTrail({ study_id: imaged.study.id }, 8);
      const byAction = Object.fromEntries(entries.map((entry) => [entry.action, entry]));
      expect(Object.keys(byAction).sort()).toEqual([...FEATURE_ACTIONS].sort());
      expect(byAction['share.open']).toMatchObject({
        user: null,
        share_id: shareId,
        tenant_id: clinic.tenant.id,
        patient_id: imaged.study.patient_id,
        ip: '10.9.9.9',
      });
      expect(byAction['report.sign']).toMatchObject({
        user: { id: clinic.admin.id },
        share_id: null,
        patient_id: imaged.study.patient_id,
      });
    });
  });

  describe('GET /api/audit/access', () => {
    it('isolation: a tenant admin reads their clinic only, whatever tenant_id says; a super admin every clinic', async () => {
      const theirs = await createStudy(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id, patient_id: 'ISO-1' });
      t.app.get(AuditService).record({ action: 'report.read', userId: other.admin.id, studyId: theirs.id });
      await t.app.get(AuditService).flush();
      expect(await trailOf({ study_id: theirs.id })).toEqual([]);
      expect(await trailOf({ study_id: theirs.id, tenant_id: other.tenant.id })).toEqual([]);
      expect(await trailOf({ patient_id: 'ISO-1' })).toEqual([]);
      expect(await trailOf({ study_id: theirs.id }, other.adminToken)).toHaveLength(1);
      expect(await trailOf({ study_id: theirs.id }, superAdmin.token)).toHaveLength(1);
      expect(await trailOf({ study_id: theirs.id, tenant_id: clinic.tenant.id }, superAdmin.token)).toEqual([]);
      expect(await trailOf({ study_id: theirs.id, tenant_id: other.tenant.id }, superAdmin.token)).toHaveLength(1);
      const clinicPage = await trailOf({}, clinic.adminToken);
      expect(clinicPage.every((entry) => entry.tenant_id === clinic.tenant.id)).toBe(true);
    });

    it('answers 403 {error: Forbidden} to a regular user and 401 without a session', async () => {
      const regular = await t.http.get(TRAIL, { token: clinic.token1 });
      expect({ status: regular.status, body: regular.body }).toEqual({ status: 403, body: { error: 'Forbidden' } });
      const anonymous = await t.http.get(TRAIL);
      expect({ status: anonymous.status, body: anonymous.body }).toEqual({
        status: 401,
        body: { message: 'Unauthenticated.' },
      });
    });

    it('pages 50 entries newest first, and filters by action, user and time', async () => {
      const fresh = await createClinic(t.db, t.http);
      const study = await createStudy(t.db, { tenant_id: fresh.tenant.id, unit_id: fresh.unit1.id });
      const audit = t.app.get(AuditService);
      for (let i = 0; i < 60; i++) audit.record({ action: 'report.read', userId: fresh.user1.id, studyId: study.id });
      await audit.flush();
      const middle = new Date().toISOString();
      await new Promise((resolve) => setTimeout(resolve, 20));
      audit.record({ action: 'report.write', userId: fresh.user2.id, studyId: study.id });
      await audit.flush();
      const first = await t.http.get(TRAIL, { token: fresh.adminToken });
      expect(first.body).toMatchObject({ current_page: 1, per_page: 50, total: 61, last_page: 2, total_exact: true });
      const data = (first.body as { data: Entry[] }).data;
      expect(data).toHaveLength(50);
      expect(data[0]).toMatchObject({ action: 'report.write', user: { id: fresh.user2.id } });
      const times = data.map((entry) => Date.parse(entry.at));
      expect([...times].sort((a, b) => b - a)).toEqual(times);
      const second = await t.http.get(TRAIL, { token: fresh.adminToken, query: { page: '2' } });
      expect((second.body as { data: Entry[] }).data).toHaveLength(11);
      expect(await trailOf({ action: 'report.write' }, fresh.adminToken)).toHaveLength(1);
      expect(await trailOf({ user_id: fresh.user1.id }, fresh.adminToken)).toHaveLength(50);
      expect(await trailOf({ from: middle }, fresh.adminToken)).toHaveLength(1);
      expect((await t.http.get(TRAIL, { token: fresh.adminToken, query: { to: middle } })).body).toMatchObject({ total: 60 });
      expect(await trailOf({ from: '2999-01-01' }, fresh.adminToken)).toEqual([]);
    });

    it('reads a date-only `to` through the end of that day and a date-only `from` from its start (inclusive)', async () => {
      const fresh = await createClinic(t.db, t.http);
      const study = await createStudy(t.db, { tenant_id: fresh.tenant.id, unit_id: fresh.unit1.id });
      t.app.get(AuditService).record({ action: 'report.read', userId: fresh.user1.id, studyId: study.id });
      const [entry] = await waitForTrail({}, 1, fresh.adminToken);
      // Today's date, as the entry's own time has it (UTC), so that a run across midnight cannot miss it.
      const today = entry.at.slice(0, 10);
      const dayOf = (offset: number) => new Date(Date.parse(today) + offset * 86_400_000).toISOString().slice(0, 10);
      const read = (query: Record<string, string>) => trailOf(query, fresh.adminToken);
      expect(await read({ to: today })).toEqual([entry]);
      expect(await read({ from: today, to: today })).toEqual([entry]);
      expect(await read({ from: today })).toEqual([entry]);
      expect(await read({ to: dayOf(-1) })).toEqual([]);
      expect(await read({ from: dayOf(1) })).toEqual([]);
      // A date-time keeps its exact instant: the entry's own time includes it, a millisecond before excludes it.
      expect(await read({ to: entry.at })).toEqual([entry]);
      expect(await read({ to: new Date(Date.parse(entry.at) - 1).toISOString() })).toEqual([]);
      expect(await read({ from: entry.at })).toEqual([entry]);
    });

    it('a HEAD reads nothing: 404 as a method the routes do not take, no entry, nothing asked of the image server', async () => {
      const fresh = await createClinic(t.db, t.http);
      const study = await createStudy(t.db, { tenant_id: fresh.tenant.id, unit_id: fresh.unit1.id });
      for (const url of [`/api/studies/${study.id}`, `/api/studies/${study.id}/archive`, `/api/patients`, '/api/studies']) {
        const res = await t.http.request('HEAD', url, { token: fresh.token1 });
        expect({ url, status: res.status }).toEqual({ url, status: 404 });
      }
      await t.app.get(AuditService).flush();
      expect(await trailOf({}, fresh.adminToken)).toEqual([]);
      expect((await t.http.get(`/api/studies/${study.id}`, { token: fresh.token1 })).status).toBe(200);
      await waitForTrail({}, 1, fresh.adminToken);
    });

    it("reads a date-time without an offset as UTC, like the entries' `at`, whatever the host's time zone", async () => {
      const fresh = await createClinic(t.db, t.http);
      const study = await createStudy(t.db, { tenant_id: fresh.tenant.id, unit_id: fresh.unit1.id });
      t.app.get(AuditService).record({ action: 'report.read', userId: fresh.user1.id, studyId: study.id });
      const [entry] = await waitForTrail({}, 1, fresh.adminToken);
      const withoutOffset = (ms: number) => new Date(ms).toISOString().replace('Z', '');
      // jest.config.js runs the tests off UTC: read in the host's zone, these would miss by hours.
      expect(new Date(Date.parse(entry.at)).getTimezoneOffset()).not.toBe(0);
      const read = (query: Record<string, string>) => trailOf(query, fresh.adminToken);
      expect(await read({ from: withoutOffset(Date.parse(entry.at)) })).toEqual([entry]);
      expect(await read({ to: withoutOffset(Date.parse(entry.at) - 1) })).toEqual([]);
    });

    it.each([
      ['page', '0'],
      ['page', 'x'],
      ['study_id', 'not-a-uuid'],
      ['user_id', '42'],
      ['tenant_id', 'x'],
      ['action', 'study.delete'],
      ['from', 'yesterday'],
      ['from', '2026-13-01'],
      ['to', '2026-02-30T10:00:00Z'],
      ['to', '2026-W48-4'],
      ['from', '+0020260-01-01'],
      ['format', 'xml'],
      ['patient_id', 'x'.repeat(65)],
    ])('answers 422 for %s=%s', async (field, value) => {
      const res = await t.http.get(TRAIL, { token: clinic.adminToken, query: { [field]: value } });
      expect(res.status).toBe(422);
      expect(res.body).toEqual({
        message: expect.any(String),
        errors: { [field]: expect.arrayContaining([expect.any(String)]) },
      });
    });

    it('?format=csv answers text/csv with the same columns, the whole filtered set, formulas defused', async () => {
      const fresh = await createClinic(t.db, t.http);
      await t.db.query(`UPDATE users SET name = $2 WHERE id = $1`, [fresh.user1.id, '=HYPERLINK("x"),"quoted"']);
      const study = await createStudy(t.db, { tenant_id: fresh.tenant.id, unit_id: fresh.unit1.id, patient_id: 'CSV-1' });
      const audit = t.app.get(AuditService);
      for (let i = 0; i < 1_234; i++)
        audit.record({ action: 'report.read', userId: fresh.user1.id, studyId: study.id, ip: '10.0.0.1' });
      await audit.flush();
      const res = await t.http.get(TRAIL, { token: fresh.adminToken, query: { format: 'csv', patient_id: 'CSV-1' } });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/csv; charset=utf-8');
      const lines = String(res.body).trimEnd().split('\r\n');
      expect(lines[0]).toBe('id,at,action,user_id,user_name,share_id,tenant_id,study_id,patient_id,ip,count');
      expect(lines).toHaveLength(1 + 1_234);
      // Split on the commas outside quotes.
      expect(lines[1].split(/,(?=(?:[^"]*"[^"]*")*[^"]*$)/)).toEqual([
        expect.stringMatching(/^[0-9]+$/),
        expect.stringMatching(/^\d{4}-\d\d-\d\dT/),
        'report.read',
        fresh.user1.id,
        `"'=HYPERLINK(""x""),""quoted"""`,
        '',
        fresh.tenant.id,
        study.id,
        'CSV-1',
        '10.0.0.1',
        '',
      ]);
      const ids = lines.slice(1).map((line) => BigInt(line.split(',')[0]));
      expect(new Set(ids.map(String)).size).toBe(1_234);
      expect([...ids].sort((a, b) => (a > b ? -1 : a < b ? 1 : 0))).toEqual(ids);
    });

    it('offers no way to change or delete an entry', async () => {
      for (const method of ['DELETE', 'PATCH', 'PUT', 'POST'] as const) {
        const res = await t.http.request(method, TRAIL, { token: superAdmin.token, body: {} });
        expect({ method, status: res.status }).toEqual({ method, status: 404 });
      }
    });
  });

  it('writes what is buffered when the application shuts down', async () => {
    const app = await createTestApp();
    const study = await createStudy(app.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
    app.app.get(AuditService).record({ action: 'report.write', userId: clinic.admin.id, studyId: study.id });
    expect(app.app.get(AuditService).pending).toBe(1);
    await app.close();
    const rows = await t.db.query(`SELECT action, user_id FROM access_logs WHERE study_id = $1`, [study.id]);
    expect(rows).toEqual([{ action: 'report.write', user_id: clinic.admin.id }]);
  });
});
