import { BullModule } from '@nestjs/bull';
import { Module } from '@nestjs/common';
import { APP_CONFIG } from '../../config/config.module';
import { AppConfig } from '../../config/environment';

/** Fetches a study from the image server and upserts it (fast, keeps the list current). */
export const STUDY_QUEUE = 'study';
/** Series, instances, patient and thumbnails of a study (slower, heavy studies do not block). */
export const INDEX_QUEUE = 'index';
/** Periodic reconciliation with the image server's change feed. */
export const RECONCILE_QUEUE = 'reconcile';

/** Files each signed report's PDF in the image server, as a DICOM Encapsulated PDF of the study. */
export const REPORT_FILING_QUEUE = 'report-filing';

export const QUEUE_NAMES = [STUDY_QUEUE, INDEX_QUEUE, RECONCILE_QUEUE, REPORT_FILING_QUEUE];

/**
 * Bull connected to REDIS_URL with QUEUE_PREFIX; shared by the API (producer) and the worker. Not
 * global: only the queue code (ingestion) and operations may touch queues, and they import it.
 */
@Module({
  imports: [
    BullModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        url: config.REDIS_URL,
        prefix: `${config.QUEUE_PREFIX}:bull`,
        defaultJobOptions: {
          attempts: 8,
          backoff: { type: 'exponential', delay: 2000 },
          removeOnComplete: 1000,
          removeOnFail: false,
        },
      }),
    }),
    BullModule.registerQueue(...QUEUE_NAMES.map((name) => ({ name }))),
  ],
  exports: [BullModule],
})
export class QueuesModule {}
