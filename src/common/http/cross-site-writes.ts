import type { FastifyInstance, FastifyRequest } from 'fastify';
import { Errors } from '../errors/api-errors';

const WRITES = new Set(['POST', 'PUT', 'PATCH', 'DELETE']);

/** `scheme://host[:port]` of an Origin or Referer value, or null when it names no origin ("null"). */
function originOf(value: string): string | null {
  try {
    const url = new URL(value);
    return url.protocol === 'http:' || url.protocol === 'https:' ? `${url.protocol}//${url.host}` : null;
  } catch {
    return null;
  }
}

/** The origin the browser says the request comes from: Origin, else the Referer's; undefined when neither is sent. */
function claimedOrigin(request: FastifyRequest): string | null | undefined {
  const origin = request.headers.origin;
  if (typeof origin === 'string' && origin !== '') return originOf(origin);
  const referer = request.headers.referer;
  if (typeof referer === 'string' && referer !== '') return originOf(referer);
  return undefined;
}

/**
 * Whether `origin` is the API's own: its host is the one the request was sent to (the Host header,
 * or X-Forwarded-Host when TRUST_PROXY trusts the proxy). A proxy that forwards `Host: $host`
 * drops the port: then the host name alone must match.
 */
export function isOwnOrigin(origin: string, request: FastifyRequest): boolean {
  const own = request.host;
  if (!own) return false;
  const { host, hostname } = new URL(origin);
  return host === own.toLowerCase() || (!/:\d+$/.test(own) && hostname === own.toLowerCase().replace(/^\[|\]$/g, ''));
}

/**
 * A write (POST, PUT, PATCH, DELETE) that carries the session cookie and no bearer header would be
 * authenticated by the cookie, which a browser sends whatever page made the request: it is refused
 * (403) unless the browser says it comes from the API's own origin or one of CORS_ORIGINS. A
 * request that names no origin at all (no Origin, no Referer) is not from a browser page, which
 * always sends Origin on such requests, and is let through. Bearer-authenticated requests cannot be
 * forged by another page and are not checked.
 */
export function registerCrossSiteWriteCheck(
  fastify: FastifyInstance,
  options: { cookie: string; allowedOrigins: string[] },
): void {
  const allowed = new Set(options.allowedOrigins.map((origin) => origin.toLowerCase()));
  const sessionCookie = new RegExp(`(?:^|;)\\s*${options.cookie}=`);
  fastify.addHook('onRequest', async (request, reply) => {
    if (!WRITES.has(request.method)) return;
    const cookies = request.headers.cookie;
    if (typeof cookies !== 'string' || !sessionCookie.test(cookies)) return;
    if (/^bearer\s/i.test(request.headers.authorization ?? '')) return;
    const origin = claimedOrigin(request);
    if (origin === undefined) return;
    if (origin !== null && (allowed.has(origin.toLowerCase()) || isOwnOrigin(origin, request))) return;
    const refused = Errors.crossSiteWrite();
    await reply.code(refused.getStatus()).send(refused.getResponse());
  });
}
