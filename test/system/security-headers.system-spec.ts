/**
 * The proxy's own defences and the image server's gate, against the shipped nginx.conf and the real
 * Orthanc with the shipped orthanc.json and webhook.lua (docs/dicom-door.md):
 * - the pages nginx serves (sign-in, a share link's, OHIF) carry a Content-Security-Policy, frame protection,
 *   nosniff and no referrer; OHIF's inline scripts are the ones the policy names by hash;
 * - X-HTTP-Method-Override and X-Forwarded-Host never reach Orthanc or the API;
 * - nginx's Orthanc account reads DICOMweb and can do nothing else; Orthanc describes no error.
 */
import { createHash } from 'crypto';
import { readFileSync } from 'fs';
import * as http from 'http';
import { AddressInfo } from 'net';
import * as path from 'path';
import { NginxInstance, startNginx, VIEWER_ROOT } from '../../scripts/stack/nginx';
import { basicAuth, OrthancInstance, startOrthanc } from '../../scripts/stack/orthanc';

jest.setTimeout(60_000);

interface Seen {
  method: string;
  url: string;
  headers: http.IncomingHttpHeaders;
}

/** Stands in for the API and for Orthanc behind nginx: answers 200 to everything and records it. */
async function startRecorder(): Promise<{ server: http.Server; port: number; seen: Seen[] }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers });
    req.resume();
    req.on('end', () => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{}');
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return { server, port: (server.address() as AddressInfo).port, seen };
}

const sha256 = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

describe('the proxy: page headers, and what never reaches the upstreams', () => {
  let recorder: Awaited<ReturnType<typeof startRecorder>>;
  let nginx: NginxInstance;

  beforeAll(async () => {
    recorder = await startRecorder();
    nginx = await startNginx({
      apiPort: recorder.port,
      orthancPort: recorder.port,
      orthancUser: 'viewer',
      orthancPassword: 'viewer-password',
    });
  });
  afterAll(async () => {
    await nginx?.stop();
    await new Promise((resolve) => recorder?.server.close(resolve));
  });

  const headersOf = async (uri: string) => {
    const res = await fetch(`${nginx.url}${uri}`, { redirect: 'manual' });
    await res.arrayBuffer();
    return { status: res.status, headers: res.headers };
  };

  it('serves the sign-in page under a policy that allows its own files only, never framed', async () => {
    const { status, headers } = await headersOf('/login');
    expect(status).toBe(200);
    expect(headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'",
    );
    expect(headers.get('x-frame-options')).toBe('DENY');
    expect(headers.get('x-content-type-options')).toBe('nosniff');
    expect(headers.get('referrer-policy')).toBe('no-referrer');
  });

  it("serves a share link's page under a policy that allows its own files and the report's blob only, never framed", async () => {
    const { status, headers } = await headersOf('/s/some-token');
    expect(status).toBe(200);
    expect(headers.get('content-security-policy')).toBe(
      "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self' blob:; form-action 'none'; base-uri 'none'; frame-ancestors 'none'",
    );
    expect(headers.get('x-frame-options')).toBe('DENY');
    expect(headers.get('referrer-policy')).toBe('no-referrer');
    expect(headers.get('cache-control')).toBe('no-store');
  });

  it("serves OHIF's pages under its policy, which names exactly the installed viewer's inline scripts", async () => {
    const html = readFileSync(path.join(VIEWER_ROOT, 'index.html'), 'utf8');
    const inline = [...html.matchAll(/<script>([\s\S]*?)<\/script>/g)].map((m) => sha256(m[1]));
    expect(inline.length).toBeGreaterThan(0);
    // "/" asks the API (here the recorder: 200) whether a user is signed in.
    for (const uri of ['/', '/viewer', '/viewer/some/route']) {
      const { status, headers } = await headersOf(uri);
      expect({ uri, status }).toEqual({ uri, status: 200 });
      const csp = headers.get('content-security-policy') ?? '';
      const scriptSrc = /script-src ([^;]+)/.exec(csp)?.[1].split(' ') ?? [];
      expect(scriptSrc.filter((source) => source.startsWith("'sha256-")).sort()).toEqual([...inline].sort());
      expect(scriptSrc).not.toContain("'unsafe-inline'");
      expect(scriptSrc).not.toContain("'unsafe-eval'");
      // Exactly this policy: plugins and frames only from the page's own origin and its blob: URLs,
      // for OHIF's PDF viewport (the filed report, shown by the browser's PDF viewer from a blob:).
      expect(csp).toBe(
        `default-src 'self'; script-src 'self' ${inline.join(' ')}; worker-src 'self'; style-src 'self' 'unsafe-inline'; ` +
          "img-src 'self' data: blob:; font-src 'self' data:; connect-src 'self'; media-src 'self' blob:; manifest-src 'self'; " +
          "object-src 'self' blob:; frame-src 'self' blob:; base-uri 'self'; form-action 'self'; frame-ancestors 'none'",
      );
      expect(headers.get('x-frame-options')).toBe('DENY');
      expect(headers.get('x-content-type-options')).toBe('nosniff');
      expect(headers.get('referrer-policy')).toBe('no-referrer');
    }
  });

  it('never forwards X-HTTP-Method-Override or X-Forwarded-Host, to Orthanc, to the API, or in its subrequests', async () => {
    recorder.seen.length = 0;
    const tricks = { 'X-HTTP-Method-Override': 'DELETE', 'X-Forwarded-Host': 'evil.example', 'X-Viewer-Token': 'x' };
    for (const uri of ['/dicom-web/studies/1.2.3/series', '/dicom-web/studies', '/api/studies', '/queues', '/']) {
      const res = await fetch(`${nginx.url}${uri}`, { headers: tricks, redirect: 'manual' });
      expect({ uri, status: res.status }).toEqual({ uri, status: 200 });
    }
    // Each request reached the recorder, with its subrequest (validation, session); none with those headers.
    expect(recorder.seen.length).toBe(7);
    expect(recorder.seen.some((r) => r.url.startsWith('/dicom-web/studies/1.2.3/series'))).toBe(true);
    expect(recorder.seen.some((r) => r.url.startsWith('/api/viewer/token/validate'))).toBe(true);
    for (const request of recorder.seen) {
      expect(request.headers['x-http-method-override']).toBeUndefined();
      expect(request.headers['x-forwarded-host']).toBeUndefined();
    }
  });

  it('refuses a write disguised as a read: a POST to DICOMweb never reaches Orthanc, whatever it claims to be', async () => {
    recorder.seen.length = 0;
    for (const override of ['GET', 'DELETE']) {
      const res = await fetch(`${nginx.url}/dicom-web/studies/1.2.3`, {
        method: 'POST',
        headers: { 'X-HTTP-Method-Override': override, 'X-Viewer-Token': 'x', 'Content-Type': 'application/dicom' },
        body: 'x',
      });
      expect(res.status).toBe(403);
    }
    expect(recorder.seen.filter((r) => r.url.startsWith('/dicom-web/'))).toEqual([]);
  });
});

describe("the image server's gate: only the service's account writes; nginx's reads DICOMweb", () => {
  let orthanc: OrthancInstance;

  beforeAll(async () => {
    orthanc = await startOrthanc();
  });
  afterAll(async () => {
    await orthanc?.destroy();
  });

  const call = (uri: string, who: 'service' | 'viewer', init: RequestInit = {}) =>
    fetch(`${orthanc.url}${uri}`, {
      ...init,
      headers: {
        Authorization:
          who === 'service'
            ? basicAuth(orthanc.username, orthanc.password)
            : basicAuth(orthanc.viewerUsername, orthanc.viewerPassword),
        ...(init.headers ?? {}),
      },
    });

  it("lets nginx's account GET DICOMweb and nothing else (403), whatever method it claims", async () => {
    expect((await call('/dicom-web/studies', 'viewer')).status).toBe(200);
    const refused: Array<[string, RequestInit]> = [
      ['/studies', {}],
      ['/system', {}],
      ['/tools/lookup', { method: 'POST', body: '1.2.3' }],
      ['/instances', { method: 'POST', body: 'not dicom' }],
      ['/dicom-web/studies', { method: 'POST', body: 'x', headers: { 'Content-Type': 'application/dicom' } }],
      ['/tools/create-dicom', { method: 'POST', body: '{}' }],
      ['/studies/x', { method: 'DELETE' }],
      ['/studies/x', { method: 'POST', headers: { 'X-HTTP-Method-Override': 'DELETE' } }],
      ['/studies/x', { method: 'POST', headers: { 'X-HTTP-Method-Override': 'PUT' } }],
    ];
    for (const [uri, init] of refused) {
      const res = await call(uri, 'viewer', init);
      expect({ uri, method: init.method ?? 'GET', status: res.status }).toEqual({
        uri,
        method: init.method ?? 'GET',
        status: 403,
      });
    }
    // Orthanc takes only PUT and DELETE as overrides: a POST passed off as a GET is a 400.
    expect(
      (await call('/instances', 'viewer', { method: 'POST', body: 'x', headers: { 'X-HTTP-Method-Override': 'GET' } })).status,
    ).toBe(400);
    // The service's account does all of it.
    expect((await call('/studies', 'service')).status).toBe(200);
    expect((await call('/tools/lookup', 'service', { method: 'POST', body: '1.2.3' })).status).toBe(200);
  });

  it('refuses the viewer account everything while its password is empty', async () => {
    const open = await startOrthanc({ viewerPassword: '' });
    try {
      expect(
        (await fetch(`${open.url}/dicom-web/studies`, { headers: { Authorization: basicAuth('viewer', '') } })).status,
      ).toBe(403);
    } finally {
      await open.destroy();
    }
  });

  it('describes no error: an unknown resource is a bare 404', async () => {
    const res = await call('/studies/0000', 'service');
    expect(res.status).toBe(404);
    expect(await res.text()).toBe('');
  });
});
