import { Module } from '@nestjs/common';
import { AccessLogRepository } from './access-log.repository';
import { AccessLogInterceptor } from './audit-access.decorator';
import { AuditService } from './audit.service';

/**
 * The access log (who opened which study, image or viewer token). Not global: a feature whose
 * controllers use `@AuditAccess(...)` imports this module (the interceptor is built in the
 * controller's module and needs AuditService there).
 */
@Module({
  providers: [AccessLogRepository, AuditService, AccessLogInterceptor],
  exports: [AuditService, AccessLogInterceptor],
})
export class AuditModule {}
