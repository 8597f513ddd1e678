import { ArgumentsHost, Catch, ExceptionFilter, HttpException, HttpStatus, Logger } from '@nestjs/common';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { ThrottlerException } from '@nestjs/throttler';
import { ApiError, ErrorBodies } from './api-errors';
import { loggedUrl } from '../http/logged-url';

/** Bodies for errors that Nest or Fastify raise without our shape. */
export function defaultBodyFor(status: number, message?: string): Record<string, unknown> {
  switch (status) {
    case 400:
      return message && !/^Bad Request/.test(message) ? { message } : ErrorBodies.badRequest;
    case 401:
      return ErrorBodies.unauthenticated;
    case 403:
      return ErrorBodies.forbidden;
    case 404:
      return ErrorBodies.notFound;
    case 405:
      return ErrorBodies.methodNotAllowed;
    case 413:
      return ErrorBodies.payloadTooLarge;
    case 415:
      return ErrorBodies.unsupportedMediaType;
    case 429:
      return ErrorBodies.tooManyAttempts;
    case 503:
      return ErrorBodies.serviceUnavailable;
    default:
      return status >= 500 ? ErrorBodies.serverError : { message: message ?? 'Request error.' };
  }
}

/**
 * One place shapes every error body of the contract. Anything unexpected becomes a logged,
 * generic 500 without stack or SQL in the body (tests treat any 500 as a bug).
 */
@Catch()
export class AllExceptionsFilter implements ExceptionFilter {
  private readonly logger = new Logger('Errors');

  catch(exception: unknown, host: ArgumentsHost): void {
    const ctx = host.switchToHttp();
    const reply = ctx.getResponse<FastifyReply>();
    const request = ctx.getRequest<FastifyRequest>();
    const { status, body } = this.describe(exception, request);
    if (reply.sent) return;
    reply.status(status).header('content-type', 'application/json; charset=utf-8').send(body);
  }

  private describe(exception: unknown, request: FastifyRequest) {
    if (exception instanceof ApiError) {
      return { status: exception.getStatus(), body: exception.getResponse() as object };
    }
    if (exception instanceof ThrottlerException) {
      return { status: 429, body: defaultBodyFor(429) };
    }
    if (exception instanceof HttpException) {
      const status = exception.getStatus();
      const response = exception.getResponse();
      // A deliberate body (e.g. the health report); Nest's generic ones carry `statusCode`.
      if (typeof response === 'object' && response !== null && !('statusCode' in response)) {
        return { status, body: response };
      }
      const raw = typeof response === 'string' ? response : (response as { message?: unknown }).message;
      const message = typeof raw === 'string' ? raw : undefined;
      return { status, body: defaultBodyFor(status, status === 400 ? message : undefined) };
    }
    const fastifyStatus = (exception as { statusCode?: unknown })?.statusCode;
    if (typeof fastifyStatus === 'number' && fastifyStatus >= 400 && fastifyStatus < 500) {
      // Fastify's own errors: body parsing, content type, body size.
      const message = fastifyStatus === 400 ? ErrorBodies.malformedBody.message : undefined;
      return { status: fastifyStatus, body: defaultBodyFor(fastifyStatus, message) };
    }
    if (isDependencyDown(exception)) {
      this.logger.warn(
        `Dependency unavailable on ${request?.method} ${loggedUrl(request?.url)}: ${(exception as Error)?.message}`,
      );
      return { status: HttpStatus.SERVICE_UNAVAILABLE, body: defaultBodyFor(503) };
    }
    this.logger.error(
      `Unhandled error on ${request?.method} ${loggedUrl(request?.url)}: ${(exception as Error)?.stack ?? exception}`,
    );
    return { status: HttpStatus.INTERNAL_SERVER_ERROR, body: defaultBodyFor(500) };
  }
}

const UNAVAILABLE_MESSAGE =
  /ECONNREFUSED|ECONNRESET|EPIPE|ETIMEDOUT|Connection is closed|Connection terminated|terminating connection|timeout exceeded when trying to connect|Driver not Connected|Cannot use a pool after calling end|MaxRetriesPerRequest|Stream isn't writeable|the database system is (starting up|shutting down)/i;

/** PostgreSQL or Redis unreachable, or a statement over its time: a 503 the client may retry, not a 500. */
export function isDependencyDown(error: unknown): boolean {
  for (
    let e = error as { message?: string; code?: string; name?: string; driverError?: unknown; cause?: unknown } | undefined,
      depth = 0;
    e && depth < 4;
    depth++
  ) {
    const code = String(e.code ?? '');
    // 08: connection lost; 57P: server shutting down; 57014: a statement cancelled by the
    // DATABASE_STATEMENT_TIMEOUT (or by an operator).
    if (/^(08|57P)/.test(code) || ['57014', 'ECONNREFUSED', 'ECONNRESET', 'ETIMEDOUT', 'EPIPE'].includes(code)) return true;
    if (e.name === 'MaxRetriesPerRequestError' || UNAVAILABLE_MESSAGE.test(String(e.message ?? ''))) return true;
    e = (e.driverError ?? e.cause) as typeof e;
  }
  return false;
}
