import {
  applyDecorators,
  CallHandler,
  ExecutionContext,
  Injectable,
  NestInterceptor,
  SetMetadata,
  UseInterceptors,
} from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { FastifyRequest } from 'fastify';
import { Observable, tap } from 'rxjs';
import type { AuthUser } from '../common/auth/auth-user';
import { AccessAction, AuditService } from './audit.service';

export interface AuditAccessOptions {
  /** Path parameter holding the study id (default `id`). */
  studyParam?: string;
  /** Body field holding the study id instead (e.g. `study_id` of POST /api/viewer/token). */
  studyBodyField?: string;
  /** Path parameter naming what was opened inside the study (instance, series). */
  targetParam?: string;
}

const AUDIT_ACCESS = 'audit:access';

interface AuditSpec extends AuditAccessOptions {
  action: AccessAction;
}

type AuditedRequest = FastifyRequest & {
  user?: AuthUser;
  params?: Record<string, unknown>;
  body?: unknown;
};

/**
 * Logs that the caller opened a study (or an image or a viewer token of it) once the handler has
 * succeeded: a 404 or 401 opened nothing. Put it on the controller method, after `@Auth()`.
 */
export function AuditAccess(action: AccessAction, options: AuditAccessOptions = {}) {
  return applyDecorators(
    SetMetadata(AUDIT_ACCESS, { action, ...options } satisfies AuditSpec),
    UseInterceptors(AccessLogInterceptor),
  );
}

@Injectable()
export class AccessLogInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly audit: AuditService,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = this.reflector.get<AuditSpec | undefined>(AUDIT_ACCESS, context.getHandler());
    if (!spec) return next.handle();
    const request = context.switchToHttp().getRequest<AuditedRequest>();
    let recorded = false;
    return next.handle().pipe(
      tap(() => {
        if (recorded) return;
        recorded = true;
        this.audit.record(describeAccess(spec, request));
      }),
    );
  }
}

function describeAccess(spec: AuditSpec, request: AuditedRequest) {
  const params = request.params ?? {};
  const body = (request.body && typeof request.body === 'object' ? request.body : {}) as Record<string, unknown>;
  return {
    action: spec.action,
    userId: request.user?.id,
    tenantId: request.user?.tenant_id,
    studyId: spec.studyBodyField ? body[spec.studyBodyField] : params[spec.studyParam ?? 'id'],
    targetId: spec.targetParam ? params[spec.targetParam] : null,
    ip: request.ip,
    requestId: String(request.id ?? ''),
  };
}
