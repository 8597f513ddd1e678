import { Module } from '@nestjs/common';
import { ThrottlerModule } from '@nestjs/throttler';
import { ThrottlerStorageRedisService } from '@nest-lab/throttler-storage-redis';
import { AdminModule } from './admin/admin.module';
import { AuditModule } from './audit/audit.module';
import { AuthModule } from './auth/auth.module';
import { FairShareModule } from './common/fair-share/fair-share.module';
import { APP_CONFIG } from './config/config.module';
import { AppConfig } from './config/environment';
import { CoreModule } from './core.module';
import { ExchangeModule } from './exchange/exchange.module';
import { HealthModule } from './health/health.module';
import { IngestionWorkerModule } from './ingestion/ingestion-worker.module';
import { IngestionModule } from './ingestion/ingestion.module';
import { OperationsModule, OperationsWorkerModule } from './operations/operations.module';
import { PatientsModule } from './patients/patients.module';
import { ReportsModule, ReportsWorkerModule } from './reports/reports.module';
import { SharesModule } from './shares/shares.module';
import { StudiesModule } from './studies/studies.module';
import { TenantModule } from './tenant/tenant.module';
import { ViewerModule } from './viewer/viewer.module';

/** The HTTP API process: controllers; it only adds jobs to the queues. */
@Module({
  imports: [
    CoreModule,
    ThrottlerModule.forRootAsync({
      inject: [APP_CONFIG],
      useFactory: (config: AppConfig) => ({
        throttlers: [{ name: 'default', ttl: 60_000, limit: 10 }],
        // Given a URL, the storage owns its connection and closes it on shutdown.
        storage: new ThrottlerStorageRedisService(config.REDIS_URL, {
          keyPrefix: `${config.QUEUE_PREFIX}:throttle:`,
          maxRetriesPerRequest: 2,
        }),
      }),
    }),
    AuditModule,
    FairShareModule,
    AuthModule,
    HealthModule,
    AdminModule,
    TenantModule,
    StudiesModule,
    PatientsModule,
    ViewerModule,
    ReportsModule,
    ExchangeModule,
    SharesModule,
    IngestionModule,
    OperationsModule,
  ],
})
export class ApiModule {}

/** The queue worker process: no HTTP, only processors. */
@Module({
  imports: [CoreModule, IngestionWorkerModule, OperationsWorkerModule, ReportsWorkerModule],
})
export class WorkerModule {}
