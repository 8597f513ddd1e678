import { randomUUID } from 'crypto';
import type { IncomingMessage } from 'http';

/**
 * A caller's X-Request-Id is kept (to follow one request through nginx, the API and the logs) only
 * when it is short and of characters that cannot break a log line or a header: anything else
 * (newlines, quotes, a kilobyte of text) is replaced by a fresh uuid.
 */
export const SAFE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,64}$/;

/** The request's id: the caller's when it is safe, else a new uuid. */
export function requestIdOf(request: Pick<IncomingMessage, 'headers'>): string {
  const given = request.headers['x-request-id'];
  return typeof given === 'string' && SAFE_REQUEST_ID.test(given) ? given : randomUUID();
}
