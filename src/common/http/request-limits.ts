import type { FastifyReply, FastifyRequest } from 'fastify';
import { IncomingMessage, ServerResponse, STATUS_CODES } from 'http';
import type { Socket } from 'net';
import { PassThrough, Readable } from 'stream';

/** JSON body limit (decisions.md: 10 MiB; 413 past it). */
export const BODY_LIMIT_BYTES = 10 * 1024 * 1024;
/** STOW-RS uploads (decisions.md 3d: 2 GiB), read as a stream by their handler, never whole. */
export const UPLOAD_BODY_LIMIT_BYTES = 2 * 1024 * 1024 * 1024;
/** Routes whose body reaches the handler as a stream (`METHOD /path`), with their limit. */
export const STREAMED_BODY_ROUTES = new Map([['POST /api/dicom-web/studies', UPLOAD_BODY_LIMIT_BYTES]]);

/** The streamed-body limit of the request's route, or undefined when its body is parsed. */
export function streamedBodyLimit(request: { method: string; url: string }): number | undefined {
  return STREAMED_BODY_ROUTES.get(`${request.method} ${request.url.split('?')[0]}`);
}
/**
 * An oversized body is read and thrown away up to this many bytes, so the client has sent it all
 * and can read the 413; past it the connection is closed (the client may then see a reset).
 */
export const OVERSIZED_BODY_DRAIN_BYTES = 64 * 1024 * 1024;
/** Node's own default, stated so that a change of default cannot silently raise it (431 past it). */
export const MAX_HEADER_BYTES = 16 * 1024;
/** Deeper JSON is refused (400) before validation, whose recursion would overflow the stack. */
export const MAX_BODY_DEPTH = 64;
/** Time allowed to receive a whole request: a client trickling bytes cannot hold a socket forever. */
export const REQUEST_TIMEOUT_MS = 60_000;

/**
 * Stands in for Node's own `requestTimeout`, which would bound every request, uploads included (2 GiB
 * from a clinic's uplink takes minutes), and is therefore off: a request whose body has not fully
 * arrived `timeoutMs` after it began is answered 408 and closed (a client trickling bytes cannot
 * hold a socket), while a streamed upload is closed only when it sends nothing for that long.
 */
export function limitReceiptTime(request: IncomingMessage, response: ServerResponse, timeoutMs = REQUEST_TIMEOUT_MS): void {
  if (streamedBodyLimit({ method: request.method ?? '', url: request.url ?? '' }) !== undefined) {
    request.setTimeout(timeoutMs, () => request.socket.destroy());
    // Once the body is in, the answer may take its time (the parts are still being stored).
    request.once('end', () => request.setTimeout(0));
    return;
  }
  const timer = setTimeout(() => {
    if (request.complete) return;
    if (response.headersSent) request.socket.destroy();
    else clientErrorHandler(Object.assign(new Error('Request timeout'), { code: 'ERR_HTTP_REQUEST_TIMEOUT' }), request.socket);
  }, timeoutMs);
  timer.unref();
  response.once('close', () => clearTimeout(timer));
}

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

export async function refuseDeepBodies(request: FastifyRequest, reply: FastifyReply): Promise<void> {
  const body = request.body;
  if (body === null || typeof body !== 'object' || body instanceof Readable) return;
  if (jsonDepth(body, MAX_BODY_DEPTH) > MAX_BODY_DEPTH) {
    await reply
      .code(400)
      .header('content-type', 'application/json; charset=utf-8')
      .send({ message: `Request body is nested more than ${MAX_BODY_DEPTH} levels deep.` });
  }
}

/** Fastify's own error for a body past the limit: answered 413 {message: 'Payload too large.'}. */
function payloadTooLarge(): Error {
  return Object.assign(new Error('Request body is too large'), { statusCode: 413, code: 'FST_ERR_CTP_BODY_TOO_LARGE' });
}

/** Reads and drops `stream` to its end; false when it went past `bound` bytes first. */
function discard(stream: Readable, bound: number): Promise<boolean> {
  return new Promise((resolve) => {
    let seen = 0;
    const finish = (whole: boolean) => {
      stream.off('data', onData).off('end', onEnd).off('error', onEnd).off('close', onEnd);
      if (!whole) stream.pause();
      resolve(whole);
    };
    const onData = (chunk: Buffer) => {
      seen += chunk.length;
      if (seen > bound) finish(false);
    };
    const onEnd = () => finish(true);
    stream.on('data', onData).on('end', onEnd).on('error', onEnd).on('close', onEnd);
    stream.resume();
  });
}

/**
 * The body as Fastify should read it, at most `limit` bytes: past that, the rest is read and
 * dropped (up to the drain bound) and the stream then fails with the 413.
 */
function limitedBody(payload: Readable, limit: number): Readable {
  const body = new PassThrough();
  let seen = 0;
  // Back-pressure: a streamed body (STOW-RS) is read as fast as its handler takes it, not buffered.
  body.on('drain', () => payload.resume());
  payload.on('data', (chunk: Buffer) => {
    seen += chunk.length;
    if (seen <= limit) {
      if (!body.write(chunk)) payload.pause();
    } else if (seen > OVERSIZED_BODY_DRAIN_BYTES) {
      payload.pause();
      body.destroy(payloadTooLarge());
    }
  });
  payload.on('end', () => (seen > limit ? body.destroy(payloadTooLarge()) : body.end()));
  payload.on('error', (error) => body.destroy(error));
  return body;
}

/**
 * A `preParsing` hook: a body larger than the limit gets a 413 the client can read. Fastify
 * answers as soon as it knows (from Content-Length, or a chunk past the limit) and closes the
 * connection while the client is still sending: the client sees a reset (EPIPE), never the answer.
 * Here the body is read and thrown away first, up to OVERSIZED_BODY_DRAIN_BYTES.
 */
export async function drainOversizedBodies(request: FastifyRequest, reply: FastifyReply, payload: Readable): Promise<Readable> {
  const streamedLimit = streamedBodyLimit(request);
  const limit = streamedLimit ?? request.routeOptions.bodyLimit ?? BODY_LIMIT_BYTES;
  const declared = Number(request.headers['content-length']);
  if (declared > limit && streamedLimit !== undefined) {
    // Gigabytes are not worth reading to throw away: the answer comes at once, then the connection closes.
    reply.header('connection', 'close');
    throw payloadTooLarge();
  }
  if (declared > limit) {
    if (!(await discard(payload, OVERSIZED_BODY_DRAIN_BYTES))) reply.header('connection', 'close');
    throw payloadTooLarge();
  }
  return Number.isFinite(declared) ? payload : limitedBody(payload, limit);
}
