import { AsyncResource } from 'async_hooks';

/**
 * `AsyncResource#bind` as later Node.js versions have it (DEP0172 at end of life,
 * nodejs/node#58618): the bound function without the deprecated `asyncResource` accessor. Set at
 * the top of the entry points, like ./v8-flags; a no-op on a Node.js that no longer adds it.
 *
 * Node.js 20 gives every bound function that accessor, with a getter and a setter made for it
 * (nodejs/node#58218). V8 keeps an accessor made for one object reachable from the old generation
 * until the next full collection, so a young collection keeps everything the bound function
 * reaches, and the next one promotes it. Fastify binds each request's body parsing this way and
 * Nest each interceptor call: a request's whole graph (request, reply, headers, rows) went to the
 * old generation and died there. Measured on the bench API (1,000,000-study seed), old / new:
 * promoted per request at one connection (`--trace-gc-nvp`), a share open 16.6 / 8.0 KB, a
 * studies search 19.6 / 4.4 KB; at 32 connections, both builds side by side in alternating 5 s
 * slices (six each), API CPU per request: studies list 0.82 / 0.61 ms (1,150 / 1,399 requests/s),
 * share open 0.69 / 0.55 ms (1,173 / 1,336), studies search 1.19 / 0.96 ms (two runs).
 */
function bind(this: AsyncResource, fn: (...args: unknown[]) => unknown, thisArg?: unknown): (...args: unknown[]) => unknown {
  if (typeof fn !== 'function') {
    throw Object.assign(new TypeError(`The "fn" argument must be of type function. Received ${typeof fn}`), {
      code: 'ERR_INVALID_ARG_TYPE',
    });
  }
  const resource = this;
  const bound =
    thisArg === undefined
      ? function (this: unknown, ...args: unknown[]) {
          return resource.runInAsyncScope(fn, this, ...args);
        }
      : resource.runInAsyncScope.bind(resource, fn, thisArg);
  Object.defineProperty(bound, 'length', { configurable: true, enumerable: false, value: fn.length, writable: false });
  return bound;
}

const probe = new AsyncResource('async-resource-bind-probe').bind(() => undefined);
if (Object.getOwnPropertyDescriptor(probe, 'asyncResource')) {
  // The static AsyncResource.bind(fn, type, thisArg) makes a resource and calls this method.
  AsyncResource.prototype.bind = bind as unknown as AsyncResource['bind'];
}
