import { randomUUID } from 'crypto';
import { UploadPlacementsRepository } from '../../src/exchange/upload-placements.repository';
import { IngestionRepository } from '../../src/ingestion/ingestion.repository';
import { createTestApp, TestApp } from '../support/app';
import { createPatient, createStudy, dicomUid, imgsrvId } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser, createTenant, createUnit, createUser, login } from '../support/factories';
import { tag } from '../support/expectations';

/**
 * The uniqueness and one-of rules the other specs do not race: two (or more) concurrent requests,
 * exactly one wins, the others get the contract's answer and never a 500, and the database holds
 * one row.
 */
describe('Uniqueness under concurrent requests', () => {
  let t: TestApp;
  let superToken: string;

  beforeAll(async () => {
    t = await createTestApp();
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
  });
  afterAll(() => t.close());

  const statuses = (responses: Array<{ status: number }>) => responses.map((r) => r.status).sort();

  it('tenant slug: one of 10 concurrent creations with one slug wins, the rest 422 errors.slug', async () => {
    const slug = `race-tenant-${tag()}`;
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        t.http.post('/api/admin/tenants', { token: superToken, body: { name: `Slug Racer ${i} ${tag()}`, slug } }),
      ),
    );
    expect(statuses(responses)).toEqual([201, ...Array(9).fill(422)]);
    for (const r of responses.filter((x) => x.status !== 201)) {
      expect(r.body.errors.slug).toEqual(['The slug has already been taken.']);
    }
    const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM tenants WHERE slug = $1`, [slug]);
    expect(count).toBe(1);
  });

  it('modality name in a unit: one of 10 concurrent registrations (in different cases) wins, the rest 422 errors.name', async () => {
    const tenant = await createTenant(t.db);
    const unit = await createUnit(t.db, tenant.id);
    const name = `Race CT ${tag()}`;
    const responses = await Promise.all(
      Array.from({ length: 10 }, (_, i) =>
        t.http.post('/api/admin/modalities', {
          token: superToken,
          body: {
            tenant_id: tenant.id,
            unit_id: unit.id,
            name: i % 2 ? name.toUpperCase() : name.toLowerCase(),
            aet: `R${randomUUID().replace(/-/g, '').slice(0, 12)}`.toUpperCase(),
            ip_address: '10.8.0.12',
          },
        }),
      ),
    );
    expect(statuses(responses)).toEqual([201, ...Array(9).fill(422)]);
    for (const r of responses.filter((x) => x.status !== 201)) {
      expect(r.body.errors.name).toEqual(['A modality with that name already exists in this unit.']);
    }
    const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM modalities WHERE unit_id = $1`, [unit.id]);
    expect(count).toBe(1);
  });

  it('user email on PATCH: one of 10 concurrent changes to one email (in different cases) wins, the rest 422 errors.email', async () => {
    const c = await createClinic(t.db, t.http);
    const users = await Promise.all(
      Array.from({ length: 10 }, () => createUser(t.db, { tenant_id: c.tenant.id, unit_id: c.unit1.id })),
    );
    const email = `race-${tag()}@example.test`;
    const responses = await Promise.all(
      users.map((u, i) =>
        t.http.patch(`/api/admin/users/${u.id}`, { token: superToken, body: { email: i % 2 ? email.toUpperCase() : email } }),
      ),
    );
    expect(statuses(responses)).toEqual([200, ...Array(9).fill(422)]);
    for (const r of responses.filter((x) => x.status !== 200)) {
      expect(r.body.errors.email).toEqual(['The email has already been taken.']);
    }
    const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM users WHERE lower(email) = $1`, [email]);
    expect(count).toBe(1);
  });

  describe('reports', () => {
    async function setup() {
      const c = await createClinic(t.db, t.http);
      const doctor = await createUser(t.db, { tenant_id: c.tenant.id, unit_id: c.unit1.id });
      await t.db.query(`UPDATE users SET crm = '123456/SP' WHERE id = $1`, [doctor.id]);
      const patient = await createPatient(t.db, c.tenant.id, { patient_name: 'RACE PATIENT', patient_id: `P-${tag()}` });
      const study = await createStudy(t.db, { tenant_id: c.tenant.id, unit_id: c.unit1.id, patient });
      return { c, study, token: await login(t.http, doctor.email) };
    }
    const url = (studyId: string, rest = '') => `/api/studies/${studyId}/reports${rest}`;

    it('signing one draft four times at once: one 200, the others 409, one kept PDF', async () => {
      const { study, token } = await setup();
      const draft = (await t.http.post(url(study.id), { token, body: { findings: 'x' } })).body;
      const responses = await Promise.all(
        Array.from({ length: 4 }, () => t.http.post(url(study.id, `/${draft.id}/sign`), { token, body: { version: 1 } })),
      );
      expect(statuses(responses)).toEqual([200, 409, 409, 409]);
      const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM report_pdfs WHERE report_id = $1`, [draft.id]);
      expect(count).toBe(1);
    });

    it('signing and deleting one draft at once: never a 500, and the report is either final with its PDF or gone', async () => {
      for (let round = 0; round < 3; round++) {
        const { study, token } = await setup();
        const draft = (await t.http.post(url(study.id), { token, body: { findings: 'x' } })).body;
        const [signed, deleted] = await Promise.all([
          t.http.post(url(study.id, `/${draft.id}/sign`), { token, body: { version: 1 } }),
          t.http.delete(url(study.id, `/${draft.id}`), { token }),
        ]);
        expect([signed.status, deleted.status]).not.toContain(500);
        const rows = await t.db.query(`SELECT status FROM reports WHERE id = $1`, [draft.id]);
        if (signed.status === 200) {
          expect(deleted.status).toBe(409);
          expect(rows).toEqual([{ status: 'final' }]);
        } else {
          expect(deleted.status).toBe(204);
          expect(rows).toEqual([]);
        }
      }
    });

    it('four concurrent addenda on one final report: one 201, the others 409', async () => {
      const { study, token } = await setup();
      const draft = (await t.http.post(url(study.id), { token, body: { findings: 'x' } })).body;
      expect((await t.http.post(url(study.id, `/${draft.id}/sign`), { token, body: { version: 1 } })).status).toBe(200);
      const responses = await Promise.all(
        Array.from({ length: 4 }, () => t.http.post(url(study.id, `/${draft.id}/addenda`), { token, body: { findings: 'y' } })),
      );
      expect(statuses(responses)).toEqual([201, 409, 409, 409]);
    });
  });

  it('global templates: ten activations at once leave exactly one active global template', async () => {
    const c = await createClinic(t.db, t.http);
    const ids: string[] = [];
    for (let i = 0; i < 10; i++) {
      const [row] = await t.db.query(
        `INSERT INTO report_templates (tenant_id, unit_id, name, is_active) VALUES ($1, NULL, $2, false) RETURNING id`,
        [c.tenant.id, `Global ${i}`],
      );
      ids.push(row.id);
    }
    const responses = await Promise.all(
      ids.map((id) => t.http.patch(`/api/tenant/templates/${id}`, { token: c.adminToken, body: { is_active: true } })),
    );
    expect(statuses(responses)).toEqual(Array(10).fill(200));
    const active = await t.db.query(
      `SELECT id FROM report_templates WHERE tenant_id = $1 AND unit_id IS NULL AND is_active AND deleted_at IS NULL`,
      [c.tenant.id],
    );
    expect(active).toHaveLength(1);
  });

  describe("ingestion (the worker's writes)", () => {
    const fields = (imgsrvStudyId: string, patientId: string) => ({
      imgsrv_study_id: imgsrvStudyId,
      study_instance_uid: dicomUid(),
      patient_id: patientId,
      patient_name: 'RACE^PATIENT',
      patient_birth_date: null,
      patient_sex: null,
      accession_number: null,
      study_date: '2024-01-02',
      study_description: null,
    });

    it('one patient per (tenant, Patient ID) when ten studies of a new patient are saved at once', async () => {
      const repo = new IngestionRepository(t.db);
      const tenant = await createTenant(t.db);
      const unit = await createUnit(t.db, tenant.id);
      const patientId = `RACE-${tag()}`;
      const place = { tenant_id: tenant.id, unit_id: unit.id, quarantined: false };
      const saved = await Promise.all(
        Array.from({ length: 10 }, () => repo.saveStudy(fields(imgsrvId(), patientId), place, { aet: null, ip: null })),
      );
      const patients = await t.db.query(`SELECT id FROM patients WHERE tenant_id = $1 AND patient_id = $2`, [
        tenant.id,
        patientId,
      ]);
      expect(patients).toHaveLength(1);
      expect(new Set(saved.map((s) => s.patient_uuid))).toEqual(new Set([patients[0].id]));
    });

    it('one study per imgsrv_study_id when it is saved ten times at once', async () => {
      const repo = new IngestionRepository(t.db);
      const tenant = await createTenant(t.db);
      const unit = await createUnit(t.db, tenant.id);
      const id = imgsrvId();
      const place = { tenant_id: tenant.id, unit_id: unit.id, quarantined: false };
      const saved = await Promise.all(
        Array.from({ length: 10 }, () => repo.saveStudy(fields(id, `P-${tag()}`), place, { aet: null, ip: null })),
      );
      expect(saved.filter((s) => s.inserted)).toHaveLength(1);
      const [{ count }] = await t.db.query(`SELECT count(*)::int AS count FROM studies WHERE imgsrv_study_id = $1`, [id]);
      expect(count).toBe(1);
    });
  });

  describe('upload placement (one per StudyInstanceUID)', () => {
    /** Resolves once `count` statements on upload_placements wait for a lock. */
    async function waitersOnPlacements(count: number): Promise<void> {
      for (let i = 0; i < 200; i++) {
        const [{ n }] = await t.db.query(
          `SELECT count(*)::int AS n FROM pg_stat_activity
            WHERE wait_event_type = 'Lock' AND query ILIKE '%upload_placements%' AND pid <> pg_backend_pid()`,
        );
        if (n >= count) return;
        await new Promise((resolve) => setTimeout(resolve, 25));
      }
      throw new Error(`fewer than ${count} statements waited`);
    }

    it('a claim that lost to a placement taken back before it could read it claims the study itself', async () => {
      const repo = new UploadPlacementsRepository(t.db);
      const c = await createClinic(t.db, t.http);
      const uid = dicomUid();
      const mine = { tenant_id: c.tenant.id, unit_id: c.unit1.id };
      const holder = t.db.createQueryRunner();
      const remover = t.db.createQueryRunner();
      try {
        // Another upload holds the placement (not committed yet) ...
        await holder.startTransaction();
        await holder.query(`INSERT INTO upload_placements (study_instance_uid, tenant_id, unit_id) VALUES ($1, $2, $3)`, [
          uid,
          c.tenant.id,
          c.unit2.id,
        ]);
        const claiming = repo.claim(uid, mine, c.user1.id);
        await waitersOnPlacements(1);
        // ... and takes it back right after this claim's insert gave way to it (its body stored nothing).
        await remover.startTransaction();
        const locked = remover.query(`LOCK TABLE upload_placements IN ACCESS EXCLUSIVE MODE`);
        await waitersOnPlacements(2);
        await holder.commitTransaction();
        await locked;
        await remover.query(`DELETE FROM upload_placements WHERE study_instance_uid = $1`, [uid]);
        await remover.commitTransaction();
        expect(await claiming).toEqual({ place: mine, made: true });
        const rows = await t.db.query(`SELECT unit_id FROM upload_placements WHERE study_instance_uid = $1`, [uid]);
        expect(rows).toEqual([{ unit_id: c.unit1.id }]);
      } finally {
        await holder.release();
        await remover.release();
      }
    });
  });
});
