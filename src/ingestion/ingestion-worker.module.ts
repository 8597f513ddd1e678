import { Module } from '@nestjs/common';
import { QueuesModule } from '../common/queues/queues.module';
import { ImgsrvModule } from '../imgsrv';
import { MetricsModule } from '../operations';
import { IndexJobService } from './index-job.service';
import { IngestionQueue } from './ingestion-queue.service';
import { IngestionRepository } from './ingestion.repository';
import { IngestionWorker } from './ingestion.worker';
import { ReconcileService } from './reconcile.service';
import { StudyJobService } from './study-job.service';

/** Worker side of ingestion: the queue processors. Only the worker process imports it. */
@Module({
  imports: [ImgsrvModule, QueuesModule, MetricsModule],
  providers: [IngestionQueue, IngestionRepository, StudyJobService, IndexJobService, ReconcileService, IngestionWorker],
  exports: [IngestionQueue, IngestionRepository, StudyJobService, IndexJobService, ReconcileService],
})
export class IngestionWorkerModule {}
