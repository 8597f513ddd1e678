import type { FastifyRequest } from 'fastify';

/** Where a request came from, for the access log. */
export interface Requester {
  ip: string | null;
  requestId: string | null;
}

/** The caller's address (as TRUST_PROXY reads it) and the request id. */
export function requesterOf(request: FastifyRequest): Requester {
  return { ip: request.ip ?? null, requestId: String(request.id ?? '') || null };
}
