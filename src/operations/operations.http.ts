import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable, Logger, OnModuleInit } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import type { Queue } from 'bull';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { Authenticator } from '../auth';
import { ErrorBodies, ErrorBody } from '../common/errors/api-errors';
import { INDEX_QUEUE, RECONCILE_QUEUE, REPORT_FILING_QUEUE, STUDY_QUEUE } from '../common/queues/queues.module';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';
import { registerHttpMetrics, registerMetricsRoute } from './metrics/metrics.routes';
import { MetricsService } from './metrics/metrics.service';
import { registerQueueBoard } from './queues/queue-board';
import { checkSuperAdmin } from './queues/super-admin.hook';

/**
 * The operator's HTTP surface, outside the /api prefix: the queue board (/queues, super admins)
 * and the Prometheus endpoint (/metrics, METRICS_TOKEN). Both are plain Fastify routes, declared
 * while the application initialises (before Fastify is ready).
 */
@Injectable()
export class OperationsHttp implements OnModuleInit {
  private readonly logger = new Logger('Operations');

  constructor(
    private readonly adapterHost: HttpAdapterHost,
    private readonly metrics: MetricsService,
    private readonly authenticator: Authenticator,
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @InjectQueue(STUDY_QUEUE) private readonly studyQueue: Queue,
    @InjectQueue(INDEX_QUEUE) private readonly indexQueue: Queue,
    @InjectQueue(RECONCILE_QUEUE) private readonly reconcileQueue: Queue,
    @InjectQueue(REPORT_FILING_QUEUE) private readonly reportFilingQueue: Queue,
  ) {}

  async onModuleInit(): Promise<void> {
    const fastify = this.adapterHost.httpAdapter?.getInstance?.() as FastifyInstance | undefined;
    if (!fastify?.addHook) return;
    registerHttpMetrics(fastify, this.metrics);
    if (this.config.METRICS_TOKEN) registerMetricsRoute(fastify, this.metrics, this.config.METRICS_TOKEN);
    const queues = [this.studyQueue, this.indexQueue, this.reconcileQueue, this.reportFilingQueue];
    await registerQueueBoard(fastify, queues, (request, reply) => this.guardBoard(request, reply));
  }

  private async guardBoard(request: FastifyRequest, reply: FastifyReply): Promise<void> {
    let status: number;
    let body: ErrorBody;
    try {
      const check = await checkSuperAdmin(request, this.authenticator);
      if (check === 'super_admin') return;
      [status, body] = check === 'forbidden' ? [403, ErrorBodies.forbidden] : [401, ErrorBodies.unauthenticated];
    } catch (error) {
      this.logger.warn(`Queue board auth check failed: ${(error as Error).message}`);
      [status, body] = [503, ErrorBodies.serviceUnavailable];
    }
    // Not cached: a signed-out operator must not see the board from a cache.
    await reply.code(status).header('cache-control', 'no-store').send(body);
  }
}
