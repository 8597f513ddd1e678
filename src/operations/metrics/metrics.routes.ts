import { createHash, timingSafeEqual } from 'crypto';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import { MetricsService } from './metrics.service';
import { ErrorBodies } from '../../common/errors/api-errors';

export const METRICS_PATH = '/metrics';

const digest = (value: string) => createHash('sha256').update(value).digest();

/** `Authorization: Bearer <METRICS_TOKEN>`, compared in constant time. */
export function hasMetricsToken(request: FastifyRequest, token: string): boolean {
  const header = request.headers.authorization;
  if (typeof header !== 'string') return false;
  const match = /^Bearer\s+(\S+)\s*$/i.exec(header);
  return !!match && timingSafeEqual(digest(match[1]), digest(token));
}

/**
 * Latency and status of every request Fastify answers (Nest routes, the board, 404s), labelled by
 * route pattern so that ids in URLs do not make one series per URL.
 */
export function registerHttpMetrics(fastify: FastifyInstance, metrics: MetricsService): void {
  fastify.addHook('onResponse', async (request: FastifyRequest, reply: FastifyReply) => {
    const route = request.routeOptions?.url ?? 'unmatched';
    metrics.httpRequest(request.method, route, reply.statusCode, reply.elapsedTime / 1000);
  });
}

/** GET /metrics, Prometheus text format; only registered when a token is configured. */
export function registerMetricsRoute(fastify: FastifyInstance, metrics: MetricsService, token: string): void {
  fastify.route({
    method: 'GET',
    url: METRICS_PATH,
    handler: async (request, reply) => {
      if (!hasMetricsToken(request, token)) {
        return reply
          .code(401)
          .header('www-authenticate', 'Bearer')
          .header('cache-control', 'no-store')
          .send(ErrorBodies.unauthenticated);
      }
      const text = await metrics.render();
      return reply.header('content-type', metrics.contentType).header('cache-control', 'no-store').send(text);
    },
  });
}
