import { Global, Module } from '@nestjs/common';
import { MetricsService } from './metrics.service';

/** Global so that any feature module (the viewer's validation, the ingestion jobs) can report. */
@Global()
@Module({
  providers: [MetricsService],
  exports: [MetricsService],
})
export class MetricsModule {}
