import { Module } from '@nestjs/common';
import { AuthModule } from '../auth';
import { QueuesModule } from '../common/queues/queues.module';
import { JobMetricsRecorder } from './metrics/job-metrics.recorder';
import { MetricsModule } from './metrics/metrics.module';
import { OperationsHttp } from './operations.http';

/** API process: the queue board at /queues and the Prometheus metrics at /metrics. */
@Module({
  imports: [AuthModule, MetricsModule, QueuesModule],
  providers: [OperationsHttp],
})
export class OperationsModule {}

/** Worker process: job durations and ingestion lag, recorded where the jobs run. */
@Module({
  imports: [MetricsModule, QueuesModule],
  providers: [JobMetricsRecorder],
})
export class OperationsWorkerModule {}
