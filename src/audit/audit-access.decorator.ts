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
import { AccessAction, AccessEntry, AuditService } from './audit.service';
import { ViewTrail } from './view-trail';

export interface AuditAccessOptions {
  /** Path parameter holding the study id (default `id`). */
  studyParam?: string;
  /** Body field holding the study id instead (e.g. `study_id` of POST /api/viewer/token). */
  studyBodyField?: string;
  /** Path parameter naming what was opened inside the study (instance, series). */
  targetParam?: string;
  /**
   * A search: no study; the entry carries how many studies the answer returned (a page's `data`, an
   * array, or what the handler told `searchReturned`), never the search text.
   */
  search?: boolean;
  /**
   * The act reads one patient: the answer is the patient (`patient_id`, `tenant_id`), or the handler
   * names it with `accessedPatient` (a page of the patient's studies, which may be empty). The entry
   * carries that patient's DICOM Patient ID and clinic (so `patient_id` finds it in the trail), and
   * no study.
   */
  patientFromAnswer?: boolean;
}

const searchCounts = new WeakMap<object, number>();

/** For a search handler whose answer is not a list (a serialized body): how many studies it returned. */
export function searchReturned(request: object, count: number): void {
  searchCounts.set(request, count);
}

interface AnsweredPatient {
  patient_id?: unknown;
  tenant_id?: unknown;
}

const accessedPatients = new WeakMap<object, AnsweredPatient>();

/** For a handler reading one patient whose answer is not that patient (a page of its studies): the patient. */
export function accessedPatient(request: object, patient: { patient_id: string; tenant_id: string }): void {
  accessedPatients.set(request, patient);
}

/** The patient an act read: the one the handler named, else the answer itself. */
function patientOf(result: unknown, request: object): { patientId: string | null; tenantId?: string } {
  const patient = (accessedPatients.get(request) ?? result) as AnsweredPatient | null | undefined;
  return {
    patientId: typeof patient?.patient_id === 'string' ? patient.patient_id : null,
    ...(typeof patient?.tenant_id === 'string' ? { tenantId: patient.tenant_id } : {}),
  };
}

function countOf(result: unknown, request: object): number | null {
  if (Array.isArray(result)) return result.length;
  const data = (result as { data?: unknown } | null)?.data;
  if (Array.isArray(data)) return data.length;
  return searchCounts.get(request) ?? null;
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
 * Records the caller's act in the access trail once the handler has succeeded (a 404 or 401 opened
 * nothing): a study (or an image or a viewer token of it) or a patient opened, a report read or
 * written, a download, or with `search: true` a search. A `study.view` is recorded at most once per
 * caller and study in 5 minutes, the viewer gate's rule (ViewTrail). Put it on the controller
 * method, after `@Auth()`.
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
    private readonly views: ViewTrail,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = this.reflector.get<AuditSpec | undefined>(AUDIT_ACCESS, context.getHandler());
    if (!spec) return next.handle();
    const request = context.switchToHttp().getRequest<AuditedRequest>();
    let recorded = false;
    return next.handle().pipe(
      tap((result: unknown) => {
        if (recorded) return;
        recorded = true;
        this.record(describeAccess(spec, request, result));
      }),
    );
  }

  private record(entry: AccessEntry): void {
    // decisions.md 3e: one study.view per caller and study in 5 minutes, however the study was opened.
    if (entry.action === 'study.view' && entry.userId && typeof entry.studyId === 'string') {
      const reader = { userId: entry.userId, shareId: null };
      const study = { study_id: entry.studyId, tenant_id: entry.tenantId };
      this.views.opened(reader, [[study]], () => entry.ip, entry.requestId ?? undefined);
      return;
    }
    this.audit.record(entry);
  }
}

function describeAccess(spec: AuditSpec, request: AuditedRequest, result: unknown): AccessEntry {
  const params = request.params ?? {};
  const body = (request.body && typeof request.body === 'object' ? request.body : {}) as Record<string, unknown>;
  const entry: AccessEntry = {
    action: spec.action,
    userId: request.user?.id,
    tenantId: request.user?.tenant_id,
    ip: request.ip,
    requestId: String(request.id ?? ''),
  };
  if (spec.patientFromAnswer) Object.assign(entry, patientOf(result, request));
  if (spec.search) return { ...entry, count: countOf(result, request) };
  if (spec.patientFromAnswer) return entry;
  const studyId = spec.studyBodyField ? body[spec.studyBodyField] : params[spec.studyParam ?? 'id'];
  return {
    ...entry,
    // The raw request, not the validated (lowercased) id: spelled as stored so that one study read
    // in two cases is still one study.view in its window.
    studyId: typeof studyId === 'string' ? studyId.toLowerCase() : studyId,
    targetId: spec.targetParam ? params[spec.targetParam] : null,
  };
}
