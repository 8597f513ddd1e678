import { Global, Module } from '@nestjs/common';
import { AccessLogRepository } from './access-log.repository';
import { AccessTrailController } from './access-trail.controller';
import { AccessTrailRepository } from './access-trail.repository';
import { AccessTrailService } from './access-trail.service';
import { AccessLogInterceptor } from './audit-access.decorator';
import { AuditService } from './audit.service';
import { ViewTrail } from './view-trail';

/**
 * The access log (who opened which study, image or viewer token). Global, like logging: it is
 * cross-cutting, and `@AuditAccess(...)` builds its interceptor in the module of whichever
 * controller carries it, which must then reach AuditService and ViewTrail.
 */
@Global()
@Module({
  controllers: [AccessTrailController],
  providers: [AccessLogRepository, AuditService, ViewTrail, AccessLogInterceptor, AccessTrailRepository, AccessTrailService],
  exports: [AuditService, ViewTrail, AccessLogInterceptor],
})
export class AuditModule {}
