import type { QidoStudyRow } from './qido.repository';

/** An attribute of the DICOM JSON model (PS3.18 F.2): its VR and, when it has one, its value. */
interface DicomAttribute {
  vr: string;
  Value?: unknown[];
}
export type DicomJsonObject = Record<string, DicomAttribute>;

const attribute = (vr: string, value: unknown): DicomAttribute =>
  value === null || value === undefined || value === '' ? { vr } : { vr, Value: [value] };

/**
 * A study as QIDO-RS returns it (the attributes of PS3.18 table 10.6.3-3 the index holds), with
 * its RetrieveURL under `dicomWebRoot` (the proxy's /dicom-web of the caller's origin).
 */
export function toQidoStudy(row: QidoStudyRow, dicomWebRoot: string): DicomJsonObject {
  const modalities = row.modalities ?? [];
  return {
    '00080020': attribute('DA', row.study_date),
    // The index keeps no study time: present and empty, as QIDO-RS wants a required key.
    '00080030': { vr: 'TM' },
    '00080050': attribute('SH', row.accession_number),
    '00080061': modalities.length > 0 ? { vr: 'CS', Value: modalities } : { vr: 'CS' },
    '00081030': attribute('LO', row.study_description),
    '00081190': attribute('UR', `${dicomWebRoot}/studies/${row.study_instance_uid}`),
    '00100010': row.patient_name ? { vr: 'PN', Value: [{ Alphabetic: row.patient_name }] } : { vr: 'PN' },
    '00100020': attribute('LO', row.patient_id),
    '00100030': attribute('DA', row.patient_birth_date),
    '00100040': attribute('CS', row.patient_sex),
    '0020000D': attribute('UI', row.study_instance_uid),
    '00201206': { vr: 'IS', Value: [Number(row.series_count)] },
    '00201208': { vr: 'IS', Value: [Number(row.instance_count)] },
  };
}

const HOST = /^(?:[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*|\[[0-9A-Fa-f:.]+\])(?::\d{1,5})?$/;

/**
 * The proxy's DICOMweb root as the caller reached it (scheme and host as Fastify reads them:
 * X-Forwarded-* only from a trusted proxy, see TRUST_PROXY). A host that is not a plain host name
 * or address (a forged header) gives a path without origin instead of echoing it into the answer.
 */
export function dicomWebRoot(protocol: string, host: string | undefined): string {
  if (host && HOST.test(host) && (protocol === 'http' || protocol === 'https')) return `${protocol}://${host}/dicom-web`;
  return '/dicom-web';
}
