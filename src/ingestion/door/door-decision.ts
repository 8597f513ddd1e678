import type { DicomDoorRefusal } from '../../operations';
import { canonicalAddress, quarantineReason, Sender } from '../device-identity';
import { normaliseAet } from '../dicom-mapping';

/** Who stored an instance, as the image server recorded it (Origin `DicomProtocol` for a C-STORE). */
export interface StoredBy {
  origin: string | null;
  aet: string | null;
  ip: string | null;
}

/**
 * What the image server's filter (docker/orthanc/webhook.lua) asks about one instance arriving over
 * DICOM: its sender, and what the image server already holds under its UIDs.
 */
export interface DoorRequest {
  studyInstanceUid: string | null;
  patientId: string;
  sender: StoredBy;
  /** Sender of the study's first stored instance; null when the image server holds no such study. */
  holder: StoredBy | null;
  /** Sender of the stored instance with the same SOPInstanceUID (the one this would replace). */
  replaces: StoredBy | null;
  /** The image server holds the StudyInstanceUID for another PatientID. */
  heldForOtherPatient: boolean;
}

/**
 * Why an instance is refused:
 * - replaces_instance: it would replace a stored instance another device sent;
 * - other_patient: the study is held for another Patient ID, and this is not the device that sent it;
 * - unregistered_sender: the study belongs to a clinic, and the sender is no registered device
 *   (AE title and address) at all;
 * - other_clinic: the study belongs to a clinic, and the sender is a device of another clinic;
 * - quarantined_study: the study was sent by an unregistered sender (it is in, or on its way to,
 *   quarantine), and this is another sender: a stranger's images never join a clinic's study.
 */
export type DoorRefusal = DicomDoorRefusal;

export type DoorDecision = { allow: true } | { allow: false; reason: DoorRefusal; message: string };

/** What the archive knows: the clinics its index holds the study in (never quarantine), and the devices. */
export interface DoorArchive {
  /** Tenants (quarantine excluded) of the archive's studies with this StudyInstanceUID, and of its upload through the API. */
  clinicsOfStudy: readonly string[];
  /** The tenant of the registered device matching AE title and address, else null. */
  clinicOfDevice(sender: StoredBy): string | null;
}

/** Same device: a C-STORE, same AE title (trimmed, uppercased), same address (any spelling). */
export function sameDevice(a: StoredBy, b: StoredBy): boolean {
  const aet = normaliseAet(a.aet);
  const ip = canonicalAddress(a.ip);
  return (
    a.origin === 'DicomProtocol' &&
    b.origin === 'DicomProtocol' &&
    aet !== null &&
    aet === normaliseAet(b.aet) &&
    ip !== null &&
    ip === canonicalAddress(b.ip)
  );
}

export function describeSender(sender: StoredBy | null): string {
  if (!sender) return 'nobody';
  if (sender.origin !== 'DicomProtocol') return `the service (origin ${sender.origin ?? 'unknown'})`;
  return `AE title ${JSON.stringify(sender.aet ?? '')} from ${sender.ip ?? 'an unknown address'}`;
}

/**
 * The study's door (decisions.md, "A device is its AE title and its address"): a study already
 * archived takes new instances over DICOM only from a registered device of its own clinic. A study
 * is archived once the archive's index places it in a clinic or a user uploads it (STOW-RS), or
 * once the image server holds an instance of it sent by a registered device (before the index has
 * caught up); a study held only by an unregistered sender is on its way to quarantine and takes
 * instances from that sender alone. A study nobody holds is new: anyone may start it (an
 * unregistered sender's goes to quarantine).
 */
export function decideDoor(request: DoorRequest, archive: DoorArchive): DoorDecision {
  const { sender, holder, replaces } = request;
  const from = describeSender(sender);
  const refuse = (reason: DoorRefusal, message: string): DoorDecision => ({
    allow: false,
    reason,
    message: `${message} (${reason})`,
  });

  if (replaces && !sameDevice(replaces, sender)) {
    return refuse('replaces_instance', `${from} would replace an instance stored by ${describeSender(replaces)}`);
  }
  if (request.heldForOtherPatient && !(holder && sameDevice(holder, sender))) {
    return refuse(
      'other_patient',
      `study is held for another Patient ID (sent by ${describeSender(holder)}); this one is from ${from}`,
    );
  }

  let owners = archive.clinicsOfStudy;
  if (owners.length === 0 && holder) {
    const holderClinic = holder.origin === 'DicomProtocol' ? archive.clinicOfDevice(holder) : null;
    if (holderClinic) owners = [holderClinic];
    else if (holder.origin === 'DicomProtocol') {
      return sameDevice(holder, sender)
        ? { allow: true }
        : refuse(
            'quarantined_study',
            `study was sent by ${describeSender(holder)}, an unregistered sender; this one is from ${from}`,
          );
    }
  }
  if (owners.length === 0) return { allow: true };
  const senderClinic = archive.clinicOfDevice(sender);
  if (senderClinic && owners.includes(senderClinic)) return { allow: true };
  return senderClinic
    ? refuse('other_clinic', `study belongs to another clinic; ${from} is a device of clinic ${senderClinic}`)
    : refuse('unregistered_sender', `study belongs to a clinic; ${from} is none of its registered devices`);
}

/** The registered device's clinic, by the device rule (AE title and address), or null. */
export function clinicOfRegistered(
  sender: StoredBy,
  modality: { tenant_id: string; ip_address: string } | null,
): string | null {
  const asSender: Sender = { aet: normaliseAet(sender.aet), ip: sender.ip };
  return modality && quarantineReason(asSender, modality) === null ? modality.tenant_id : null;
}
