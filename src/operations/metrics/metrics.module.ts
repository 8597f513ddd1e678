import { Module } from '@nestjs/common';
import { QueuesModule } from '../../common/queues/queues.module';
import { MetricsService } from './metrics.service';

/**
 * The Prometheus registry and its collectors. Not global: the features that report (the viewer's
 * validation; operations, which records job durations) import it.
 */
@Module({
  imports: [QueuesModule],
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule {}
