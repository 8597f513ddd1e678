import type { Verdict } from './viewer.service';

/**
 * How a verdict of GET /api/viewer/token/validate goes out, for both of its routes (the raw route on
 * a socket, ViewerController in process): status, body and headers are decided here only.
 */
export interface VerdictResponse {
  status: number;
  /**
   * The headers, with the request id every answer of the API carries: a new object each time, as
   * Node's writeHead reads it key by key (a spread copy of one shared object cost 3 µs a request,
   * a sixth of the whole validation).
   */
  headers: (requestId: string) => Record<string, string | number>;
  /** The JSON body, or '' for 200 (then no Content-Type either). */
  body: string;
}

const responses = new WeakMap<Verdict, VerdictResponse>();

export function verdictResponse(verdict: Verdict): VerdictResponse {
  let response = responses.get(verdict);
  if (response === undefined) {
    const body = 'body' in verdict ? JSON.stringify(verdict.body) : '';
    const length = Buffer.byteLength(body);
    // The verdict is for this request only: nginx must not keep it, nor anything between.
    const headers =
      body === ''
        ? (requestId: string) => ({ 'cache-control': 'no-store', 'content-length': 0, 'x-request-id': requestId })
        : (requestId: string) => ({
            'cache-control': 'no-store',
            'content-type': 'application/json; charset=utf-8',
            'content-length': length,
            'x-request-id': requestId,
          });
    response = { status: verdict.status, headers, body };
    responses.set(verdict, response);
  }
  return response;
}
