import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, OnModuleInit } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import Redis from 'ioredis';
import { INDEX_QUEUE, RECONCILE_QUEUE, STUDY_QUEUE } from '../../common/queues/queues.module';
import { REDIS } from '../../common/redis/redis.module';
import { MetricsService } from './metrics.service';

// Long enough for any backlog; the note is only read when the study's index job finishes.
const NOTE_TTL_SECONDS = 24 * 3600;

const studyIdOf = (job: Job): string | null => {
  const id = (job.data as { imgsrvStudyId?: unknown } | undefined)?.imgsrvStudyId;
  return typeof id === 'string' && id.length > 0 && id.length <= 128 ? id : null;
};

/**
 * Worker side: the run time of every job this process finishes, and the ingestion lag, from Bull's
 * local events, so the processors need no metrics code of their own.
 *
 * The image server sends its webhook at the stable event, so the study job's enqueue time is the
 * stable event as the service knows it (for a study found by the reconciliation, when it was
 * found). `listed`: the study job finished (the study is in the lists). `indexed`: the index job the
 * study job queued finished; the study job's enqueue time is handed over through a short Redis note
 * keyed by the image-server study id, taken when the study job starts.
 */
@Injectable()
export class JobMetricsRecorder implements OnModuleInit {
  constructor(
    private readonly metrics: MetricsService,
    @Inject(REDIS) private readonly redis: Redis,
    @InjectQueue(STUDY_QUEUE) private readonly studyQueue: Queue,
    @InjectQueue(INDEX_QUEUE) private readonly indexQueue: Queue,
    @InjectQueue(RECONCILE_QUEUE) private readonly reconcileQueue: Queue,
  ) {}

  onModuleInit(): void {
    this.watchDurations(this.studyQueue);
    this.watchDurations(this.indexQueue);
    this.watchDurations(this.reconcileQueue);
    this.watchIngestion(this.studyQueue, this.indexQueue);
  }

  watchDurations(queue: Queue): void {
    queue.on('completed', (job: Job) => void this.metrics.jobFinished(queue.name, job, 'completed'));
    queue.on('failed', (job: Job) => void this.metrics.jobFinished(queue.name, job, 'failed'));
  }

  watchIngestion(studyQueue: Queue, indexQueue: Queue): void {
    studyQueue.on('active', (job: Job) => {
      const id = studyIdOf(job);
      if (id) void this.redis.set(this.noteKey(id), String(job.timestamp), 'EX', NOTE_TTL_SECONDS).catch(() => undefined);
    });
    studyQueue.on('completed', (job: Job) => {
      void this.metrics.ingestionLag('listed', this.secondsSince(job.timestamp, job));
    });
    indexQueue.on('completed', (job: Job) => void this.recordIndexed(job));
  }

  private async recordIndexed(job: Job): Promise<void> {
    const id = studyIdOf(job);
    const noted = id ? Number(await this.redis.get(this.noteKey(id)).catch(() => null)) : NaN;
    const stableAt = Number.isFinite(noted) && noted > 0 && noted <= job.timestamp ? noted : job.timestamp;
    await this.metrics.ingestionLag('indexed', this.secondsSince(stableAt, job));
  }

  private secondsSince(start: number, job: Job): number {
    return ((job.finishedOn ?? Date.now()) - start) / 1000;
  }

  private noteKey(imgsrvStudyId: string): string {
    return `metrics:ingest:${imgsrvStudyId}`;
  }
}
