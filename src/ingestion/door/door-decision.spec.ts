import { decideDoor, DoorArchive, DoorRequest, StoredBy } from './door-decision';
import { MAX_DICOM_VALUE, parseDoorRequest } from './door-request';

const device = (aet: string, ip = '10.0.0.1'): StoredBy => ({ origin: 'DicomProtocol', aet, ip });
const SERVICE: StoredBy = { origin: 'RestApi', aet: null, ip: null };
const CLINIC_A_CT = device('CT_A');
const CLINIC_B_CT = device('CT_B', '10.0.0.2');
const STRANGER = device('EVIL', '10.0.0.9');

/** Clinic A's CT at 10.0.0.1, clinic B's at 10.0.0.2; the archive places the studies given. */
function archive(clinicsOfStudy: string[] = []): DoorArchive {
  const registered: Record<string, { tenant_id: string; ip_address: string }> = {
    CT_A: { tenant_id: 'A', ip_address: '::ffff:10.0.0.1' },
    CT_B: { tenant_id: 'B', ip_address: '10.0.0.2' },
  };
  return {
    clinicsOfStudy,
    clinicOfDevice: (sender) => {
      const modality = registered[(sender.aet ?? '').trim().toUpperCase()];
      return modality && modality.ip_address.replace('::ffff:', '') === sender.ip ? modality.tenant_id : null;
    },
  };
}

const ask = (sender: StoredBy, over: Partial<DoorRequest> = {}): DoorRequest => ({
  studyInstanceUid: '1.2.3',
  patientId: 'P1',
  sender,
  holder: null,
  replaces: null,
  heldForOtherPatient: false,
  ...over,
});

describe('decideDoor', () => {
  it('lets anyone start a study nobody holds', () => {
    for (const sender of [CLINIC_A_CT, STRANGER]) expect(decideDoor(ask(sender), archive())).toEqual({ allow: true });
  });

  it("takes instances for a clinic's study only from that clinic's registered devices, whatever the Patient ID", () => {
    expect(decideDoor(ask(CLINIC_A_CT), archive(['A']))).toEqual({ allow: true });
    expect(decideDoor(ask({ ...CLINIC_A_CT, aet: ' ct_a ' }), archive(['A']))).toEqual({ allow: true });
    expect(decideDoor(ask(CLINIC_B_CT), archive(['A']))).toMatchObject({ allow: false, reason: 'other_clinic' });
    expect(decideDoor(ask(STRANGER), archive(['A']))).toMatchObject({ allow: false, reason: 'unregistered_sender' });
    expect(decideDoor(ask(device('CT_A', '10.0.0.7')), archive(['A']))).toMatchObject({
      allow: false,
      reason: 'unregistered_sender',
    });
  });

  it("knows a study's clinic from its registered sender before the index does", () => {
    expect(decideDoor(ask(CLINIC_A_CT, { holder: CLINIC_A_CT }), archive())).toEqual({ allow: true });
    expect(decideDoor(ask(STRANGER, { holder: CLINIC_A_CT }), archive())).toMatchObject({ reason: 'unregistered_sender' });
    expect(decideDoor(ask(CLINIC_B_CT, { holder: CLINIC_A_CT }), archive())).toMatchObject({ reason: 'other_clinic' });
  });

  it("keeps a study held by an unregistered sender that sender's alone: a stranger's first copy claims nothing", () => {
    expect(decideDoor(ask(STRANGER, { holder: STRANGER }), archive())).toEqual({ allow: true });
    const refused = decideDoor(ask(CLINIC_A_CT, { holder: STRANGER }), archive());
    expect(refused).toMatchObject({ allow: false, reason: 'quarantined_study' });
    expect(decideDoor(ask(STRANGER, { holder: device('OTHER', '10.0.0.8') }), archive())).toMatchObject({
      reason: 'quarantined_study',
    });
  });

  it('refuses replacing an instance stored by anyone else, the service included', () => {
    expect(decideDoor(ask(CLINIC_A_CT, { replaces: CLINIC_A_CT, holder: CLINIC_A_CT }), archive(['A']))).toEqual({
      allow: true,
    });
    expect(decideDoor(ask(CLINIC_A_CT, { replaces: SERVICE }), archive(['A']))).toMatchObject({ reason: 'replaces_instance' });
    expect(decideDoor(ask(CLINIC_A_CT, { replaces: device('CT_A', '10.0.0.7') }), archive())).toMatchObject({
      reason: 'replaces_instance',
    });
  });

  it("refuses a second Patient ID under a held study's UID unless from the device that sent it", () => {
    expect(decideDoor(ask(CLINIC_A_CT, { heldForOtherPatient: true, holder: CLINIC_A_CT }), archive(['A']))).toEqual({
      allow: true,
    });
    const refused = decideDoor(ask(STRANGER, { heldForOtherPatient: true, holder: CLINIC_A_CT }), archive(['A']));
    expect(refused).toMatchObject({ allow: false, reason: 'other_patient' });
    expect(refused.allow === false && refused.message).toContain('AE title "EVIL" from 10.0.0.9');
  });

  it('treats a study the service started (an upload) and the index has not placed as new', () => {
    expect(decideDoor(ask(STRANGER, { holder: SERVICE }), archive())).toEqual({ allow: true });
    expect(decideDoor(ask(STRANGER, { holder: SERVICE }), archive(['A']))).toMatchObject({ reason: 'unregistered_sender' });
  });
});

describe('parseDoorRequest', () => {
  it("reads webhook.lua's question", () => {
    expect(
      parseDoorRequest({
        StudyInstanceUID: '1.2.3',
        PatientID: 'P1',
        Sender: { Origin: 'DicomProtocol', Aet: 'CT', Ip: '10.0.0.1' },
        Holder: { Origin: 'RestApi' },
        HeldForOtherPatient: true,
      }),
    ).toEqual({
      studyInstanceUid: '1.2.3',
      patientId: 'P1',
      sender: { origin: 'DicomProtocol', aet: 'CT', ip: '10.0.0.1' },
      holder: { origin: 'RestApi', aet: null, ip: null },
      replaces: null,
      heldForOtherPatient: true,
    });
  });

  it('reads a StudyInstanceUID and a PatientID past 256 characters as sent, up to MAX_DICOM_VALUE', () => {
    for (const length of [300, MAX_DICOM_VALUE]) {
      const uid = `2.25.${'9'.repeat(length - 5)}`;
      const patientId = 'P'.repeat(length);
      expect(parseDoorRequest({ StudyInstanceUID: uid, PatientID: patientId, Sender: {} })).toMatchObject({
        studyInstanceUid: uid,
        patientId,
      });
    }
  });

  it('refuses anything else', () => {
    for (const body of [
      null,
      [],
      'x',
      {},
      { Sender: 'CT' },
      { Sender: {}, Holder: [] },
      { Sender: {}, StudyInstanceUID: 7 },
      { Sender: {}, StudyInstanceUID: '1.2.3\u0000' },
      { Sender: { Aet: 'CT\u0000' }, StudyInstanceUID: '1.2.3' },
      { Sender: {}, StudyInstanceUID: '1.2.3', PatientID: 'P\ud800' },
      { Sender: {}, StudyInstanceUID: '1'.repeat(MAX_DICOM_VALUE + 1) },
      { Sender: {}, StudyInstanceUID: '1.2.3', PatientID: 'P'.repeat(MAX_DICOM_VALUE + 1) },
    ]) {
      expect(parseDoorRequest(body)).toBeNull();
    }
  });
});
