import { Inject, Injectable, Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { TtlCache } from '../common/cache/ttl-cache';
import { REDIS } from '../common/redis/redis.module';
import { AccessEntry, AuditService } from './audit.service';

/** A caller opens a study at most once per this window in the access trail (decisions.md 3e). */
export const VIEW_WINDOW_SECONDS = 300;
const MAX_REMEMBERED = 100_000;

/** Who opened a study. */
export interface GateReader {
  /** The user; null for a share's viewer token (its reader never signs in). */
  userId: string | null;
  shareId: string | null;
}

/** The study opened; its clinic and DICOM Patient ID are taken from the study when not given. */
export interface ViewedStudy {
  study_id: string;
  tenant_id?: string | null;
  patient_id?: string | null;
}

/**
 * `study.view` entries, for the studies the viewer gate lets through and GET /api/studies/{id}:
 * one per reader and study in VIEW_WINDOW_SECONDS across API processes (Redis SET NX with that
 * lifetime), remembered in memory too, so a viewer's hundreds of requests per study cost a map
 * lookup each after the first.
 */
@Injectable()
export class ViewTrail {
  private readonly logger = new Logger(ViewTrail.name);
  private readonly seen = new TtlCache<true>(MAX_REMEMBERED);
  /** Per reader object (a viewer token's is kept across its requests): study id -> end of its window. */
  private readonly byReader = new WeakMap<GateReader, Map<string, number>>();

  constructor(
    @Inject(REDIS) private readonly redis: Redis,
    private readonly audit: AuditService,
  ) {}

  /** Called for every allowed request; `ip` is asked only when an entry is written. */
  opened(
    reader: GateReader,
    places: Iterable<readonly ViewedStudy[]>,
    ip: () => string | null | undefined,
    requestId?: string,
  ): void {
    let windows = this.byReader.get(reader);
    if (!windows) this.byReader.set(reader, (windows = new Map()));
    const now = Date.now();
    for (const held of places) {
      for (const place of held) {
        if ((windows.get(place.study_id) ?? 0) > now) continue;
        const until = now + VIEW_WINDOW_SECONDS * 1000;
        windows.set(place.study_id, until);
        const key = `${reader.shareId ? `share:${reader.shareId}` : `user:${reader.userId}`}:${place.study_id}`;
        if (this.seen.get(key)) continue;
        this.seen.set(key, true, until);
        this.audit.recordWhen(this.claim(key, reader, place, ip(), requestId));
      }
    }
  }

  private async claim(
    key: string,
    reader: GateReader,
    place: ViewedStudy,
    ip: string | null | undefined,
    requestId: string | undefined,
  ): Promise<AccessEntry | null> {
    try {
      const first = await this.redis.set(`audit:view:${key}`, '1', 'EX', VIEW_WINDOW_SECONDS, 'NX');
      if (first !== 'OK') return null;
    } catch (error) {
      // Without Redis the window cannot be shared: record rather than lose the view.
      this.logger.warn(`View window not checked: ${(error as Error)?.message ?? error}`);
    }
    return {
      action: 'study.view',
      userId: reader.userId,
      shareId: reader.shareId,
      tenantId: place.tenant_id,
      studyId: place.study_id,
      patientId: place.patient_id,
      ip,
      requestId,
    };
  }
}
