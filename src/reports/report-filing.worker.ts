import { InjectQueue } from '@nestjs/bull';
import { BeforeApplicationShutdown, Inject, Injectable, Logger, OnApplicationBootstrap } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import { REPORT_FILING_QUEUE } from '../common/queues/queues.module';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { REPORT_FILING_JOB, ReportFilingJobData } from './report-filing.queue';
import { ReportFilingService } from './report-filing.service';

/** The worker process's processor of the report filing queue. */
@Injectable()
export class ReportFilingWorker implements OnApplicationBootstrap, BeforeApplicationShutdown {
  private readonly logger = new Logger('ReportFilingWorker');

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(REPORT_FILING_QUEUE) private readonly queue: Queue,
    private readonly filing: ReportFilingService,
  ) {}

  onApplicationBootstrap(): void {
    this.queue.on('failed', (job: Job, error: Error) => {
      const final = job.attemptsMade >= (job.opts.attempts ?? 1);
      const message = `report filing job ${job.id} failed (attempt ${job.attemptsMade}${final ? ', giving up: kept as failed' : ', will retry'}): ${error?.message}`;
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
  }

  async beforeApplicationShutdown(): Promise<void> {
    await this.queue.close();
  }
}
