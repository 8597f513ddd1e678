import type { FastifyInstance, RouteOptions } from 'fastify';
import helmet, { HelmetOptions } from 'helmet';

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
 * A page served by this API from its own files: Swagger UI (/api/docs) and the queue board
 * (/queues). Each loads its scripts and stylesheet from itself, has inline styles (and the board a
 * JSON <script> block: data, not executed), data: images and fonts in its CSS, and calls the API.
 * Set per route (`config.helmet`) in place of the API's deny-all policy.
 */
export const OWN_PAGE_CSP = {
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

const isDocsRoute = (url: string) => url === '/api/docs' || url.startsWith('/api/docs/');

/** A route's own helmet settings (`config.helmet`), merged over the global ones; or skip it. */
type RouteHelmetConfig = Partial<HelmetOptions> & { skipRoute?: boolean };

type HelmetMiddleware = ReturnType<typeof helmet>;

/**
 * Helmet's headers on every answer, with a route's own settings (`config.helmet`, as
 * @fastify/helmet reads them) merged over the global ones. Each distinct setting builds its helmet
 * middleware once: @fastify/helmet builds it again on every request (parsing the CSP each time),
 * a tenth of the memory an ordinary API request allocated.
 */
function registerHelmet(fastify: FastifyInstance, global: HelmetOptions): void {
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
 * Security headers on every answer (errors and 404s included). Must run before routes are
 * declared: the docs' CSP is attached per route.
 */
export function registerSecurityHeaders(fastify: FastifyInstance, options: { https: boolean }): void {
  fastify.addHook('onRoute', (route: RouteOptions) => {
    const urls = Array.isArray(route.url) ? route.url : [route.url];
    if (urls.some(isDocsRoute)) {
      route.config = { ...(route.config ?? {}), helmet: { contentSecurityPolicy: OWN_PAGE_CSP } } as never;
    }
  });
  registerHelmet(fastify, {
    contentSecurityPolicy: API_CSP,
    // Thumbnails may be shown by a front end on a sibling host of the same site.
    crossOriginResourcePolicy: { policy: 'same-site' },
    referrerPolicy: { policy: 'no-referrer' },
    // HSTS only means something over HTTPS, which is when cookies are marked Secure.
    strictTransportSecurity: options.https ? { maxAge: 31_536_000, includeSubDomains: true } : false,
  });
}
