import { InjectQueue } from '@nestjs/bull';
import { Injectable, OnModuleInit } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import { INDEX_QUEUE, RECONCILE_QUEUE, STUDY_QUEUE } from '../../common/queues/queues.module';
import { IngestionStage, MetricsService } from './metrics.service';

/**
 * When the ingestion chain saw the image server's stable event, in ms. The webhook and the
 * reconciliation put it in the job data (`stable_at`) and pass it on to the index job; without it,
 * the job's own enqueue time is the closest known point (the webhook is sent at the stable event).
 */
export function stableAtOf(job: Pick<Job, 'data' | 'timestamp'>): number {
  const data = (job.data ?? {}) as Record<string, unknown>;
  for (const key of ['stable_at', 'stableAt']) {
    const value = data[key];
    const ms = typeof value === 'number' ? value : typeof value === 'string' ? Date.parse(value) : NaN;
    if (Number.isFinite(ms) && ms > 0) return ms;
  }
  return job.timestamp;
}

const STAGE_OF: Record<string, IngestionStage> = { [STUDY_QUEUE]: 'listed', [INDEX_QUEUE]: 'indexed' };

/**
 * Worker side: records the run time of every job this process finishes and the ingestion lag, from
 * Bull's local events, so the processors need no metrics code of their own.
 */
@Injectable()
export class JobMetricsRecorder implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    @InjectQueue(STUDY_QUEUE) private readonly studyQueue: Queue,
    @InjectQueue(INDEX_QUEUE) private readonly indexQueue: Queue,
    @InjectQueue(RECONCILE_QUEUE) private readonly reconcileQueue: Queue,
  ) {}

  onModuleInit(): void {
    for (const queue of [this.studyQueue, this.indexQueue, this.reconcileQueue]) this.watch(queue);
  }

  watch(queue: Queue): void {
    queue.on('completed', (job: Job) => {
      void this.metrics.jobFinished(queue.name, job, 'completed');
      const stage = STAGE_OF[queue.name];
      if (stage) void this.metrics.ingestionLag(stage, ((job.finishedOn ?? Date.now()) - stableAtOf(job)) / 1000);
    });
    queue.on('failed', (job: Job) => {
      void this.metrics.jobFinished(queue.name, job, 'failed');
    });
  }
}
