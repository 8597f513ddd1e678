import { MetricsService } from '../../src/operations';
import { createStudy } from '../support/clinical-factories';
import { createModality, createTenant, createUnit } from '../support/factories';
import { createTestApp, TestApp } from '../support/app';

/** POST /api/imgsrv/door: the image server's question for each instance a device sends (docs/dicom-door.md). */
describe('POST /api/imgsrv/door', () => {
  let t: TestApp;
  let secret: string;
  let studyUid: string;
  let clinicA: { tenant: string; unit: string };

  beforeAll(async () => {
    t = await createTestApp();
    secret = t.config.WEBHOOK_SECRET;
    const register = async (aet: string, ip: string) => {
      const tenant = await createTenant(t.db);
      const unit = await createUnit(t.db, tenant.id);
      await createModality(t.db, { tenant_id: tenant.id, unit_id: unit.id, aet, ip_address: ip });
      return { tenant: tenant.id, unit: unit.id };
    };
    const a = await register(`DOOR_A_${process.pid}`.slice(0, 16), '10.1.0.1');
    clinicA = a;
    await register(`DOOR_B_${process.pid}`.slice(0, 16), '10.1.0.2');
    studyUid = (await createStudy(t.db, { tenant_id: a.tenant, unit_id: a.unit })).study_instance_uid;
  });
  afterAll(() => t.close());

  const ask = (body: unknown, headers: Record<string, string> = { 'x-webhook-secret': secret }) =>
    t.http.post('/api/imgsrv/door', { body, headers });
  const from = (aet: string, ip: string) => ({ Origin: 'DicomProtocol', Aet: aet, Ip: ip });
  const refusals = async (reason: string) => {
    const text = (await t.app.get(MetricsService).render()) as string;
    const line = text.split('\n').find((l) => l.startsWith(`pacs_dicom_door_refused_total{reason="${reason}"} `));
    return line ? Number(line.split(' ')[1]) : 0;
  };

  it('answers 401 {error: Unauthorized} without the secret or with a wrong one, before reading the body', async () => {
    for (const headers of [{}, { 'x-webhook-secret': 'wrong' }] as Array<Record<string, string>>) {
      const res = await ask({}, headers);
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized' });
    }
  });

  it('answers 400 {error: Invalid door request} for a body that is not the question', async () => {
    const nul = { Sender: { Origin: 'DicomProtocol', Aet: 'CT' }, StudyInstanceUID: '1.2.3\u0000' };
    for (const body of [{}, { Sender: 'CT' }, { Sender: {}, StudyInstanceUID: 42 }, ['x'], nul]) {
      const res = await ask(body);
      expect(res.status).toBe(400);
      expect(res.body).toEqual({ error: 'Invalid door request' });
    }
  });

  it("lets the study's own clinic's device in and refuses, counting, everyone else", async () => {
    const own = await ask({
      StudyInstanceUID: studyUid,
      PatientID: 'P',
      Sender: from(`door_a_${process.pid}`.slice(0, 16), '::ffff:10.1.0.1'),
    });
    expect(own.status).toBe(200);
    expect(own.body).toEqual({ allow: true });

    const before = await refusals('other_clinic');
    const other = await ask({
      StudyInstanceUID: studyUid,
      PatientID: 'P',
      Sender: from(`DOOR_B_${process.pid}`.slice(0, 16), '10.1.0.2'),
    });
    expect(other.status).toBe(200);
    expect(other.body).toMatchObject({ allow: false, reason: 'other_clinic' });
    expect(await refusals('other_clinic')).toBe(before + 1);

    const stranger = await ask({ StudyInstanceUID: studyUid, PatientID: 'P', Sender: from('EVIL', '10.1.0.1') });
    expect(stranger.body).toMatchObject({ allow: false, reason: 'unregistered_sender' });
  });

  it("treats a study uploaded through the API (STOW-RS) as its clinic's before the index has it", async () => {
    // The upload's instances are on the image server (Holder: the service) and its placement is
    // recorded; the index places the study only after the image server finds it stable.
    const uid = `1.2.826.0.1.${process.pid}.${Date.now()}`;
    await t.db.query(`INSERT INTO upload_placements (study_instance_uid, tenant_id, unit_id) VALUES ($1, $2, $3)`, [
      uid,
      clinicA.tenant,
      clinicA.unit,
    ]);
    const holder = { Origin: 'Plugins', Aet: null, Ip: null };
    const stranger = await ask({ StudyInstanceUID: uid, PatientID: 'P', Sender: from('EVIL', '10.9.9.9'), Holder: holder });
    expect(stranger.body).toMatchObject({ allow: false, reason: 'unregistered_sender' });
    const other = await ask({
      StudyInstanceUID: uid,
      PatientID: 'P',
      Sender: from(`DOOR_B_${process.pid}`.slice(0, 16), '10.1.0.2'),
      Holder: holder,
    });
    expect(other.body).toMatchObject({ allow: false, reason: 'other_clinic' });
    const own = await ask({
      StudyInstanceUID: uid,
      PatientID: 'P',
      Sender: from(`DOOR_A_${process.pid}`.slice(0, 16), '10.1.0.1'),
      Holder: holder,
    });
    expect(own.body).toEqual({ allow: true });
  });

  it('lets anyone start a study nobody holds', async () => {
    const res = await ask({ StudyInstanceUID: '1.2.3.4.5.6.7.8.9', PatientID: 'P', Sender: from('EVIL', '10.9.9.9') });
    expect(res.body).toEqual({ allow: true });
  });

  describe('a StudyInstanceUID or PatientID longer than DICOM allows (decisions.md §2: never cut)', () => {
    // A UID of `length` characters, as a device may send it: digits and dots.
    const longUid = (length: number) => `2.25.${'9'.repeat(length - 5)}`;

    it('decides on a 300- and a 10,000-character UID as on any other: a new study is let in, a held one keeps its door', async () => {
      for (const length of [300, 10_000]) {
        const uid = longUid(length);
        const fresh = await ask({ StudyInstanceUID: uid, PatientID: 'P', Sender: from('EVIL', '10.9.9.9') });
        expect(fresh.status).toBe(200);
        expect(fresh.body).toEqual({ allow: true });

        // Its first instance came from that stranger: nobody else's joins it (the study job
        // quarantines the study itself, invalid_uid).
        const before = await refusals('quarantined_study');
        const joiner = await ask({
          StudyInstanceUID: uid,
          PatientID: 'P',
          Sender: from(`DOOR_A_${process.pid}`.slice(0, 16), '10.1.0.1'),
          Holder: from('EVIL', '10.9.9.9'),
        });
        expect(joiner.status).toBe(200);
        expect(joiner.body).toMatchObject({ allow: false, reason: 'quarantined_study' });
        expect(await refusals('quarantined_study')).toBe(before + 1);
      }
    });

    it('answers up to the bound (65,536 characters) and 400 {error: Invalid door request} past it', async () => {
      const atBound = await ask({
        StudyInstanceUID: longUid(65_536),
        PatientID: 'P'.repeat(65_536),
        Sender: from('EVIL', '10.9.9.9'),
      });
      expect(atBound.status).toBe(200);
      expect(atBound.body).toEqual({ allow: true });
      for (const body of [
        { StudyInstanceUID: longUid(65_537), PatientID: 'P', Sender: from('EVIL', '10.9.9.9') },
        { StudyInstanceUID: longUid(70), PatientID: 'P'.repeat(65_537), Sender: from('EVIL', '10.9.9.9') },
      ]) {
        const res = await ask(body);
        expect(res.status).toBe(400);
        expect(res.body).toEqual({ error: 'Invalid door request' });
      }
    });
  });

  it('answers 503 {message: Service unavailable.} when PostgreSQL does not answer, never 500 or an allow (the filter then refuses)', async () => {
    const down = await createTestApp();
    try {
      await down.db.destroy();
      const res = await down.http.post('/api/imgsrv/door', {
        body: { StudyInstanceUID: `2.25.${Date.now()}`, PatientID: 'P', Sender: from('NEW_DEVICE', '10.9.9.8') },
        headers: { 'x-webhook-secret': down.config.WEBHOOK_SECRET },
      });
      expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: { message: 'Service unavailable.' } });
    } finally {
      await down.close().catch(() => undefined);
    }
  }, 30_000);
});
