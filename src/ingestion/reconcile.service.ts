import { Injectable, Logger } from '@nestjs/common';
import { ImgsrvClient } from '../imgsrv';
import { IngestionQueue } from './ingestion-queue.service';
import { IngestionRepository, RECONCILE_POSITION_KEY } from './ingestion.repository';

/** Changes read per call, and calls per run: a long backlog is worked off over several runs. */
const PAGE_SIZE = 1000;
const MAX_PAGES_PER_RUN = 20;
/** Session advisory lock: one reconciliation at a time across worker processes. */
const RECONCILE_LOCK = 73_005;
/**
 * A study whose job failed every attempt (about 4 minutes of backoff: the image server or
 * PostgreSQL down for longer) is queued again once it has been failed this long; one that keeps
 * failing is tried again at this pace, not at every run.
 */
export const FAILED_RETRY_AFTER_MS = 15 * 60_000;
/** Failed jobs of each queue looked at per run, oldest first. */
const FAILED_PER_RUN = 100;

export interface ReconcileResult {
  skipped?: 'another run in progress';
  from: number;
  to: number;
  stableEvents: number;
  queued: number;
  upToDate: number;
  /** Quarantined studies queued again because their device has been registered since. */
  released: number;
  /**
   * New studies that are stable without a StableStudy event: the image server restarted while they
   * were arriving, and it never announces such a study (neither webhook nor change).
   */
  recovered: number;
  /** Studies whose last job failed all its attempts, queued again. */
  retried: number;
}

/**
 * The safety net under the webhook, which Orthanc sends once and never retries: reads the change
 * feed from the position stored in PostgreSQL and queues every StableStudy whose study has not been
 * indexed since that change (the study job records up to which change sequence it saw), and
 * queues again the studies whose last job failed all its attempts.
 */
@Injectable()
export class ReconcileService {
  private readonly logger = new Logger('Reconcile');

  constructor(
    private readonly imgsrv: ImgsrvClient,
    private readonly repository: IngestionRepository,
    private readonly queue: IngestionQueue,
  ) {}

  async run(): Promise<ReconcileResult> {
    const result = await this.repository.exclusively(RECONCILE_LOCK, () => this.reconcile());
    return (
      result ?? {
        skipped: 'another run in progress',
        from: 0,
        to: 0,
        stableEvents: 0,
        queued: 0,
        upToDate: 0,
        released: 0,
        recovered: 0,
        retried: 0,
      }
    );
  }

  private async reconcile(): Promise<ReconcileResult> {
    const stored = Number(await this.repository.getSyncState(RECONCILE_POSITION_KEY)) || 0;
    let since = stored;
    let persisted = stored;
    const last = await this.imgsrv.lastChangeSeq();
    if (last < since) {
      // The image server's database was replaced: its sequence numbers started again.
      this.logger.warn(`change feed restarted (stored position ${since}, server at ${last}): reading it from the start`);
      since = 0;
    }
    const result: ReconcileResult = {
      from: since,
      to: since,
      stableEvents: 0,
      queued: 0,
      upToDate: 0,
      released: 0,
      recovered: 0,
      retried: 0,
    };
    // The stored position must not pass a new study still arriving: if the image server restarts
    // before it is stable, its NewStudy change is the only trace of it.
    let holdAt = Infinity;

    for (let page = 0; page < MAX_PAGES_PER_RUN; page++) {
      const changes = await this.imgsrv.getChanges(since, PAGE_SIZE);
      const latest = new Map<string, number>();
      const created = new Map<string, number>();
      for (const change of changes.Changes ?? []) {
        if (typeof change.ID !== 'string') continue;
        if (change.ChangeType === 'NewStudy') created.set(change.ID, Number(change.Seq) || 0);
        if (change.ChangeType !== 'StableStudy') continue;
        result.stableEvents++;
        latest.set(change.ID, Math.max(latest.get(change.ID) ?? 0, Number(change.Seq) || 0));
      }
      const markers = await this.repository.syncMarkers([...new Set([...latest.keys(), ...created.keys()])]);
      for (const [imgsrvStudyId, seq] of created) {
        if ((latest.get(imgsrvStudyId) ?? 0) > seq) continue;
        const indexedSeq = markers.get(imgsrvStudyId)?.indexed_seq;
        if (indexedSeq !== null && indexedSeq !== undefined && indexedSeq >= seq) continue;
        const study = await this.imgsrv.getStudy(imgsrvStudyId);
        if (!study) continue;
        if (study.IsStable) {
          // Announced later in the feed, or never (a restart): queueing it now is right either way.
          await this.queue.queueStudy(imgsrvStudyId, 'reconcile');
          result.recovered++;
        } else {
          holdAt = Math.min(holdAt, seq - 1);
        }
      }
      for (const [imgsrvStudyId, seq] of latest) {
        const indexedSeq = markers.get(imgsrvStudyId)?.indexed_seq;
        if (indexedSeq !== null && indexedSeq !== undefined && indexedSeq >= seq) {
          result.upToDate++;
          continue;
        }
        await this.queue.queueStudy(imgsrvStudyId, 'reconcile');
        result.queued++;
      }
      const next = Math.max(since, Number(changes.Last) || 0);
      const keep = Math.min(next, holdAt);
      if (keep !== persisted) {
        await this.repository.setSyncState(RECONCILE_POSITION_KEY, String(keep));
        persisted = keep;
      }
      since = next;
      if (changes.Done || (changes.Changes ?? []).length === 0) break;
    }
    result.to = since;

    for (const imgsrvStudyId of await this.repository.quarantinedWithRegisteredDevice(100)) {
      await this.queue.queueStudy(imgsrvStudyId, 'reconcile');
      result.released++;
    }
    // The change feed has moved past a study whose job failed all its attempts: this is its only trace.
    result.retried = await this.queue.retryFailed(FAILED_RETRY_AFTER_MS, FAILED_PER_RUN);
    if (result.queued || result.released || result.recovered || result.retried) {
      this.logger.log(
        `queued ${result.queued} missed, ${result.recovered} unannounced, ${result.released} released and ${result.retried} failed studies (changes ${result.from}..${result.to})`,
      );
    }
    return result;
  }
}
