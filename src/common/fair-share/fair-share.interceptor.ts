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
import { ApiTooManyRequestsResponse } from '@nestjs/swagger';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { finalize, from, Observable, switchMap } from 'rxjs';
import type { AuthUser } from '../auth/auth-user';
import { ApiError, ErrorBodies } from '../errors/api-errors';
import { Cost, FairShareCounters, isWildcardOnly } from './fair-share';

const FAIR_SHARE = 'fair-share';
/** Seconds a refused caller is told to wait before trying again. */
export const FAIR_SHARE_RETRY_AFTER_SECONDS = 1;

/** The query's search texts: named parameters, or a route's own reading of its query (QIDO-RS's spellings). */
type PatternParams = readonly string[] | ((query: Record<string, unknown>) => unknown[]);

interface FairShareSpec {
  /** Query parameters whose wildcard-only value makes the request a `wildcard` one. */
  patternParams: PatternParams;
  /** Only a request that searches (a non-empty pattern parameter) is expensive: a list's plain page is not. */
  searchesOnly: boolean;
}

/**
 * Puts an expensive route (a list search, QIDO, a PDF, a download) under the caller's fair share:
 * past the per-user or per-clinic number running at once, a request waits its turn (up to
 * FAIR_SHARE_MAX_WAIT_MS, behind at most FAIR_SHARE_MAX_WAITING), else 429 `{message: "Too Many
 * Attempts."}` with Retry-After. The slot is held until the response has gone (streams included).
 * After `@Auth()`.
 */
export function FairShare(options: { patternParams?: PatternParams; searchesOnly?: boolean } = {}) {
  return applyDecorators(
    SetMetadata(FAIR_SHARE, {
      patternParams: options.patternParams ?? [],
      searchesOnly: options.searchesOnly ?? false,
    } satisfies FairShareSpec),
    UseInterceptors(FairShareInterceptor),
    ApiTooManyRequestsResponse({
      description:
        'Too many of the caller\'s or the clinic\'s expensive requests at once: `{message: "Too Many Attempts."}`, Retry-After',
    }),
  );
}

@Injectable()
export class FairShareInterceptor implements NestInterceptor {
  constructor(
    private readonly reflector: Reflector,
    private readonly counters: FairShareCounters,
  ) {}

  intercept(context: ExecutionContext, next: CallHandler): Observable<unknown> {
    const spec = this.reflector.get<FairShareSpec | undefined>(FAIR_SHARE, context.getHandler());
    const http = context.switchToHttp();
    const request = http.getRequest<FastifyRequest & { user?: AuthUser }>();
    const user = request.user;
    if (!spec || !user) return next.handle();
    const query = (request.query ?? {}) as Record<string, unknown>;
    const { patternParams } = spec;
    const patterns = typeof patternParams === 'function' ? patternParams(query) : patternParams.map((name) => query[name]);
    if (spec.searchesOnly && !patterns.some((value) => typeof value === 'string' && value !== '')) return next.handle();
    const cost: Cost = patterns.some(isWildcardOnly) ? 'wildcard' : 'expensive';
    const reply = http.getResponse<FastifyReply>();
    return from(this.counters.take(user.id, user.tenant_id, cost)).pipe(
      switchMap((slot) => {
        if (!slot) {
          reply.header('retry-after', String(FAIR_SHARE_RETRY_AFTER_SECONDS));
          throw new ApiError(429, ErrorBodies.tooManyAttempts);
        }
        // Held until the answer has gone, a streamed one included, or the client has left. A client
        // that left while the request waited has closed its response already: no event will come,
        // so the slot goes when the handler is done.
        const raw = reply.raw;
        if (raw.closed || raw.destroyed || raw.socket?.destroyed === true) return next.handle().pipe(finalize(slot.release));
        raw.once('finish', slot.release);
        raw.once('close', slot.release);
        return next.handle();
      }),
    );
  }
}
