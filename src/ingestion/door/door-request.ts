import { unstorableTextFields } from '../../common/http/storable-text.pipe';
import { DoorRequest, StoredBy } from './door-decision';

const MAX_TEXT = 256;

function text(value: unknown): string | null {
  return typeof value === 'string' && value.length <= MAX_TEXT ? value : null;
}

function storedBy(value: unknown): StoredBy | null | undefined {
  if (value === undefined || value === null) return null;
  if (typeof value !== 'object' || Array.isArray(value)) return undefined;
  const fields = value as Record<string, unknown>;
  return { origin: text(fields.Origin), aet: text(fields.Aet), ip: text(fields.Ip) };
}

/**
 * The filter's question as webhook.lua sends it (Orthanc's DumpJson):
 * `{StudyInstanceUID, PatientID, Sender, Holder?, Replaces?, HeldForOtherPatient}`, each sender as
 * `{Origin, Aet, Ip}`. Null when it is not that shape, or holds text PostgreSQL cannot store (a NUL,
 * a lone surrogate), which would fail the lookups: the caller answers 400.
 */
export function parseDoorRequest(body: unknown): DoorRequest | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  if (unstorableTextFields(body).length > 0) return null;
  const fields = body as Record<string, unknown>;
  const sender = storedBy(fields.Sender);
  const holder = storedBy(fields.Holder);
  const replaces = storedBy(fields.Replaces);
  if (!sender || holder === undefined || replaces === undefined) return null;
  const studyInstanceUid = fields.StudyInstanceUID === undefined ? null : text(fields.StudyInstanceUID);
  if (fields.StudyInstanceUID !== undefined && studyInstanceUid === null) return null;
  return {
    studyInstanceUid,
    patientId: text(fields.PatientID) ?? '',
    sender,
    holder,
    replaces,
    heldForOtherPatient: fields.HeldForOtherPatient === true,
  };
}
