import { ImgsrvClient, OrthancStudy } from '../../src/imgsrv';
import { IngestionQueue } from '../../src/ingestion/ingestion-queue.service';
import { localDate } from '../../src/ingestion/dicom-mapping';
import { IngestionRepository } from '../../src/ingestion/ingestion.repository';
import { StudyJobService } from '../../src/ingestion/study-job.service';
import { MetricsService } from '../../src/operations';
import { dicomUid, imgsrvId } from '../support/clinical-factories';
import { createModality, createTenant, createUnit } from '../support/factories';
import { createTestApp, TestApp } from '../support/app';

/**
 * Where the study job puts a study and what it writes (decisions.md §2 "A device is its AE title
 * and its address", §2 "Tenant status cascade", §3 "Job" and "Field mapping"), on the real
 * PostgreSQL, with the image server's answers given: a placed study never changes clinic, a
 * deactivated clinic still receives its studies, a study sent again keeps what the archive owns.
 */
describe('Study job: where a study is placed', () => {
  let t: TestApp;
  let repository: IngestionRepository;
  let quarantine: { tenant_id: string; unit_id: string };
  let clinicA: Device;
  let clinicB: Device;

  interface Device {
    tenant: string;
    unit: string;
    aet: string;
    ip: string;
  }

  let devices = 0;
  async function registerDevice(options: { active?: boolean } = {}): Promise<Device> {
    const tenant = await createTenant(t.db, { is_active: options.active ?? true });
    const unit = await createUnit(t.db, tenant.id);
    if (options.active === false) await t.db.query(`UPDATE units SET is_active = false WHERE id = $1`, [unit.id]);
    const aet = `PLACE${++devices}_${process.pid}`.slice(0, 16);
    const ip = `10.7.0.${devices}`;
    await createModality(t.db, { tenant_id: tenant.id, unit_id: unit.id, aet, ip_address: ip });
    return { tenant: tenant.id, unit: unit.id, aet, ip };
  }

  /** One study on the "image server", sent by `sender` (its only instance's RemoteAET and RemoteIP). */
  function studyJob(study: OrthancStudy, sender: { aet: string; ip: string }): StudyJobService {
    const imgsrv = {
      lastChangeSeq: async () => 1,
      getStudy: async (id: string) => (id === study.ID ? study : null),
      getSeries: async (id: string) => ({ ID: id, Instances: [`${id}-i1`] }),
      getInstanceMetadata: async () => ({ Origin: 'DicomProtocol', RemoteAET: sender.aet, RemoteIP: sender.ip }),
    } as unknown as ImgsrvClient;
    const queue = { queueIndex: async () => ({}) } as unknown as IngestionQueue;
    return new StudyJobService(imgsrv, repository, queue, t.app.get(MetricsService));
  }

  const newStudy = (patientId: string): OrthancStudy => ({
    ID: imgsrvId(),
    MainDicomTags: { StudyInstanceUID: dicomUid(), StudyDate: '20240115' },
    PatientMainDicomTags: { PatientID: patientId, PatientName: 'PLACED^PATIENT' },
    Series: [imgsrvId()],
  });

  const send = (study: OrthancStudy, sender: { aet: string; ip: string }) =>
    studyJob(study, sender).run({ imgsrvStudyId: study.ID, source: 'webhook' });

  async function row(imgsrvStudyId: string) {
    const [found] = await t.db.query(
      `SELECT s.id, s.tenant_id, s.unit_id, p.tenant_id AS patient_tenant_id
         FROM studies s JOIN patients p ON p.id = s.patient_uuid WHERE s.imgsrv_study_id = $1`,
      [imgsrvStudyId],
    );
    return found;
  }

  const patientsOf = async (tenantId: string, patientId: string) =>
    (await t.db.query(`SELECT id FROM patients WHERE tenant_id = $1 AND patient_id = $2`, [tenantId, patientId])).length;

  async function untrusted(reason: string): Promise<number> {
    const text = (await t.app.get(MetricsService).render()) as string;
    const line = text.split('\n').find((l) => l.startsWith(`pacs_ingestion_untrusted_sender_total{reason="${reason}"} `));
    return line ? Number(line.split(' ')[1]) : 0;
  }

  beforeAll(async () => {
    t = await createTestApp();
    repository = new IngestionRepository(t.db);
    quarantine = await repository.quarantinePlacement();
    clinicA = await registerDevice();
    clinicB = await registerDevice();
  });
  afterAll(() => t.close());

  it("keeps a study of clinic A in clinic A's unit when clinic B's registered device sends it again, and counts it", async () => {
    const patientId = `KEEP-${imgsrvId()}`;
    const study = newStudy(patientId);
    const first = await send(study, clinicA);
    expect(first).toMatchObject({ outcome: 'saved', inserted: true, quarantined: false });
    const before = await untrusted('other_clinic');

    const again = await send(study, clinicB);
    expect(again).toMatchObject({ outcome: 'saved', studyId: first.studyId, inserted: false, quarantined: false });
    expect(again.untrusted).toBe('other_clinic');
    expect(await row(study.ID)).toMatchObject({
      tenant_id: clinicA.tenant,
      unit_id: clinicA.unit,
      patient_tenant_id: clinicA.tenant,
    });
    expect(await patientsOf(clinicB.tenant, patientId)).toBe(0);
    expect(await untrusted('other_clinic')).toBe(before + 1);
  });

  it('keeps a placed study in its clinic when an unregistered AE title, or a registered one from another address, sends it again', async () => {
    const study = newStudy(`KEEP-${imgsrvId()}`);
    await send(study, clinicA);
    for (const [sender, reason] of [
      [{ aet: 'NOBODY', ip: clinicA.ip }, 'unknown_aet'],
      [{ aet: clinicA.aet, ip: '10.99.0.1' }, 'address_mismatch'],
    ] as const) {
      const again = await send(study, sender);
      expect(again).toMatchObject({ quarantined: false, untrusted: reason });
      expect(await row(study.ID)).toMatchObject({ tenant_id: clinicA.tenant, unit_id: clinicA.unit });
    }
  });

  it('moves a quarantined study to the clinic of its now registered device, leaving no empty quarantine patient', async () => {
    const patientId = `MOVE-${imgsrvId()}`;
    const study = newStudy(patientId);
    const held = await send(study, { aet: 'NOT_YET', ip: clinicB.ip });
    expect(held).toMatchObject({ quarantined: true, untrusted: 'unknown_aet' });
    expect(await row(study.ID)).toMatchObject({ tenant_id: quarantine.tenant_id, unit_id: quarantine.unit_id });

    const moved = await send(study, clinicB);
    expect(moved).toMatchObject({ studyId: held.studyId, quarantined: false });
    expect(await row(study.ID)).toMatchObject({
      tenant_id: clinicB.tenant,
      unit_id: clinicB.unit,
      patient_tenant_id: clinicB.tenant,
    });
    expect(await patientsOf(quarantine.tenant_id, patientId)).toBe(0);
  });

  it('releases a quarantined study once its device is registered in a clinic, not when it is registered in quarantine itself', async () => {
    const aet = `QREG_${process.pid}`.slice(0, 16);
    const study = newStudy(`QREG-${imgsrvId()}`);
    const sender = { aet, ip: '10.7.9.1' };
    expect(await send(study, sender)).toMatchObject({ quarantined: true, untrusted: 'unknown_aet' });
    // Registered under the quarantine tenant: the study's place does not change, so re-reading it
    // at every reconciliation would change nothing, forever.
    await createModality(t.db, { ...quarantine, aet, ip_address: sender.ip });
    expect(await send(study, sender)).toMatchObject({ quarantined: true });
    expect(await repository.quarantinedWithRegisteredDevice(10_000)).not.toContain(study.ID);

    const clinic = await createTenant(t.db);
    const unit = await createUnit(t.db, clinic.id);
    await t.db.query(`UPDATE modalities SET tenant_id = $1, unit_id = $2 WHERE aet = $3`, [clinic.id, unit.id, aet]);
    expect(await repository.quarantinedWithRegisteredDevice(10_000)).toContain(study.ID);
  });

  it("maps a new study's fields (report_status pending) and keeps, when it is sent again, its report status and the date an undated study was first archived", async () => {
    const study = newStudy(`MAP-${imgsrvId()}`);
    study.MainDicomTags = { StudyInstanceUID: study.MainDicomTags.StudyInstanceUID };
    study.PatientMainDicomTags = { ...study.PatientMainDicomTags, PatientBirthDate: '20230230', PatientSex: 'O' };
    await send(study, clinicA);
    const fields = async () =>
      (
        await t.db.query(
          `SELECT to_char(study_date, 'YYYY-MM-DD') AS study_date, patient_birth_date, patient_sex, report_status,
                  reported_at IS NOT NULL AS reported
             FROM studies WHERE imgsrv_study_id = $1`,
          [study.ID],
        )
      )[0];
    expect(await fields()).toEqual({
      study_date: localDate(),
      patient_birth_date: null,
      patient_sex: null,
      report_status: 'pending',
      reported: false,
    });

    // Reported, and first archived on an earlier day: sending it again changes neither.
    await t.db.query(
      `UPDATE studies SET report_status = 'final', reported_at = now(), study_date = '2020-02-02' WHERE imgsrv_study_id = $1`,
      [study.ID],
    );
    await send(study, clinicA);
    expect(await fields()).toMatchObject({ study_date: '2020-02-02', report_status: 'final', reported: true });

    // A study date it now carries is taken.
    study.MainDicomTags.StudyDate = '20240301';
    await send(study, clinicA);
    expect(await fields()).toMatchObject({ study_date: '2024-03-01', report_status: 'final' });
  });

  describe('a deactivated clinic (ingestion never drops a study)', () => {
    let inactive: Device;
    beforeAll(async () => {
      inactive = await registerDevice({ active: false });
    });

    it("archives a study its registered device sends in that clinic's unit, not in quarantine", async () => {
      const study = newStudy(`OFF-${imgsrvId()}`);
      const saved = await send(study, inactive);
      expect(saved).toMatchObject({ outcome: 'saved', inserted: true, quarantined: false });
      expect(saved.untrusted).toBeUndefined();
      expect(await row(study.ID)).toMatchObject({ tenant_id: inactive.tenant, unit_id: inactive.unit });
    });

    it("lets its registered device in at the study's door, for a new study and for one of its own", async () => {
      const study = newStudy(`OFF-${imgsrvId()}`);
      await send(study, inactive);
      const sender = { Origin: 'DicomProtocol', Aet: inactive.aet, Ip: inactive.ip };
      for (const uid of [dicomUid(), study.MainDicomTags.StudyInstanceUID]) {
        const res = await t.http.post('/api/imgsrv/door', {
          body: { StudyInstanceUID: uid, PatientID: 'P', Sender: sender, Holder: sender },
          headers: { 'x-webhook-secret': t.config.WEBHOOK_SECRET },
        });
        expect(res.status).toBe(200);
        expect(res.body).toEqual({ allow: true });
      }
    });
  });
});
