import proxyAddr from '@fastify/proxy-addr';
import type { IncomingMessage } from 'http';

type TrustProxy = false | number | string[];

/**
 * The client's address of a raw request, by the same rule Fastify applies to `request.ip` with the
 * app's TRUST_PROXY (for routes answered before Fastify sees the request): the connection's address,
 * or with a trusted proxy the last address its X-Forwarded-For names that is not itself trusted.
 */
export function clientAddressOf(trustProxy: TrustProxy): (request: IncomingMessage) => string | undefined {
  if (trustProxy === false) return (request) => request.socket?.remoteAddress;
  const trust =
    typeof trustProxy === 'number' ? (_address: string, hop: number) => hop < trustProxy : proxyAddr.compile(trustProxy);
  return (request) => {
    const addresses = proxyAddr.all(request, trust);
    return addresses[addresses.length - 1];
  };
}
