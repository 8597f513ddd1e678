import { FastifyAdapter } from '@nestjs/platform-fastify';
import type { FastifyHttpOptions } from 'fastify';
import * as http from 'http';

export type RawRouteHandler = (request: http.IncomingMessage, response: http.ServerResponse) => void;

type FastifyHandler = (request: http.IncomingMessage, response: http.ServerResponse) => void;

/** The subset of Fastify's normalised options that shape its HTTP/1 server. */
interface ServerOptions {
  http?: http.ServerOptions | null;
  keepAliveTimeout?: number;
  requestTimeout?: number;
  connectionTimeout?: number;
  maxRequestsPerSocket?: number;
}

/**
 * Routes answered on Node's own `request` event, before Fastify and Nest build their request
 * objects and run the application's hooks (request id, security headers, CORS, cookies, metrics,
 * logging): about half of the CPU of a request that does almost nothing. Reserved for a hot internal
 * endpoint whose whole contract is a few headers in and a status out: nginx's auth subrequest, sent
 * before every DICOMweb request of the viewer. Every other request, and any method not registered
 * here, goes to Fastify unchanged.
 *
 * Installed through Fastify's documented `serverFactory`, which builds the HTTP/1 server exactly as
 * Fastify itself would from the same options.
 */
export class RawRoutes {
  private readonly routes = new Map<string, RawRouteHandler>();

  /** @param beforeFastify runs on every request Fastify answers, before it (raw routes have no body). */
  constructor(private readonly beforeFastify?: RawRouteHandler) {}

  /** `path` without query string; a GET route answers HEAD too, without a body (as Fastify does). */
  register(method: 'GET', path: string, handler: RawRouteHandler): void {
    this.routes.set(`${method} ${path}`, handler);
    this.routes.set(`HEAD ${path}`, handler);
  }

  readonly serverFactory = (fastifyHandler: FastifyHandler, options: ServerOptions): http.Server => {
    const server = http.createServer(options.http ?? {}, (request, response) => {
      const url = request.url ?? '';
      const queryAt = url.indexOf('?');
      const handler = this.routes.size
        ? this.routes.get(`${request.method} ${queryAt === -1 ? url : url.slice(0, queryAt)}`)
        : undefined;
      if (handler) handler(request, response);
      else {
        this.beforeFastify?.(request, response);
        fastifyHandler(request, response);
      }
    });
    if (options.keepAliveTimeout !== undefined) server.keepAliveTimeout = options.keepAliveTimeout;
    if (options.requestTimeout !== undefined) server.requestTimeout = options.requestTimeout;
    server.setTimeout(options.connectionTimeout ?? 0);
    if (options.maxRequestsPerSocket && options.maxRequestsPerSocket > 0) {
      server.maxRequestsPerSocket = options.maxRequestsPerSocket;
    }
    return server;
  };
}

/** Nest's Fastify adapter, with a table of raw routes that modules fill at start (see RawRoutes). */
export class FastifyAdapterWithRawRoutes extends FastifyAdapter {
  constructor(
    options: FastifyHttpOptions<http.Server>,
    readonly rawRoutes: RawRoutes,
  ) {
    super({ ...options, serverFactory: rawRoutes.serverFactory as never });
  }
}
