import { createBullBoard } from '@bull-board/api';
import { BullAdapter } from '@bull-board/api/bullAdapter';
import { FastifyAdapter as BoardAdapter } from '@bull-board/fastify';
import type { Queue } from 'bull';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { OWN_PAGE_CSP } from '../../common/http/security-headers';

export const QUEUES_PATH = '/queues';

/**
 * Bull Board for the ingestion queues under /queues, in its own encapsulated Fastify scope so that
 * `guard` (an onRequest hook) runs before every page, asset and API call of the board, and nothing
 * else; its pages get the CSP of the API's own pages (`OWN_PAGE_CSP`). Failed jobs can be retried
 * from it (one, or all failed jobs of a queue).
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
      route.config = { ...((route.config as object) ?? {}), helmet: { contentSecurityPolicy: OWN_PAGE_CSP } } as never;
    });
    scope.addHook('onRequest', guard);
    await scope.register(serverAdapter.registerPlugin() as never, { prefix: QUEUES_PATH });
  });
}
