import type { FastifyRequest } from 'fastify';
import type { Requester } from './shares.service';

/** The caller's address (as TRUST_PROXY reads it) and the request id, for the access log. */
export function requesterOf(request: FastifyRequest): Requester {
  return { ip: request.ip ?? null, requestId: String(request.id ?? '') || null };
}
