import { Inject, Injectable, Logger, OnModuleInit, Optional } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { IncomingMessage, ServerResponse } from 'http';
import { performance } from 'perf_hooks';
import { FastifyAdapterWithRawRoutes } from '../common/http/raw-routes';
import { requestIdOf } from '../common/http/request-id';
import { clientAddressOf } from '../common/http/client-address';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { MetricsService } from '../operations';
import { verdictResponse } from './verdict-response';
import { FORBIDDEN, Verdict, ViewerService } from './viewer.service';

export const VALIDATE_PATH = '/api/viewer/token/validate';

/**
 * GET /api/viewer/token/validate on a socket: answered from Node's request event (RawRoutes), with
 * the same statuses, bodies and headers as ViewerController.validate, which documents the route and
 * answers in-process requests (`inject`). nginx sends this subrequest before every DICOMweb request
 * of the viewer, so it skips the per-request work of Fastify and Nest that it has no use for.
 */
@Injectable()
export class ValidateRawRoute implements OnModuleInit {
  private readonly logger = new Logger(ValidateRawRoute.name);
  private readonly clientAddress: (request: IncomingMessage) => string | undefined;

  constructor(
    @Inject(APP_CONFIG) config: AppConfig,
    private readonly adapterHost: HttpAdapterHost,
    private readonly viewer: ViewerService,
    @Optional() private readonly metrics?: MetricsService,
  ) {
    this.clientAddress = clientAddressOf(config.trustProxy);
  }

  onModuleInit(): void {
    const adapter = this.adapterHost.httpAdapter;
    if (adapter instanceof FastifyAdapterWithRawRoutes) adapter.rawRoutes.register('GET', VALIDATE_PATH, this.handle);
  }

  readonly handle = (request: IncomingMessage, response: ServerResponse): void => {
    const started = performance.now();
    const ip = () => this.clientAddress(request);
    const verdict = this.viewer.validateNow(request.headers, ip);
    if (verdict) return this.answer(request, response, verdict, started);
    this.viewer.validateFromStores(request.headers, ip).then(
      (verdict) => this.answer(request, response, verdict, started),
      (error: unknown) => {
        // validateFromStores() does not throw; if it ever does, the proxy must still get a refusal, not a hang.
        this.logger.error(`Viewer validation failed, refusing: ${(error as Error)?.message ?? error}`);
        this.answer(request, response, FORBIDDEN, started);
      },
    );
  };

  private answer(request: IncomingMessage, response: ServerResponse, verdict: Verdict, started: number): void {
    const { status, headers, body } = verdictResponse(verdict);
    response.writeHead(status, headers(requestIdOf(request)));
    // A string body goes out in the same write as the headers (a Buffer would take a writev).
    response.end(request.method === 'HEAD' || body === '' ? undefined : body);
    this.metrics?.httpRequest(request.method ?? 'GET', VALIDATE_PATH, verdict.status, (performance.now() - started) / 1000);
  }
}
