// The operations feature's public surface: what other features may import (see eslint.config.mjs).
export { OperationsModule, OperationsWorkerModule } from './operations.module';
export { MetricsModule } from './metrics/metrics.module';
export { MetricsService } from './metrics/metrics.service';
export type {
  DicomDoorRefusal,
  IngestionStage,
  JobOutcome,
  UntrustedSenderReason,
  ViewerValidationResult,
} from './metrics/metrics.service';
