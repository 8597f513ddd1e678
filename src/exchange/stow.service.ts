import { HttpStatus, Inject, Injectable, Logger } from '@nestjs/common';
import { createHash, Hash, randomUUID } from 'crypto';
import { createReadStream, createWriteStream, promises as fs, WriteStream } from 'fs';
import { tmpdir } from 'os';
import { join } from 'path';
import type { Readable } from 'stream';
import { once } from 'events';
import { setTimeout as sleep } from 'timers/promises';
import Redis from 'ioredis';
import { AuditService } from '../audit';
import type { AuthUser } from '../common/auth/auth-user';
import type { RecordPlace } from '../common/auth/data-scope';
import { ApiError, ErrorBodies, Errors } from '../common/errors/api-errors';
import type { Requester } from '../common/http/requester';
import { REDIS } from '../common/redis/redis.module';
import { UnitsRepository } from '../clinics';
import { ImgsrvClient, ImgsrvError } from '../imgsrv';
import { StudiesRepository } from '../studies';
import { DicomHead, NotDicomError, readDicomHead } from './dicom-head';
import { multipartBoundary, MultipartError, readMultipart } from './multipart-related';
import { UploadClaim, UploadPlace, UploadPlacementsRepository } from './upload-placements.repository';

/** Bytes of each part kept in memory to read its identifiers (the rest only goes to disk). */
const HEAD_BYTES = 1024 * 1024;
/** Parts checked and stored at once while the body keeps arriving (memory: this many heads). */
const PARALLEL_PARTS = 4;
/** How long one instance's check and store may hold it, and another upload of it wait. */
const INSTANCE_HOLD_MS = 5 * 60_000;
/** How long the instances uploads stored into a study new to the image server are remembered. */
const STORED_RECORD_SECONDS = 24 * 3600;
/** Deletes the hold only when it is still this upload's (it may have expired and been taken). */
const RELEASE_HOLD = `if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) end return 0`;

/** PS3.18 failure reasons of a refused instance (00081197). */
const FailureReason = {
  processingFailure: 0x0110,
  notAuthorized: 0x0124,
  cannotUnderstand: 0xc000,
} as const;

type DicomJson = Record<string, { vr: string; Value?: unknown[] }>;

export interface StowAnswer {
  '00081198'?: { vr: 'SQ'; Value: DicomJson[] };
  '00081199'?: { vr: 'SQ'; Value: DicomJson[] };
}

/** The unit an upload goes to, and whether the uploader is held to that unit (a regular user). */
interface Target {
  tenant_id: string;
  unit_id: string;
  unitOnly: boolean;
}

/** What the parts of one body share: each study's check. */
interface UploadState {
  /** Per study: whether this body brings it to the image server (see checkStudy). */
  studyVerdicts: Map<string, Promise<boolean>>;
  /** Per study: the upload placement its verdict rests on (made by this body or found), settled after the body. */
  claims: Map<string, UploadClaim>;
}

/** A part as it arrives: in memory while it is small, else also in its temporary file. */
interface Spool {
  out?: WriteStream;
  hash: Hash;
  head: Buffer[];
  headSize: number;
  size: number;
  file: string;
  type?: string;
}

interface SpooledPart {
  content: { data: Buffer } | { file: string };
  type: string | undefined;
  size: number;
  md5: string;
  head: Buffer;
}

type Outcome = { stored: true; head: DicomHead } | { stored: false; head: Partial<DicomHead>; code: number; reason: string };
/** An outcome's place in the answer, kept in the order of the parts, until the part is done. */
const PENDING = { stored: false, head: {}, code: 0, reason: '' } as Outcome;

class Refusal extends Error {
  constructor(
    readonly code: number,
    reason: string,
  ) {
    super(reason);
  }
}

const ui = (value: string | undefined): { vr: string; Value?: unknown[] } =>
  value ? { vr: 'UI', Value: [value] } : { vr: 'UI' };

/**
 * STOW-RS into the archive (decisions.md 3d): a multipart/related body read as it arrives, each part
 * spooled to a temporary file (never the whole body in memory), its identifiers read from its first
 * bytes, checked, then stored in the image server with the service's account. Refused, with nothing
 * of it stored: what is not DICOM, an instance of a study held by another clinic (for a regular
 * user: another unit), one that would replace an archived instance with other content. The study's
 * unit is recorded before its first instance is stored, so that ingestion places it there, and
 * taken back when the body stored nothing into it.
 */
@Injectable()
export class StowService {
  private readonly logger = new Logger(StowService.name);

  constructor(
    private readonly imgsrv: ImgsrvClient,
    private readonly studies: StudiesRepository,
    private readonly units: UnitsRepository,
    private readonly placements: UploadPlacementsRepository,
    private readonly audit: AuditService,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  async store(
    user: AuthUser,
    unitId: string | undefined,
    contentType: string | undefined,
    body: unknown,
    from: Requester,
  ): Promise<StowAnswer> {
    const target = await this.targetOf(user, unitId);
    const boundary = multipartBoundary(contentType);
    const type = /;\s*type="?([^";]+)"?/i.exec(contentType ?? '')?.[1];
    if (!boundary || !isReadable(body) || (type !== undefined && type.toLowerCase() !== 'application/dicom')) {
      throw new ApiError(HttpStatus.UNSUPPORTED_MEDIA_TYPE, ErrorBodies.unsupportedMediaType);
    }
    const dir = await fs.mkdtemp(join(tmpdir(), 'pacs-stow-'));
    const outcomes: Outcome[] = [];
    const upload: UploadState = { studyVerdicts: new Map(), claims: new Map() };
    // Parts being checked and stored while the next ones arrive.
    const inFlight = new Set<Promise<void>>();
    let spool: Spool | null = null;
    try {
      let count = 0;
      await readMultipart(body, boundary, {
        start: async (headers) => {
          spool = {
            hash: createHash('md5'),
            head: [],
            headSize: 0,
            size: 0,
            file: join(dir, `${count++}.dcm`),
            type: headers['content-type'],
          };
        },
        data: async (chunk) => {
          const part = spool!;
          part.hash.update(chunk);
          part.size += chunk.length;
          if (!part.out && part.headSize + chunk.length <= HEAD_BYTES) {
            // Small parts (most instances) stay in memory: no file to write and read back.
            part.head.push(Buffer.from(chunk));
            part.headSize += chunk.length;
            return;
          }
          if (!part.out) {
            part.out = createWriteStream(part.file);
            for (const kept of part.head) part.out.write(kept);
          }
          if (part.headSize < HEAD_BYTES) {
            const kept = chunk.subarray(0, HEAD_BYTES - part.headSize);
            part.head.push(Buffer.from(kept));
            part.headSize += kept.length;
          }
          if (!part.out.write(chunk)) await once(part.out, 'drain');
        },
        end: async () => {
          const part = spool!;
          spool = null;
          if (part.out) {
            part.out.end();
            await once(part.out, 'close');
          }
          const head = Buffer.concat(part.head);
          const spooled: SpooledPart = {
            content: part.out ? { file: part.file } : { data: head },
            type: part.type,
            size: part.size,
            md5: part.hash.digest('hex'),
            head,
          };
          const index = outcomes.push(PENDING) - 1;
          const task: Promise<void> = this.storePart(user, target, spooled, upload)
            .then((outcome) => {
              outcomes[index] = outcome;
            })
            .then(() => (part.out ? fs.rm(part.file, { force: true }) : undefined))
            .finally(() => inFlight.delete(task));
          inFlight.add(task);
          if (inFlight.size >= PARALLEL_PARTS) await Promise.race(inFlight);
        },
      });
      await Promise.all(inFlight);
    } catch (error) {
      if (error instanceof MultipartError) {
        throw new ApiError(HttpStatus.BAD_REQUEST, { message: `Malformed multipart body: ${error.message}.` });
      }
      if ((error as { statusCode?: number })?.statusCode === 413) {
        throw new ApiError(HttpStatus.PAYLOAD_TOO_LARGE, ErrorBodies.payloadTooLarge);
      }
      if (error instanceof ApiError) throw error;
      // The client went away, or its body broke off.
      this.logger.warn(`STOW-RS body not read to its end: ${(error as Error)?.message ?? error}`);
      throw new ApiError(HttpStatus.BAD_REQUEST, { message: 'The upload did not arrive whole.' });
    } finally {
      (spool as Spool | null)?.out?.destroy();
      // Even when the body broke off, the parts before it are stored: settled and recorded once, here.
      await Promise.allSettled([...inFlight]);
      const received = studiesReceived(outcomes);
      await this.settleClaims(user, upload, received);
      await this.recordUploads(user, target, received, from);
      await fs.rm(dir, { recursive: true, force: true });
    }
    return answerOf(outcomes);
  }

  /** A regular user uploads into their unit; an admin names a unit of the clinic (`unit_id`), else 422. */
  private async targetOf(user: AuthUser, unitId: string | undefined): Promise<Target> {
    if (!user.is_super_admin && !user.is_tenant_admin) {
      if (!user.tenant_id || !user.unit_id) throw Errors.fieldInvalid('unit_id', 'The caller has no unit to upload into.');
      return { tenant_id: user.tenant_id, unit_id: user.unit_id, unitOnly: true };
    }
    if (!unitId) throw Errors.fieldInvalid('unit_id', 'The unit id field is required.');
    const unit = await this.units.findById(unitId);
    if (!unit || (!user.is_super_admin && unit.tenant_id !== user.tenant_id)) {
      throw Errors.fieldInvalid('unit_id', 'The selected unit id is invalid.');
    }
    return { tenant_id: unit.tenant_id, unit_id: unit.id, unitOnly: false };
  }

  private async storePart(user: AuthUser, target: Target, part: SpooledPart, upload: UploadState): Promise<Outcome> {
    let head: Partial<DicomHead> = {};
    try {
      if (part.type && !/^application\/dicom\s*(;|$)/i.test(part.type)) {
        throw new Refusal(FailureReason.cannotUnderstand, `a part of type ${part.type.slice(0, 100)}, not application/dicom`);
      }
      try {
        head = readDicomHead(part.head);
      } catch (error) {
        if (error instanceof NotDicomError) throw new Refusal(FailureReason.cannotUnderstand, error.message);
        throw error;
      }
      const uid = head.studyInstanceUid!;
      if (!upload.studyVerdicts.has(uid)) upload.studyVerdicts.set(uid, this.checkStudy(user, target, uid, upload));
      const newStudy = await upload.studyVerdicts.get(uid);
      const sop = head.sopInstanceUid!;
      await this.holding(sop, async () => {
        // A study this body brings to the image server holds only what uploads stored into it
        // (recorded, under the same hold): no need to ask the image server per instance.
        const archived = newStudy ? await this.storedByUploads(uid, sop, part.md5) : await this.alreadyArchived(sop, part.md5);
        if (archived) return;
        await this.send(part);
        await this.redis.multi().hset(storedKey(uid), sop, part.md5).expire(storedKey(uid), STORED_RECORD_SECONDS).exec();
      });
      return { stored: true, head: head as DicomHead };
    } catch (error) {
      if (error instanceof Refusal) return { stored: false, head, code: error.code, reason: error.message };
      this.logger.warn(`STOW-RS: instance ${head.sopInstanceUid ?? '?'} not stored: ${(error as Error)?.message ?? error}`);
      return { stored: false, head, code: FailureReason.processingFailure, reason: 'the archive could not store it now' };
    }
  }

  /**
   * One instance's check and store, with no other upload of that SOPInstanceUID between them (in
   * this body or another, in any API process): checked apart, two uploads of one instance with
   * other content would both find it not archived, and the second would replace the first.
   */
  private async holding(sopInstanceUid: string, work: () => Promise<void>): Promise<void> {
    const key = `stow:instance:${sopInstanceUid}`;
    const token = randomUUID();
    const giveUpAt = Date.now() + INSTANCE_HOLD_MS;
    while ((await this.redis.set(key, token, 'PX', INSTANCE_HOLD_MS, 'NX')) === null) {
      if (Date.now() > giveUpAt) throw new Error('another upload of this instance is still being stored');
      await sleep(20);
    }
    try {
      await work();
    } finally {
      await this.redis.eval(RELEASE_HOLD, 1, key, token).catch(() => undefined);
    }
  }

  private async send(part: SpooledPart): Promise<void> {
    try {
      const content = 'data' in part.content ? part.content.data : createReadStream(part.content.file);
      await this.imgsrv.storeInstance(content, part.size);
    } catch (error) {
      const status = (error as ImgsrvError).status;
      if (status !== undefined && status < 500)
        throw new Refusal(FailureReason.cannotUnderstand, 'the image server could not read it');
      throw error;
    }
  }

  /**
   * The study may take this upload when the archive holds it only within the target (the clinic,
   * or for a regular user the unit), or not at all: then its placement is recorded first. A study
   * the image server already holds but the archive has not placed (being received from a device)
   * is refused: its device decides where it goes. True when this upload brings the study to the
   * image server (its placement made here, the image server without it).
   */
  private async checkStudy(user: AuthUser, target: Target, studyUid: string, upload: UploadState): Promise<boolean> {
    const places = (await this.studies.placesOfStudyUids([studyUid])).get(studyUid) ?? [];
    if (places.length > 0) {
      this.assertWithin(target, places);
      // Under another Patient ID an instance is another study on the image server, with no device
      // to place it: recorded beside the archived study (a study always has a unit), it goes there
      // instead of to quarantine.
      await this.placements.claim(studyUid, { tenant_id: places[0].tenant_id, unit_id: places[0].unit_id! }, user.id);
      return false;
    }
    const claim = await this.placements.claim(studyUid, target, user.id);
    this.assertWithin(target, [claim.place]);
    // Kept before the image server is asked: should that fail, settleClaims still takes the claim back.
    upload.claims.set(studyUid, claim);
    if (!claim.made) return false;
    if (await this.imageServerHolds(studyUid)) {
      upload.claims.delete(studyUid);
      await this.placements.release(studyUid, target);
      throw new Refusal(FailureReason.notAuthorized, 'the study is being received from another source: try again in a minute');
    }
    return true;
  }

  /** `alreadyArchived` for a study this body brings to the image server: what uploads stored into it. */
  private async storedByUploads(studyUid: string, sopInstanceUid: string, md5: string): Promise<boolean> {
    const stored = await this.redis.hget(storedKey(studyUid), sopInstanceUid);
    if (stored === null) return false;
    if (stored !== md5)
      throw new Refusal(FailureReason.notAuthorized, 'it would replace an archived instance with other content');
    return true;
  }

  private async imageServerHolds(studyUid: string): Promise<boolean> {
    return (await this.imgsrv.lookup(studyUid)).some((found) => found.Type === 'Study');
  }

  /**
   * After the body: a placement this body recorded for a study that received nothing (every part
   * refused or failed, or the body broke off) is taken back, else ingestion would place in this unit
   * whatever later arrives with that UID, another clinic's study included. A placement found
   * recorded by another upload (the viewer sends each file in its own request) is recorded again
   * once this body stored into its study, in case that upload took it back meanwhile. Never throws.
   */
  private async settleClaims(user: AuthUser, upload: UploadState, received: Map<string, string>): Promise<void> {
    for (const [studyUid, claim] of upload.claims) {
      try {
        if (claim.made && !received.has(studyUid)) await this.releaseUnused(user, studyUid, claim.place);
        else if (!claim.made && received.has(studyUid)) await this.placements.claim(studyUid, claim.place, user.id);
      } catch (error) {
        this.logger.warn(`STOW-RS: placement of study ${studyUid} not settled: ${(error as Error)?.message ?? error}`);
      }
    }
  }

  /**
   * Takes back a placement whose study this body stored nothing into; recorded again when the image
   * server holds the study after all: another upload resting on it stored into it meanwhile, or a
   * part reported failed was stored. Asked after the release, so that such an upload either is seen
   * here or records the placement again itself (settleClaims).
   */
  private async releaseUnused(user: AuthUser, studyUid: string, place: UploadPlace): Promise<void> {
    await this.placements.release(studyUid, place);
    if (await this.imageServerHolds(studyUid)) await this.placements.claim(studyUid, place, user.id);
  }

  /**
   * One reason for another clinic's study and another unit's: the refusal itself tells that the UID
   * is archived (decisions.md 3d asks for it), but not where.
   */
  private assertWithin(target: Target, places: RecordPlace[]): void {
    for (const place of places) {
      if (place.tenant_id !== target.tenant_id || (target.unitOnly && place.unit_id !== target.unit_id)) {
        throw new Refusal(FailureReason.notAuthorized, 'the study is archived outside what this upload may add to');
      }
    }
  }

  /**
   * True when the image server holds an instance with this SOPInstanceUID with the same content (the
   * part is then already stored); a refusal when it holds one with other content.
   */
  private async alreadyArchived(sopInstanceUid: string, md5: string): Promise<boolean> {
    const archived = (await this.imgsrv.lookup(sopInstanceUid)).filter((found) => found.Type === 'Instance');
    if (archived.length === 0) return false;
    for (const instance of archived) {
      if ((await this.imgsrv.instanceFileMd5(instance.ID)) !== md5) {
        throw new Refusal(FailureReason.notAuthorized, 'it would replace an archived instance with other content');
      }
    }
    return true;
  }

  /**
   * One `study.upload` entry per study that received instances. A new study is indexed only later:
   * its id is then unknown, and its Patient ID is taken from the files.
   */
  private async recordUploads(user: AuthUser, target: Target, received: Map<string, string>, from: Requester): Promise<void> {
    for (const [uid, patientId] of received) {
      this.audit.record({
        action: 'study.upload',
        userId: user.id,
        tenantId: target.tenant_id,
        studyId: await this.placements.studyIdOf(uid, target.tenant_id).catch(() => null),
        patientId,
        ip: from.ip,
        requestId: from.requestId,
      });
    }
  }
}

const storedKey = (studyUid: string) => `stow:stored:${studyUid}`;

function isReadable(body: unknown): body is Readable {
  return (
    !!body && typeof (body as Readable)[Symbol.asyncIterator] === 'function' && typeof (body as Readable).pipe === 'function'
  );
}

/** The studies that received instances in this body, each with the Patient ID of its first stored instance. */
function studiesReceived(outcomes: Outcome[]): Map<string, string> {
  const received = new Map<string, string>();
  for (const outcome of outcomes) {
    if (outcome.stored && !received.has(outcome.head.studyInstanceUid)) {
      received.set(outcome.head.studyInstanceUid, outcome.head.patientId);
    }
  }
  return received;
}

/** The STOW-RS answer: 00081199 the stored instances, 00081198 the refused ones with their reason. */
function answerOf(outcomes: Outcome[]): StowAnswer {
  const stored: DicomJson[] = [];
  const refused: DicomJson[] = [];
  for (const outcome of outcomes) {
    const { head } = outcome;
    const item: DicomJson = { '00081150': ui(head.sopClassUid), '00081155': ui(head.sopInstanceUid) };
    if (outcome.stored) {
      item['00081190'] = {
        vr: 'UR',
        Value: [
          `/dicom-web/studies/${head.studyInstanceUid}/series/${head.seriesInstanceUid}/instances/${head.sopInstanceUid}`,
        ],
      };
      stored.push(item);
    } else {
      item['00081197'] = { vr: 'US', Value: [outcome.code] };
      // Error Comment: why, in words.
      item['00000902'] = { vr: 'LO', Value: [outcome.reason] };
      refused.push(item);
    }
  }
  return {
    ...(refused.length ? { '00081198': { vr: 'SQ' as const, Value: refused } } : {}),
    ...(stored.length ? { '00081199': { vr: 'SQ' as const, Value: stored } } : {}),
  };
}
