import fastifyCors from '@fastify/cors';
import helmet, { HelmetOptions } from 'helmet';
import type { NestFastifyApplication } from '@nestjs/platform-fastify';
import type { FastifyInstance, FastifyReply, FastifyRequest, RouteOptions } from 'fastify';
import { STATUS_CODES } from 'http';
import type { Socket } from 'net';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfig } from '../../config/environment';
import { defaultBodyFor } from '../errors/all-exceptions.filter';
import { RejectNulBytesPipe } from './reject-nul-bytes.pipe';

/** Node's own default, stated so that a change of default cannot silently raise it (431 past it). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Deeper JSON is refused (400) before validation, whose recursion would overflow the stack. */
export const MAX_BODY_DEPTH = 64;
/** Time allowed to receive a whole request: a client trickling bytes cannot hold a socket forever. */
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Errors Node's HTTP parser raises before Fastify sees a request (oversized headers, a request that
 * took too long, garbage on the socket), answered in the API's own error shape.
 */
export function clientErrorHandler(error: NodeJS.ErrnoException, socket: Socket): void {
  if (error.code === 'ECONNRESET' || socket.destroyed) return;
  const [status, message] =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? [431, 'Request header fields too large.']
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? [408, 'Request timeout.']
        : [400, 'Bad request.'];
  const body = JSON.stringify({ message });
  if (socket.writable) {
    socket.write(
      `HTTP/1.1 ${status} ${STATUS_CODES[status]}\r\nConnection: close\r\n` +
        `Content-Type: application/json; charset=utf-8\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`,
    );
  }
  socket.destroy(error);
}

/**
 * Errors Fastify's router raises before any route or hook runs: a path that cannot be decoded, or a
 * path parameter longer than any id. Neither can name a record: 404, as for any path id that is
 * not a uuid.
 */
export function frameworkErrors(error: { code?: string }, _request: FastifyRequest, reply: FastifyReply): void {
  const status = NO_SUCH_PATH_CODES.has(String(error?.code)) ? 404 : 400;
  void reply.code(status).header('content-type', 'application/json; charset=utf-8').send(defaultBodyFor(status));
}

/** Depth of a parsed JSON value, without recursion (the value may be thousands of levels deep). */
export function jsonDepth(value: unknown, limit = Infinity): number {
  let deepest = 0;
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length > 0) {
    const [current, depth] = stack.pop()!;
    if (current === null || typeof current !== 'object') continue;
    if (depth > deepest) deepest = depth;
    if (deepest > limit) return deepest;
    for (const child of Array.isArray(current) ? current : Object.values(current)) {
      if (child !== null && typeof child === 'object') stack.push([child, depth + 1]);
    }
  }
  return deepest;
}

async function refuseDeepBodies(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const body = request.body;
  if (body === null || typeof body !== 'object') return;
  if (jsonDepth(body, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
    await reply
      .code(400)
      .header('content-type', 'application/json; charset=utf-8')
      .send({ message: `Request body is nested more than ${MAX_BODY_DEPTH} levels deep.` });
  }
}

/** A JSON API never needs to load anything: deny everything, and refuse to be framed. */
const API_CSP = {
  useDefaults: false,
  directives: {
    defaultSrc: ["'none'"],
    baseUri: ["'none'"],
    formAction: ["'none'"],
    frameAncestors: ["'none'"],
  },
};

/**
 * Swagger UI (/api/docs) loads its scripts and stylesheet from itself, has one inline <style>,
 * data: images in its CSS, and calls the API for "Try it out".
 */
const DOCS_CSP = {
  useDefaults: false,
  directives: {
    defaultSrc: ["'self'"],
    scriptSrc: ["'self'"],
    styleSrc: ["'self'", "'unsafe-inline'"],
    imgSrc: ["'self'", 'data:'],
    connectSrc: ["'self'"],
    fontSrc: ["'self'", 'data:'],
    objectSrc: ["'none'"],
    baseUri: ["'self'"],
    formAction: ["'self'"],
    frameAncestors: ["'none'"],
  },
};

const FASTIFY_ERROR_KEYS = new Set(['statusCode', 'code', 'error', 'message']);
const MALFORMED_BODY_CODES = new Set(['FST_ERR_CTP_INVALID_JSON_BODY', 'FST_ERR_CTP_EMPTY_JSON_BODY']);
const NO_SUCH_PATH_CODES = new Set(['FST_ERR_BAD_URL', 'FST_ERR_MAX_PARAM_LENGTH']);

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

const isDocsRoute = (url: string) => url === '/api/docs' || url.startsWith('/api/docs/');

/** `CORS_ORIGINS` as a list; empty means same-origin only (no CORS headers at all). */
export function parseCorsOrigins(value: string | undefined): string[] {
  return (value ?? '')
    .split(',')
    .map((origin) => origin.trim().replace(/\/+$/, ''))
    .filter(Boolean);
}

/** A route's own helmet settings (`config.helmet`), merged over the global ones; or skip it. */
type RouteHelmetConfig = Partial<HelmetOptions> & { skipRoute?: boolean };

type HelmetMiddleware = ReturnType<typeof helmet>;

/**
 * Helmet's headers on every answer, with a route's own settings (`config.helmet`, as
 * @fastify/helmet reads them) merged over the global ones. Each distinct setting builds its helmet
 * middleware once: @fastify/helmet builds it again on every request (parsing the CSP each time),
 * a tenth of the memory an ordinary API request allocated.
 */
function registerSecurityHeaders(fastify: FastifyInstance, global: HelmetOptions): void {
  const globalHelmet = helmet(global);
  const routeHelmets = new WeakMap<RouteHelmetConfig, HelmetMiddleware>();
  const buildFor = (route: RouteHelmetConfig): HelmetMiddleware => {
    const { skipRoute: _skip, ...own } = route;
    const middleware = helmet({ ...global, ...own } as HelmetOptions);
    routeHelmets.set(route, middleware);
    return middleware;
  };
  fastify.addHook('onRequest', (request, reply, done) => {
    const route = (request.routeOptions.config as { helmet?: RouteHelmetConfig } | undefined)?.helmet;
    if (route?.skipRoute) return done();
    const middleware = route ? (routeHelmets.get(route) ?? buildFor(route)) : globalHelmet;
    middleware(request.raw, reply.raw, done as (error?: unknown) => void);
  });
}

/**
 * Security headers on every answer (errors and 404s included) and the CORS policy of the
 * configuration. Must run before routes are declared: the docs' CSP is attached per route.
 */
export async function registerSecurity(app: NestFastifyApplication): Promise<void> {
  const config = app.get<AppConfig>(APP_CONFIG);
  const fastify = app.getHttpAdapter().getInstance() as unknown as FastifyInstance;

  fastify.addHook('onSend', normalizeFastifyErrorBody);
  fastify.addHook('preValidation', refuseDeepBodies);
  app.useGlobalPipes(new RejectNulBytesPipe());
  fastify.addHook('onRoute', (route: RouteOptions) => {
    const urls = Array.isArray(route.url) ? route.url : [route.url];
    if (urls.some(isDocsRoute)) {
      route.config = { ...(route.config ?? {}), helmet: { contentSecurityPolicy: DOCS_CSP } } as never;
    }
  });
  registerSecurityHeaders(fastify, {
    contentSecurityPolicy: API_CSP,
    // Thumbnails may be shown by a front end on a sibling host of the same site.
    crossOriginResourcePolicy: { policy: 'same-site' },
    referrerPolicy: { policy: 'no-referrer' },
    // HSTS only means something over HTTPS, which is when cookies are marked Secure.
    strictTransportSecurity: config.COOKIE_SECURE ? { maxAge: 31_536_000, includeSubDomains: true } : false,
  });

  const origins = parseCorsOrigins(config.CORS_ORIGINS);
  if (origins.length > 0) {
    await app.register(fastifyCors as never, {
      origin: origins,
      credentials: true,
      methods: ['GET', 'HEAD', 'POST', 'PATCH', 'DELETE'],
      allowedHeaders: ['Authorization', 'Content-Type', 'X-Request-Id'],
      exposedHeaders: ['Retry-After', 'X-Request-Id', 'Content-Disposition'],
      maxAge: 600,
    } as never);
  }
}
