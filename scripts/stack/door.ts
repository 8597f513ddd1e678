/**
 * The study's door without an archive, for tests and benchmarks that run the image server without
 * the API: a small HTTP server answering webhook.lua's question with the service's own decision
 * (src/ingestion/door/door-decision.ts) over an empty archive (no clinic holds any study, no device
 * is registered): the rules that need no database (replacing another sender's instance, another
 * Patient ID, a study held by another unregistered sender) still refuse.
 */
import * as http from 'http';
import { AddressInfo } from 'net';
import { decideDoor } from '../../src/ingestion/door/door-decision';
import { parseDoorRequest } from '../../src/ingestion/door/door-request';

export interface ArchivelessDoor {
  /** Give it to Orthanc as PACS_DOOR_URL. */
  url: string;
  /** Questions asked so far. */
  readonly asked: number;
  close(): Promise<void>;
}

export async function startArchivelessDoor(): Promise<ArchivelessDoor> {
  let asked = 0;
  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      asked++;
      let request = null;
      try {
        request = parseDoorRequest(JSON.parse(Buffer.concat(chunks).toString()));
      } catch {
        request = null;
      }
      const decision = request ? decideDoor(request, { clinicsOfStudy: [], clinicOfDevice: () => null }) : null;
      res.writeHead(decision ? 200 : 400, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify(decision ?? { error: 'Invalid door request' }));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  // Never what keeps a process alive.
  server.unref();
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/api/imgsrv/door`,
    get asked() {
      return asked;
    },
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
