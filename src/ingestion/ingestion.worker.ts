import { InjectQueue } from '@nestjs/bull';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import { INDEX_QUEUE, RECONCILE_QUEUE, STUDY_QUEUE } from '../common/queues/queues.module';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { IndexJobService } from './index-job.service';
import { INDEX_JOB, IndexJobData, RECONCILE_JOB, STUDY_JOB, StudyJobData } from './ingestion-queue.service';
import { ReconcileService } from './reconcile.service';
import { StudyJobService } from './study-job.service';

function requireStudyId(data: unknown): string {
  const id = (data as { imgsrvStudyId?: unknown })?.imgsrvStudyId;
  if (typeof id !== 'string' || id === '') throw new Error('job data lacks imgsrvStudyId');
  return id;
}

/**
 * Starts the processors of the worker process. Study and index jobs have separate queues, each with
 * WORKER_CONCURRENCY slots, so a large study being indexed never delays the listing of small ones.
 * On shutdown (SIGTERM) the queues stop taking jobs and wait for the running ones to finish.
 */
@Injectable()
export class IngestionWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('IngestionWorker');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(STUDY_QUEUE) private readonly studyQueue: Queue,
    @InjectQueue(INDEX_QUEUE) private readonly indexQueue: Queue,
    @InjectQueue(RECONCILE_QUEUE) private readonly reconcileQueue: Queue,
    private readonly studies: StudyJobService,
    private readonly indexer: IndexJobService,
    private readonly reconciler: ReconcileService,
  ) {}

  private get queues(): Queue[] {
    return [this.studyQueue, this.indexQueue, this.reconcileQueue];
  }

  async onApplicationBootstrap(): Promise<void> {
    const concurrency = this.config.WORKER_CONCURRENCY;
    for (const queue of this.queues) {
      queue.on('failed', (job: Job, error: Error) => {
        const final = job.attemptsMade >= (job.opts.attempts ?? 1);
        const message = `${queue.name} job ${job.id} failed (attempt ${job.attemptsMade}${final ? ', giving up: kept as failed' : ', will retry'}): ${error?.message}`;
        if (final) this.logger.error(message);
        else this.logger.warn(message);
      });
      queue.on('error', (error: Error) => this.logger.error(`${queue.name} queue: ${error?.message}`));
    }
    this.start(this.studyQueue, STUDY_JOB, concurrency, (job: Job<StudyJobData>) =>
      this.studies.run({ imgsrvStudyId: requireStudyId(job.data), source: job.data.source }),
    );
    this.start(this.indexQueue, INDEX_JOB, concurrency, (job: Job<IndexJobData>) =>
      this.indexer.run({
        imgsrvStudyId: requireStudyId(job.data),
        changeSeq: Number(job.data.changeSeq) || 0,
        lastUpdate: job.data.lastUpdate ?? null,
      }),
    );
    this.start(this.reconcileQueue, RECONCILE_JOB, 1, () => this.reconciler.run());
    await this.scheduleReconciliation();
  }

  async beforeApplicationShutdown(): Promise<void> {
    // Bull's close pauses this process's workers and waits for their active jobs to finish.
    await Promise.all(this.queues.map((queue) => queue.close()));
  }

  private start<T>(queue: Queue, name: string, concurrency: number, handler: (job: Job<T>) => Promise<unknown>): void {
    // The returned promise only settles when the queue closes.
    queue.process(name, concurrency, handler).catch((error: Error) => {
      this.logger.error(`${queue.name} processor stopped: ${error?.message}`);
    });
  }

  /** One repeatable job across all workers; a changed RECONCILE_INTERVAL replaces the old schedule. */
  private async scheduleReconciliation(): Promise<void> {
    const every = this.config.RECONCILE_INTERVAL * 1000;
    for (const repeatable of await this.reconcileQueue.getRepeatableJobs()) {
      if (repeatable.name === RECONCILE_JOB && (every === 0 || Number(repeatable.every) !== every)) {
        await this.reconcileQueue.removeRepeatableByKey(repeatable.key);
      }
    }
    if (every === 0) return;
    await this.reconcileQueue.add(
      RECONCILE_JOB,
      {},
      { repeat: { every }, jobId: RECONCILE_JOB, attempts: 1, removeOnComplete: 100, removeOnFail: 100 },
    );
  }
}
