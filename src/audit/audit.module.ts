import { Global, Module } from '@nestjs/common';
import { AccessLogRepository } from './access-log.repository';
import { AccessLogInterceptor } from './audit-access.decorator';
import { AuditService } from './audit.service';

/**
 * The access log (who opened which study, image or viewer token). Global so that any feature
 * module can use `@AuditAccess(...)` on a handler or inject AuditService.
 */
@Global()
@Module({
  providers: [AccessLogRepository, AuditService, AccessLogInterceptor],
  exports: [AuditService, AccessLogInterceptor],
})
export class AuditModule {}
