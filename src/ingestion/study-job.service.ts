import { Injectable, Logger } from '@nestjs/common';
import { ImgsrvClient, OrthancStudy } from '../imgsrv';
import { MetricsService, UntrustedSenderReason } from '../operations';
import { Sender } from './device-identity';
import { dicomDate, mapStudy, MAX_UID_LENGTH, normaliseAet, validUid } from './dicom-mapping';
import { IngestionQueue, StudyJobData } from './ingestion-queue.service';
import { IngestionRepository } from './ingestion.repository';

export interface StudyJobResult {
  outcome: 'saved' | 'gone';
  studyId?: string;
  inserted?: boolean;
  /** The study is in quarantine after this run. */
  quarantined?: boolean;
  /** Set when the sender did not decide where the study is (see UntrustedSenderReason). */
  untrusted?: UntrustedSenderReason;
  remoteAet?: string | null;
  remoteIp?: string | null;
}

/**
 * Fetches a study from the image server, places it (the unit a user uploaded it into; else tenant
 * and unit of the device that sent it, known by its AE title and its address, or quarantine; a
 * study that already has a clinic keeps it),
 * upserts it and its patient, and queues the heavier indexing. Kept short so a study shows up in the
 * lists within seconds, whatever its size.
 */
@Injectable()
export class StudyJobService {
  private readonly logger = new Logger('StudyJob');

  constructor(
    private readonly imgsrv: ImgsrvClient,
    private readonly repository: IngestionRepository,
    private readonly queue: IngestionQueue,
    private readonly metrics: MetricsService,
  ) {}

  async run(data: StudyJobData): Promise<StudyJobResult> {
    // Read before the study itself: every change up to this number is reflected in what follows.
    const changeSeq = await this.imgsrv.lastChangeSeq();
    const study = await this.imgsrv.getStudy(data.imgsrvStudyId);
    if (!study) {
      this.logger.warn(`study ${data.imgsrvStudyId} is not on the image server (deleted?): nothing to do`);
      return { outcome: 'gone' };
    }
    const origin = await this.originOf(study);
    const sender: Sender = { aet: normaliseAet(origin.remoteAet), ip: origin.remoteIp };
    const fields = mapStudy(study);
    // A study a user uploaded goes to the unit they chose; else the sending device decides.
    const placement = !validUid(fields.study_instance_uid)
      ? { ...(await this.repository.quarantinePlacement()), reason: 'invalid_uid' as const }
      : ((await this.repository.uploadPlacement(fields.study_instance_uid)) ??
        (await this.repository.resolvePlacement(sender)));
    const dated = dicomDate(study.MainDicomTags?.StudyDate) !== null;
    const saved = await this.repository.saveStudy(fields, placement, sender, dated);
    const quarantine = await this.repository.quarantinePlacement();
    const quarantined = saved.tenant_id === quarantine.tenant_id;
    let untrusted: UntrustedSenderReason | undefined;
    const from = `AE title ${JSON.stringify(sender.aet)} at ${JSON.stringify(sender.ip)}`;
    if (quarantined) {
      untrusted = placement.reason;
      this.logger.warn(
        placement.reason === 'invalid_uid'
          ? `study ${study.ID} quarantined: sent by ${from}, its StudyInstanceUID is ${fields.study_instance_uid.length} characters long, over ${MAX_UID_LENGTH} (invalid_uid)`
          : placement.reason === 'address_mismatch'
            ? `study ${study.ID} quarantined: sent by ${from}, but that AE title is registered at ${JSON.stringify(placement.registeredAddress)} (address_mismatch)`
            : `study ${study.ID} quarantined: sent by ${from}, an unregistered AE title (unknown_aet)`,
      );
    } else if (saved.tenant_id !== placement.tenant_id) {
      // A study that already has a clinic never changes clinic: not for a device of another one,
      // not for an untrusted sender.
      untrusted = placement.quarantined ? placement.reason : 'other_clinic';
      this.logger.warn(
        `study ${study.ID} sent again by ${from} (${untrusted}): it stays in its clinic (tenant ${saved.tenant_id})`,
      );
    }
    if (untrusted) await this.metrics.untrustedSender(untrusted);
    await this.queue.queueIndex({ imgsrvStudyId: study.ID, changeSeq, lastUpdate: study.LastUpdate ?? null });
    return {
      outcome: 'saved',
      studyId: saved.id,
      inserted: saved.inserted,
      quarantined,
      ...(untrusted ? { untrusted } : {}),
      remoteAet: sender.aet,
      remoteIp: sender.ip,
    };
  }

  /**
   * The sending device as the image server recorded it on the first instance of a series a device
   * sent. Series written through the REST API (the service's own, e.g. a signed report filed as a
   * DOC series) name no device: they are read only when no series was sent by one.
   */
  private async originOf(study: OrthancStudy): Promise<{ remoteAet: string | null; remoteIp: string | null }> {
    let written: { remoteAet: string | null; remoteIp: string | null } | null = null;
    for (const seriesId of study.Series ?? []) {
      const series = await this.imgsrv.getSeries(seriesId);
      const instanceId = series?.Instances?.[0];
      if (!instanceId) continue;
      const metadata = await this.imgsrv.getInstanceMetadata(instanceId);
      if (!metadata) continue;
      const origin = { remoteAet: metadata.RemoteAET ?? null, remoteIp: metadata.RemoteIP ?? null };
      if (metadata.Origin !== 'RestApi') return origin;
      written ??= origin;
    }
    return written ?? { remoteAet: null, remoteIp: null };
  }
}
