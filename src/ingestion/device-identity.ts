import * as ipaddr from 'ipaddr.js';
import { isIP } from 'net';

/** A sending device as the image server recorded it: calling AE title (normalised) and peer address. */
export interface Sender {
  aet: string | null;
  ip: string | null;
}

/** What a registered modality claims: its AE title is the key it was found by, so only its address. */
export interface RegisteredDevice {
  ip_address: string;
}

/**
 * Why a study could not be placed by its sender:
 * - unknown_aet: no modality is registered under the calling AE title (or there is none);
 * - address_mismatch: one is, but the study came from another address than the registered one;
 * - invalid_uid: its StudyInstanceUID is longer than DICOM allows (64 characters), whoever sent it.
 */
export type QuarantineReason = 'unknown_aet' | 'address_mismatch' | 'invalid_uid';

/**
 * One spelling per address, or null when `text` is not an IP address: IPv4 dotted decimal (an
 * IPv4-mapped IPv6 address such as `::ffff:127.0.0.1` or `::ffff:7f00:1` becomes its IPv4 form),
 * IPv6 as eight lowercase groups without zero compression (`FD00::8:12` = `fd00:0:0:0:0:0:8:12`).
 * Only the strict forms node accepts are read (no `127.1`, no octal or hexadecimal IPv4 parts).
 */
export function canonicalAddress(text: string | null | undefined): string | null {
  const value = (text ?? '').trim();
  if (!isIP(value)) return null;
  const address = ipaddr.process(value);
  return address.kind() === 'ipv4' ? address.toString() : (address as ipaddr.IPv6).toNormalizedString();
}

/** True when both are IP addresses and the same one (whatever their spelling); never for a non-address. */
export function sameAddress(a: string | null | undefined, b: string | null | undefined): boolean {
  const left = canonicalAddress(a);
  return left !== null && left === canonicalAddress(b);
}

/**
 * The device rule (decisions.md, "A device is its AE title and its address"): a study is placed by
 * the modality registered under the sender's AE title only when the sender's address is the
 * modality's; otherwise it goes to quarantine, for the reason returned.
 */
export function quarantineReason(sender: Sender, registered: RegisteredDevice | null): QuarantineReason | null {
  if (!sender.aet || !registered) return 'unknown_aet';
  return sameAddress(sender.ip, registered.ip_address) ? null : 'address_mismatch';
}
