import { Injectable, Logger } from '@nestjs/common';
import { ImgsrvClient, OrthancStudy } from '../imgsrv';
import { mapStudy, normaliseAet } from './dicom-mapping';
import { IngestionQueue, StudyJobData } from './ingestion-queue.service';
import { IngestionRepository } from './ingestion.repository';

export interface StudyJobResult {
  outcome: 'saved' | 'gone';
  studyId?: string;
  inserted?: boolean;
  quarantined?: boolean;
  remoteAet?: string | null;
  remoteIp?: string | null;
}

/**
 * Fetches a study from the image server, places it (tenant and unit of the device that sent it, or
 * quarantine), upserts it and its patient, and queues the heavier indexing. Kept short so a study
 * shows up in the lists within seconds, whatever its size.
 */
@Injectable()
export class StudyJobService {
  private readonly logger = new Logger('StudyJob');

  constructor(
    private readonly imgsrv: ImgsrvClient,
    private readonly repository: IngestionRepository,
    private readonly queue: IngestionQueue,
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
    const remoteAet = normaliseAet(origin.remoteAet);
    const placement = await this.repository.resolvePlacement(remoteAet);
    const saved = await this.repository.saveStudy(mapStudy(study), placement, remoteAet);
    if (placement.quarantined) {
      this.logger.warn(`study ${study.ID} from unregistered AE title ${JSON.stringify(remoteAet)} quarantined`);
    }
    await this.queue.queueIndex({ imgsrvStudyId: study.ID, changeSeq, lastUpdate: study.LastUpdate ?? null });
    return {
      outcome: 'saved',
      studyId: saved.id,
      inserted: saved.inserted,
      quarantined: placement.quarantined,
      remoteAet,
      remoteIp: origin.remoteIp,
    };
  }

  /** The sending device as the image server recorded it on the study's first instance. */
  private async originOf(study: OrthancStudy): Promise<{ remoteAet: string | null; remoteIp: string | null }> {
    for (const seriesId of study.Series ?? []) {
      const series = await this.imgsrv.getSeries(seriesId);
      const instanceId = series?.Instances?.[0];
      if (!instanceId) continue;
      const metadata = await this.imgsrv.getInstanceMetadata(instanceId);
      if (!metadata) continue;
      return { remoteAet: metadata.RemoteAET ?? null, remoteIp: metadata.RemoteIP ?? null };
    }
    return { remoteAet: null, remoteIp: null };
  }
}
