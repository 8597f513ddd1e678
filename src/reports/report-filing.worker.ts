import { InjectQueue } from '@nestjs/bull';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import { REPORT_FILING_QUEUE } from '../common/queues/queues.module';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { REPORT_FILING_JOB, REPORT_FILING_SWEEP_JOB, ReportFilingJobData, ReportFilingQueue } from './report-filing.queue';
import { ReportFilingService } from './report-filing.service';
import { ReportsRepository } from './reports.repository';

/** How often the sweep looks, and how old an unfiled PDF must be: its own job's first attempts run within seconds. */
const SWEEP_EVERY_MS = 60_000;
const SWEEP_AFTER_SECONDS = 60;
const SWEEP_BATCH = 100;

/**
 * The worker process's processor of the report filing queue, and its sweep: every minute, a kept
 * PDF still unfiled a minute after its signing is queued again, so that neither a queueing that
 * failed after the signing's commit nor an image server down for longer than a job's attempts
 * leaves a signed report out of the study.
 */
@Injectable()
export class ReportFilingWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('ReportFilingWorker');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(REPORT_FILING_QUEUE) private readonly queue: Queue,
    private readonly filing: ReportFilingService,
    private readonly filingQueue: ReportFilingQueue,
    private readonly reports: ReportsRepository,
  ) {}

  async onApplicationBootstrap(): Promise<void> {
    this.queue.on('failed', (job: Job, error: Error) => {
      const final = job.attemptsMade >= (job.opts.attempts ?? 1);
      const message = `report filing job ${job.id} failed (attempt ${job.attemptsMade}${final ? ', kept as failed until the sweep retries it' : ', will retry'}): ${error?.message}`;
      if (final) this.logger.error(message);
      else this.logger.warn(message);
    });
    this.queue
      .process(REPORT_FILING_JOB, this.config.WORKER_CONCURRENCY, (job: Job<ReportFilingJobData>) => {
        const pdfId = job.data?.pdfId;
        if (typeof pdfId !== 'string' || pdfId === '') throw new Error('job data lacks pdfId');
        return this.filing.run(pdfId);
      })
      .catch((error: Error) => this.logger.error(`report filing processor stopped: ${error?.message}`));
    this.queue
      .process(REPORT_FILING_SWEEP_JOB, 1, () => this.sweep())
      .catch((error: Error) => this.logger.error(`report filing sweep stopped: ${error?.message}`));
    await this.queue.add(
      REPORT_FILING_SWEEP_JOB,
      {},
      {
        repeat: { every: SWEEP_EVERY_MS },
        jobId: REPORT_FILING_SWEEP_JOB,
        attempts: 1,
        removeOnComplete: 100,
        removeOnFail: 100,
      },
    );
  }

  /** Queues again the kept PDFs their own job did not file; answers how many. */
  async sweep(): Promise<number> {
    let queued = 0;
    for (const pdfId of await this.reports.unfiledPdfIds(SWEEP_AFTER_SECONDS, SWEEP_BATCH)) {
      if (await this.filingQueue.fileAgain(pdfId)) queued++;
    }
    if (queued > 0) this.logger.warn(`${queued} report PDF(s) not filed by their own job queued again`);
    return queued;
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }
}
