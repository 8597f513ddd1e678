import { unstorableTextFields } from '../../common/http/storable-text.pipe';
import { DoorRequest, StoredBy } from './door-decision';

/** A sender's Origin, AE title or address: Orthanc writes short values there (an AE title is 16). */
const MAX_TEXT = 256;

/**
 * StudyInstanceUID and PatientID are read as the image server stored them, never cut nor dropped
 * (decisions.md §2: an over-long StudyInstanceUID goes to quarantine as it is, so the door must let
 * its instances in as any other study's). The bound is there against abuse only: in explicit VR a UI
 * or LO element's length field is 16 bits, so no value a device can write that way is over 65,534
 * bytes; the whole question, JSON-escaped, stays far below the route's body limit (BODY_LIMIT_BYTES).
 * The door only compares these values (SELECTs, keys of its in-process cache), stores none of them.
 */
export const MAX_DICOM_VALUE = 65_536;

function text(value: unknown, max = MAX_TEXT): string | null {
  return typeof value === 'string' && value.length <= max ? value : null;
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
 * a lone surrogate), which would fail the lookups, or a value past its bound: the caller answers 400.
 */
export function parseDoorRequest(body: unknown): DoorRequest | null {
  if (body === null || typeof body !== 'object' || Array.isArray(body)) return null;
  if (unstorableTextFields(body).length > 0) return null;
  const fields = body as Record<string, unknown>;
  const sender = storedBy(fields.Sender);
  const holder = storedBy(fields.Holder);
  const replaces = storedBy(fields.Replaces);
  if (!sender || holder === undefined || replaces === undefined) return null;
  const studyInstanceUid = fields.StudyInstanceUID === undefined ? null : text(fields.StudyInstanceUID, MAX_DICOM_VALUE);
  if (fields.StudyInstanceUID !== undefined && studyInstanceUid === null) return null;
  // webhook.lua always sends a PatientID (empty when the instance has none); one past the bound is
  // refused like a UID past it, never read as another (empty) Patient ID.
  const patientId = typeof fields.PatientID === 'string' ? text(fields.PatientID, MAX_DICOM_VALUE) : '';
  if (patientId === null) return null;
  return {
    studyInstanceUid,
    patientId,
    sender,
    holder,
    replaces,
    heldForOtherPatient: fields.HeldForOtherPatient === true,
  };
}
