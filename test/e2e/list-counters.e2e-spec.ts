/**
 * The counters of the ListCounters migration: per (tenant, unit) study counts and per-tenant patient
 * counts kept by statement triggers, with a version that moves on every change a filtered count
 * could see and stays put on changes it cannot (so the ingestion worker's updates take no lock).
 */
import { DataSource } from 'typeorm';
import { createPatient, createStudy } from '../support/clinical-factories';
import { createTenant, createUnit, TenantRow, UnitRow } from '../support/factories';
import { createTestApp, TestApp } from '../support/app';

describe('list counters (studies per unit, patients per tenant)', () => {
  let t: TestApp;
  let db: DataSource;
  let tenant: TenantRow;
  let unitA: UnitRow;
  let unitB: UnitRow;
  let other: TenantRow;
  let otherUnit: UnitRow;

  const studyCounts = async (tenantId: string) => {
    const rows: Array<{ unit_id: string; studies: string; version: string }> = await db.query(
      `SELECT unit_id, studies, version FROM study_counts WHERE tenant_id = $1`,
      [tenantId],
    );
    return Object.fromEntries(rows.map((r) => [r.unit_id, { studies: Number(r.studies), version: BigInt(r.version) }]));
  };
  const actualStudies = async (tenantId: string) => {
    const rows: Array<{ unit_id: string; n: string }> = await db.query(
      `SELECT unit_id, count(*) AS n FROM studies WHERE tenant_id = $1 GROUP BY unit_id`,
      [tenantId],
    );
    return Object.fromEntries(rows.map((r) => [r.unit_id, Number(r.n)]));
  };
  const countedStudies = async (tenantId: string) =>
    Object.fromEntries(
      Object.entries(await studyCounts(tenantId))
        .filter(([, c]) => c.studies !== 0)
        .map(([unit, c]) => [unit, c.studies]),
    );
  const patientCount = async (tenantId: string) => {
    const [row] = await db.query(`SELECT patients, version FROM patient_counts WHERE tenant_id = $1`, [tenantId]);
    return row ? { patients: Number(row.patients), version: BigInt(row.version) } : { patients: 0, version: 0n };
  };
  const actualPatients = async (tenantId: string) =>
    Number((await db.query(`SELECT count(*) AS n FROM patients WHERE tenant_id = $1`, [tenantId]))[0].n);

  beforeAll(async () => {
    t = await createTestApp();
    db = t.db;
  });
  afterAll(() => t.close());

  beforeEach(async () => {
    tenant = await createTenant(db);
    unitA = await createUnit(db, tenant.id);
    unitB = await createUnit(db, tenant.id);
    other = await createTenant(db);
    otherUnit = await createUnit(db, other.id);
  });

  it('counts single and multi-row inserts per unit, and deletes', async () => {
    await createStudy(db, { tenant_id: tenant.id, unit_id: unitA.id });
    await createStudy(db, { tenant_id: tenant.id, unit_id: unitA.id });
    await createStudy(db, { tenant_id: tenant.id, unit_id: unitB.id });
    await createStudy(db, { tenant_id: other.id, unit_id: otherUnit.id });
    await db.query(
      `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name, study_date)
       SELECT $1, CASE WHEN n % 3 = 0 THEN $2::uuid ELSE $3::uuid END, $4 || n, '1.2.' || n, 'P' || n, 'Nome ' || n, current_date
         FROM generate_series(1, 30) AS n`,
      [tenant.id, unitA.id, unitB.id, `bulk-${tenant.id}-`],
    );
    expect(await countedStudies(tenant.id)).toEqual({ [unitA.id]: 12, [unitB.id]: 21 });
    expect(await countedStudies(other.id)).toEqual({ [otherUnit.id]: 1 });

    await db.query(`DELETE FROM studies WHERE tenant_id = $1 AND unit_id = $2 AND imgsrv_study_id LIKE 'bulk-%'`, [
      tenant.id,
      unitB.id,
    ]);
    expect(await countedStudies(tenant.id)).toEqual({ [unitA.id]: 12, [unitB.id]: 1 });
    expect(await countedStudies(tenant.id)).toEqual(await actualStudies(tenant.id));
  });

  it('moves the count with a study that changes unit or tenant (the quarantine case), upsert included', async () => {
    const study = await createStudy(db, { tenant_id: other.id, unit_id: otherUnit.id });
    await db.query(`UPDATE studies SET tenant_id = $1, unit_id = $2 WHERE id = $3`, [tenant.id, unitA.id, study.id]);
    expect(await countedStudies(other.id)).toEqual({});
    expect(await countedStudies(tenant.id)).toEqual({ [unitA.id]: 1 });

    // The ingestion's upsert: ON CONFLICT DO UPDATE fires the update trigger, not the insert one.
    await db.query(
      `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name, study_date)
       VALUES ($1, $2, $3, '1.2.3', 'P', 'Nome', current_date)
       ON CONFLICT (imgsrv_study_id) DO UPDATE SET unit_id = EXCLUDED.unit_id`,
      [tenant.id, unitB.id, study.imgsrv_study_id],
    );
    expect(await countedStudies(tenant.id)).toEqual({ [unitB.id]: 1 });
    expect(await countedStudies(tenant.id)).toEqual(await actualStudies(tenant.id));
  });

  it('changes the version when a searchable field, the patient link or the report status changes, not on other updates', async () => {
    const study = await createStudy(db, { tenant_id: tenant.id, unit_id: unitA.id });
    const before = (await studyCounts(tenant.id))[unitA.id].version;

    await db.query(`UPDATE studies SET modalities = '{CT,SR}', study_description = 'x', updated_at = now() WHERE id = $1`, [
      study.id,
    ]);
    expect((await studyCounts(tenant.id))[unitA.id].version).toBe(before);

    let last = before;
    for (const change of [
      `patient_name = 'Outro Nome'`,
      `patient_id = 'OTHER-ID'`,
      `accession_number = 'ACC-OTHER'`,
      // A report-status list's total is kept under the version.
      `report_status = 'final'`,
      `patient_uuid = (SELECT id FROM patients WHERE tenant_id = '${tenant.id}' LIMIT 1)`,
    ]) {
      if (change.startsWith('patient_uuid')) await createPatient(db, tenant.id);
      await db.query(`UPDATE studies SET ${change} WHERE id = $1`, [study.id]);
      const now = (await studyCounts(tenant.id))[unitA.id];
      expect(now.version).toBeGreaterThan(last);
      expect(now.studies).toBe(1);
      last = now.version;
    }
    // A patient deleted under a study: the FK sets patient_uuid to null, which is a change too.
    await db.query(`DELETE FROM patients WHERE tenant_id = $1`, [tenant.id]);
    expect((await studyCounts(tenant.id))[unitA.id].version).toBeGreaterThan(last);
  });

  it('counts patients per tenant through inserts, upserts, renames and deletes', async () => {
    const p1 = await createPatient(db, tenant.id, { patient_id: 'P-1' });
    await createPatient(db, tenant.id, { patient_id: 'P-2' });
    await createPatient(db, other.id, { patient_id: 'P-1' });
    expect((await patientCount(tenant.id)).patients).toBe(2);
    expect((await patientCount(other.id)).patients).toBe(1);

    const before = (await patientCount(tenant.id)).version;
    await db.query(`UPDATE patients SET patient_sex = 'M', updated_at = now() WHERE id = $1`, [p1.id]);
    expect((await patientCount(tenant.id)).version).toBe(before);
    await db.query(
      `INSERT INTO patients (tenant_id, patient_id, patient_name) VALUES ($1, 'P-1', 'Novo Nome')
       ON CONFLICT (tenant_id, patient_id) DO UPDATE SET patient_name = EXCLUDED.patient_name`,
      [tenant.id],
    );
    const renamed = await patientCount(tenant.id);
    expect(renamed).toEqual({ patients: 2, version: expect.any(BigInt) });
    expect(renamed.version).toBeGreaterThan(before);

    await db.query(`DELETE FROM patients WHERE id = $1`, [p1.id]);
    expect((await patientCount(tenant.id)).patients).toBe(1);
    expect((await patientCount(tenant.id)).patients).toBe(await actualPatients(tenant.id));
  });

  // rebuild_list_counts() recounts the whole run database (its studies and patients),
  // which the large-clinic tests of other files fill with 40,000 studies and more, and waits for
  // their writes (SHARE lock): 5 s was not enough on a slow machine when it ran after them.
  it('rebuild_list_counts() recounts everything to the same totals with new versions', async () => {
    await createStudy(db, { tenant_id: tenant.id, unit_id: unitA.id });
    await createPatient(db, tenant.id);
    const before = await studyCounts(tenant.id);
    const runner = db.createQueryRunner();
    await runner.connect();
    try {
      // In a transaction that is rolled back: other test files share this database.
      await runner.startTransaction();
      await runner.query(`SELECT rebuild_list_counts()`);
      const [after] = await runner.query(`SELECT studies, version FROM study_counts WHERE tenant_id = $1 AND unit_id = $2`, [
        tenant.id,
        unitA.id,
      ]);
      expect(Number(after.studies)).toBe(1);
      expect(BigInt(after.version)).toBeGreaterThan(before[unitA.id].version);
      const [patients] = await runner.query(`SELECT patients FROM patient_counts WHERE tenant_id = $1`, [tenant.id]);
      expect(Number(patients.patients)).toBe(1);
    } finally {
      await runner.rollbackTransaction();
      await runner.release();
    }
  }, 60_000);

  it('drops the counter rows with their unit or tenant', async () => {
    await createStudy(db, { tenant_id: tenant.id, unit_id: unitB.id });
    await db.query(`DELETE FROM studies WHERE unit_id = $1`, [unitB.id]);
    await db.query(`DELETE FROM units WHERE id = $1`, [unitB.id]);
    expect(Object.keys(await studyCounts(tenant.id))).not.toContain(unitB.id);
  });
});
