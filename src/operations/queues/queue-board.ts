import { createBullBoard } from '@bull-board/api';
import { BullAdapter } from '@bull-board/api/bullAdapter';
import { FastifyAdapter as BoardAdapter } from '@bull-board/fastify';
import type { Queue } from 'bull';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';

export const QUEUES_PATH = '/queues';

/**
 * The board's page loads its scripts and stylesheet from itself, has inline styles and a JSON
 * <script> block (data, not executed), and calls its own API. Used by the security headers plugin
 * (helmet reads `config.helmet` per route) in place of the API's deny-all policy.
 */
export const QUEUES_CSP = {
  useDefaults: false,
  directives: {
    defaultSrc: ["'self'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'", "'unsafe-inline'"],
    imgSrc: ["'self'", 'data:'],
    fontSrc: ["'self'", 'data:'],
    connectSrc: ["'self'"],
    objectSrc: ["'none'"],
    baseUri: ["'self'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  },
};

/**
 * Bull Board for the ingestion queues under /queues, in its own encapsulated Fastify scope so that
 * `guard` (an onRequest hook) runs before every page, asset and API call of the board, and nothing
 * else. Failed jobs can be retried from it (one, or all failed jobs of a queue).
 */
export async function registerQueueBoard(
  fastify: FastifyInstance,
  queues: Queue[],
  guard: (request: FastifyRequest, reply: FastifyReply) => Promise<void>,
): Promise<void> {
  const serverAdapter = new BoardAdapter();
  serverAdapter.setBasePath(QUEUES_PATH);
  createBullBoard({
    queues: queues.map((queue) => new BullAdapter(queue, { readOnlyMode: false, allowRetries: true })),
    serverAdapter,
    options: { uiConfig: { boardTitle: 'PACS queues' } },
  });
  await fastify.register(async (scope) => {
    scope.addHook('onRoute', (route: RouteOptions) => {
      route.config = { ...((route.config as object) ?? {}), helmet: { contentSecurityPolicy: QUEUES_CSP } } as never;
    });
    scope.addHook('onRequest', guard);
    await scope.register(serverAdapter.registerPlugin() as never, { prefix: QUEUES_PATH });
  });
}
