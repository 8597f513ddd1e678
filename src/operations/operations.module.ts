import { Module } from '@nestjs/common';
import { JobMetricsRecorder } from './metrics/job-metrics.recorder';
import { MetricsModule } from './metrics/metrics.module';
import { OperationsHttp } from './operations.http';

/** API process: the queue board at /queues and the Prometheus metrics at /metrics. */
@Module({
  imports: [MetricsModule],
  providers: [OperationsHttp],
})
export class OperationsModule {}

/** Worker process: job durations and ingestion lag, recorded where the jobs run. */
@Module({
  imports: [MetricsModule],
  providers: [JobMetricsRecorder],
})
export class OperationsWorkerModule {}
