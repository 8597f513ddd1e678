/** What a multipart body's reader is told, part by part; each call is awaited (back-pressure). */
export interface PartSink {
  start(headers: Record<string, string>): Promise<void>;
  data(chunk: Buffer): Promise<void>;
  end(): Promise<void>;
}

export class MultipartError extends Error {}

const MAX_PART_HEADER_BYTES = 16 * 1024;
const CRLF = Buffer.from('\r\n');
const HEADERS_END = Buffer.from('\r\n\r\n');

/** The boundary of a `multipart/related` Content-Type, or null. */
export function multipartBoundary(contentType: string | undefined): string | null {
  if (!contentType || !/^multipart\/related\s*(;|$)/i.test(contentType)) return null;
  const match = /;\s*boundary=(?:"([^"]{1,70})"|([^\s;"]{1,70}))/i.exec(contentType);
  return match ? (match[1] ?? match[2]) : null;
}

function parseHeaders(text: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of text.split('\r\n')) {
    const colon = line.indexOf(':');
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return headers;
}

/**
 * Reads a multipart body (RFC 2046) as it arrives, handing each part's headers and bytes to `sink`
 * without holding more than one chunk and a boundary's length of it. Rejects with MultipartError on
 * a body that is not multipart with this boundary or that ends before its closing delimiter.
 */
export async function readMultipart(body: AsyncIterable<Buffer>, boundary: string, sink: PartSink): Promise<number> {
  const delimiter = Buffer.from(`\r\n--${boundary}`);
  // The first delimiter may open the body without a CRLF before it.
  let buffer: Buffer = CRLF;
  let state = 'preamble' as 'preamble' | 'after' | 'headers' | 'body' | 'done';
  const finished = () => state === 'done';
  let parts = 0;
  for await (const chunk of body) {
    if (finished()) continue;
    buffer = buffer.length ? Buffer.concat([buffer, chunk]) : chunk;
    for (let progressed = true; progressed && !finished();) {
      progressed = false;
      if (state === 'preamble' || state === 'body') {
        const at = buffer.indexOf(delimiter);
        if (at === -1) {
          const keep = delimiter.length - 1;
          if (buffer.length > keep) {
            if (state === 'body') await sink.data(buffer.subarray(0, buffer.length - keep));
            buffer = buffer.subarray(buffer.length - keep);
          }
          continue;
        }
        if (state === 'body') {
          if (at > 0) await sink.data(buffer.subarray(0, at));
          await sink.end();
        }
        buffer = buffer.subarray(at + delimiter.length);
        state = 'after';
        progressed = true;
      } else if (state === 'after') {
        if (buffer.length < 2) continue;
        if (buffer[0] === 0x2d && buffer[1] === 0x2d) {
          state = 'done';
          break;
        }
        // Transport padding (spaces, tabs) may follow a delimiter before its CRLF.
        const eol = buffer.indexOf(CRLF);
        if (eol === -1) {
          if (buffer.length > 1024) throw new MultipartError('malformed delimiter line');
          continue;
        }
        if (buffer.subarray(0, eol).toString('latin1').trim() !== '') throw new MultipartError('malformed delimiter line');
        buffer = buffer.subarray(eol + 2);
        state = 'headers';
        progressed = true;
      } else if (state === 'headers') {
        // A part without headers starts with its blank line at once.
        const empty = buffer.length >= 2 && buffer[0] === 0x0d && buffer[1] === 0x0a;
        const end = empty ? -2 : buffer.indexOf(HEADERS_END);
        // Whether or not their end came in the same chunk: the limit is the headers' size.
        if (end > MAX_PART_HEADER_BYTES || (end === -1 && buffer.length > MAX_PART_HEADER_BYTES)) {
          throw new MultipartError('part headers too large');
        }
        if (end === -1) continue;
        await sink.start(empty ? {} : parseHeaders(buffer.subarray(0, end).toString('latin1')));
        parts++;
        buffer = buffer.subarray(end + 4);
        state = 'body';
        progressed = true;
      }
    }
  }
  if (state !== 'done') throw new MultipartError('the body ended before its closing delimiter');
  return parts;
}
