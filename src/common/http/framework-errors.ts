import type { FastifyReply, FastifyRequest } from 'fastify';
import { defaultBodyFor } from '../errors/all-exceptions.filter';

const FASTIFY_ERROR_KEYS = new Set(['statusCode', 'code', 'error', 'message']);
const MALFORMED_BODY_CODES = new Set(['FST_ERR_CTP_INVALID_JSON_BODY', 'FST_ERR_CTP_EMPTY_JSON_BODY']);
const NO_SUCH_PATH_CODES = new Set(['FST_ERR_BAD_URL', 'FST_ERR_MAX_PARAM_LENGTH']);

/**
 * Errors Fastify's router raises before any route or hook runs: a path that cannot be decoded, or a
 * path parameter longer than any id. Neither can name a record: 404, as for any path id that is
 * not a uuid.
 */
export function frameworkErrors(error: { code?: string }, _request: FastifyRequest, reply: FastifyReply): void {
  const status = NO_SUCH_PATH_CODES.has(String(error?.code)) ? 404 : 400;
  void reply.code(status).header('content-type', 'application/json; charset=utf-8').send(defaultBodyFor(status));
}

/**
 * Errors raised while Fastify reads a request, before Nest routes it (body too large, bad JSON,
 * unsupported media type), are answered by Fastify's own error handler: Nest installs its handler
 * only after the routes' contexts are built. This gives them the API's error shape, and a 5xx
 * there never carries the internal message.
 */
export async function normalizeFastifyErrorBody(
  _request: FastifyRequest,
  reply: FastifyReply,
  payload: unknown,
): Promise<unknown> {
  if (reply.statusCode < 400 || typeof payload !== 'string' || !payload.includes('"statusCode":')) return payload;
  let parsed: Record<string, unknown>;
  try {
    parsed = JSON.parse(payload);
  } catch {
    return payload;
  }
  if (
    parsed === null ||
    typeof parsed !== 'object' ||
    !Object.keys(parsed).every((key) => FASTIFY_ERROR_KEYS.has(key)) ||
    typeof parsed.statusCode !== 'number' ||
    typeof parsed.error !== 'string'
  ) {
    return payload;
  }
  const code = String(parsed.code ?? '');
  // A path that cannot even be decoded, or a path id longer than any id, names no record: the
  // contract's answer to a path id that is not a uuid is 404.
  if (NO_SUCH_PATH_CODES.has(code)) reply.code(404);
  const status = reply.statusCode;
  const message = status === 400 && MALFORMED_BODY_CODES.has(code) ? 'Malformed request body.' : undefined;
  reply.header('content-type', 'application/json; charset=utf-8');
  return JSON.stringify(defaultBodyFor(status, message));
}
