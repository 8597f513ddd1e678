import { Injectable, Logger } from '@nestjs/common';
import { ImgsrvClient } from '../imgsrv/imgsrv.client';
import { IngestionQueue } from './ingestion-queue.service';
import { IngestionRepository, RECONCILE_POSITION_KEY } from './ingestion.repository';

/** Changes read per call, and calls per run: a long backlog is worked off over several runs. */
const PAGE_SIZE = 1000;
const MAX_PAGES_PER_RUN = 20;
/** Session advisory lock: one reconciliation at a time across worker processes. */
const RECONCILE_LOCK = 73_005;

export interface ReconcileResult {
  skipped?: 'another run in progress';
  from: number;
  to: number;
  stableEvents: number;
  queued: number;
  upToDate: number;
  /** Quarantined studies queued again because their device has been registered since. */
  released: number;
}

/**
 * The safety net under the webhook, which Orthanc sends once and never retries: reads the change
 * feed from the position stored in PostgreSQL and queues every StableStudy whose study has not been
 * indexed since that change (the study job records up to which change sequence it saw).
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
    return result ?? { skipped: 'another run in progress', from: 0, to: 0, stableEvents: 0, queued: 0, upToDate: 0, released: 0 };
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
    const result: ReconcileResult = { from: since, to: since, stableEvents: 0, queued: 0, upToDate: 0, released: 0 };

    for (let page = 0; page < MAX_PAGES_PER_RUN; page++) {
      const changes = await this.imgsrv.getChanges(since, PAGE_SIZE);
      const latest = new Map<string, number>();
      for (const change of changes.Changes ?? []) {
        if (change.ChangeType !== 'StableStudy' || typeof change.ID !== 'string') continue;
        result.stableEvents++;
        latest.set(change.ID, Math.max(latest.get(change.ID) ?? 0, Number(change.Seq) || 0));
      }
      const markers = await this.repository.syncMarkers([...latest.keys()]);
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
      if (next !== persisted) {
        await this.repository.setSyncState(RECONCILE_POSITION_KEY, String(next));
        persisted = next;
      }
      since = next;
      if (changes.Done || (changes.Changes ?? []).length === 0) break;
    }
    result.to = since;

    for (const imgsrvStudyId of await this.repository.quarantinedWithRegisteredDevice(100)) {
      await this.queue.queueStudy(imgsrvStudyId, 'reconcile');
      result.released++;
    }
    if (result.queued || result.released) {
      this.logger.log(`queued ${result.queued} missed and ${result.released} released studies (changes ${result.from}..${result.to})`);
    }
    return result;
  }
}
