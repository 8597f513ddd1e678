import { Global, Module } from '@nestjs/common';
import { AccessLogRepository } from './access-log.repository';
import { AccessLogInterceptor } from './audit-access.decorator';
import { AuditService } from './audit.service';

/**
 * The access log (who opened which study, image or viewer token). Global, like logging: it is
 * cross-cutting, and `@AuditAccess(...)` builds its interceptor in the module of whichever
 * controller carries it, which must then reach AuditService.
 */
@Global()
@Module({
  providers: [AccessLogRepository, AuditService, AccessLogInterceptor],
  exports: [AuditService, AccessLogInterceptor],
})
export class AuditModule {}
