import { LogController } from 'fastify';
import type { FastifyReply, FastifyRequest } from 'fastify';

/**
 * Fastify's own log lines, with one change: a client that closes its connection before a streamed
 * answer has started (a viewer closed while a series' instances load, a load generator stopping) is
 * logged at info. Fastify hands that case to its default error handler, which logs it at error
 * level with status 500, though nothing was sent and nothing failed on our side; once the headers
 * are out, it already logs the same hang-up at info.
 */
export class ApiLogController extends LogController {
  override defaultErrorLog(
    error: Error,
    request: FastifyRequest,
    reply: FastifyReply,
    metadata?: Record<string, unknown>,
  ): void {
    if (!clientHungUp(error, reply)) return super.defaultErrorLog(error, request, reply, metadata);
    if (!this.isLogDisabled(request)) {
      request.log.info({ req: request }, 'client closed the connection before the answer started');
    }
  }
}

/** The answer's stream was cut because the connection it was going to is gone. */
export function clientHungUp(error: Error, reply: FastifyReply): boolean {
  return (
    (error as NodeJS.ErrnoException)?.code === 'ERR_STREAM_PREMATURE_CLOSE' && reply.raw.destroyed && !reply.raw.headersSent
  );
}
