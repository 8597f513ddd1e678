import type { Verdict } from './viewer.service';

/**
 * How a verdict of GET /api/viewer/token/validate goes out, for both of its routes (the raw route on
 * a socket, ViewerController in process): status, body and headers are decided here only. The
 * caller adds the request id, as every answer of the API carries it.
 */
export interface VerdictResponse {
  status: number;
  headers: Readonly<Record<string, string | number>>;
  /** The JSON body, or '' for 200 (then no Content-Type either). */
  body: string;
}

const responses = new WeakMap<Verdict, VerdictResponse>();

export function verdictResponse(verdict: Verdict): VerdictResponse {
  let response = responses.get(verdict);
  if (response === undefined) {
    const body = 'body' in verdict ? JSON.stringify(verdict.body) : '';
    const headers: Record<string, string | number> = {
      // The verdict is for this request only: nginx must not keep it, nor anything between.
      'cache-control': 'no-store',
      'content-length': Buffer.byteLength(body),
    };
    if (body !== '') headers['content-type'] = 'application/json; charset=utf-8';
    response = { status: verdict.status, headers, body };
    responses.set(verdict, response);
  }
  return response;
}
