import * as http from 'http';
import { AddressInfo, connect, Socket } from 'net';
import { limitReceiptTime } from './request-limits';

const TIMEOUT_MS = 300;

/** A server that reads every body whole and answers 200 `{bytes}`, behind limitReceiptTime. */
async function startServer(): Promise<{ port: number; close: () => Promise<void> }> {
  const server = http.createServer({ requestTimeout: 0 }, (request, response) => {
    limitReceiptTime(request, response, TIMEOUT_MS);
    let bytes = 0;
    request.on('data', (chunk: Buffer) => (bytes += chunk.length));
    request.on('end', () => response.end(JSON.stringify({ bytes })));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    port: (server.address() as AddressInfo).port,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/**
 * Sends `head`, then each chunk after `gapMs`; resolves with what came back when the server closed
 * the socket (the requests say `Connection: close`).
 */
function send(port: number, head: string, chunks: string[], gapMs: number): Promise<string> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let answer = '';
    socket.on('data', (data) => (answer += data.toString()));
    socket.on('close', () => resolve(answer));
    socket.on('error', () => undefined);
    socket.write(head);
    let next = 0;
    const timer = setInterval(() => {
      if (next >= chunks.length || socket.destroyed) {
        clearInterval(timer);
        return;
      }
      socket.write(chunks[next++]);
    }, gapMs);
  });
}

describe('limitReceiptTime', () => {
  let server: Awaited<ReturnType<typeof startServer>>;
  beforeAll(async () => (server = await startServer()));
  afterAll(() => server.close());

  const head = (path: string, length: number) =>
    `POST ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Type: application/octet-stream\r\nContent-Length: ${length}\r\n\r\n`;

  it('answers 408 to a request whose body has not arrived in time', async () => {
    const answer = await send(server.port, head('/api/studies', 10), ['12345'], 50);
    expect(answer).toMatch(/^HTTP\/1\.1 408 /);
    expect(answer).toContain('{"message":"Request timeout."}');
  });

  it('lets an upload take longer than the timeout while it keeps sending', async () => {
    const chunks = Array.from({ length: 8 }, () => 'x'.repeat(100));
    const answer = await send(server.port, head('/api/dicom-web/studies', 800), chunks, TIMEOUT_MS / 3);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
    expect(answer).toContain('{"bytes":800}');
  });

  it('closes an upload that sends nothing for the timeout', async () => {
    const started = Date.now();
    const answer = await send(server.port, head('/api/dicom-web/studies', 800), ['x'.repeat(100)], TIMEOUT_MS * 3);
    expect(answer).toBe('');
    expect(Date.now() - started).toBeLessThan(TIMEOUT_MS * 3);
  });

  it('leaves alone a request that arrived whole in time', async () => {
    const answer = await send(server.port, head('/api/studies', 5), ['12345'], 10);
    expect(answer).toMatch(/^HTTP\/1\.1 200 /);
  });
});
