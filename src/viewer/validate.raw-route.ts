import { Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { IncomingMessage, OutgoingHttpHeaders, ServerResponse } from 'http';
import { performance } from 'perf_hooks';
import { FastifyAdapterWithRawRoutes } from '../common/http/raw-routes';
import { requestIdOf } from '../common/http/request-id';
import { MetricsService } from '../operations/metrics/metrics.service';
import { FORBIDDEN, Verdict, ViewerService } from './viewer.service';

export const VALIDATE_PATH = '/api/viewer/token/validate';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';
const bodies = new WeakMap<Verdict, string>();

/** A verdict's body (empty for 200), the same JSON the Nest route serialises. */
export function verdictBody(verdict: Verdict): string {
  let body = bodies.get(verdict);
  if (body === undefined) {
    body = 'body' in verdict ? JSON.stringify(verdict.body) : '';
    bodies.set(verdict, body);
  }
  return body;
}

/**
 * GET /api/viewer/token/validate on a socket: answered from Node's request event (RawRoutes), with
 * the same statuses, bodies and headers as ViewerController.validate, which documents the route and
 * answers in-process requests (`inject`). nginx sends this subrequest before every DICOMweb request
 * of the viewer, so it skips the per-request work of Fastify and Nest that it has no use for.
 */
@Injectable()
export class ValidateRawRoute implements OnModuleInit {
  private readonly logger = new Logger(ValidateRawRoute.name);

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly viewer: ViewerService,
    @Optional() private readonly metrics?: MetricsService,
  ) {}

  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    if (adapter instanceof FastifyAdapterWithRawRoutes) adapter.rawRoutes.register('GET', VALIDATE_PATH, this.handle);
  }

  readonly handle = (request: IncomingMessage, response: ServerResponse): void => {
    const started = performance.now();
    const { 'x-viewer-token': token, 'x-original-uri': originalUri } = request.headers;
    const verdict = this.viewer.validateNow(token, originalUri);
    if (verdict) return this.answer(request, response, verdict, started);
    this.viewer.validateFromStores(token, originalUri).then(
      (verdict) => this.answer(request, response, verdict, started),
      (error: unknown) => {
        // validateFromStores() does not throw; if it ever does, the proxy must still get a refusal, not a hang.
        this.logger.error(`Viewer validation failed, refusing: ${(error as Error)?.message ?? error}`);
        this.answer(request, response, FORBIDDEN, started);
      },
    );
  };

  private answer(request: IncomingMessage, response: ServerResponse, verdict: Verdict, started: number): void {
    const body = verdictBody(verdict);
    const headers: OutgoingHttpHeaders = {
      'cache-control': 'no-store',
      'content-length': Buffer.byteLength(body),
      'x-request-id': requestIdOf(request),
    };
    if (body.length > 0) headers['content-type'] = JSON_CONTENT_TYPE;
    response.writeHead(verdict.status, headers);
    // A string body goes out in the same write as the headers (a Buffer would take a writev).
    response.end(request.method === 'HEAD' || body === '' ? undefined : body);
    this.metrics?.httpRequest(request.method ?? 'GET', VALIDATE_PATH, verdict.status, (performance.now() - started) / 1000);
  }
}
