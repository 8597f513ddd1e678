import * as http from 'http';
import { AddressInfo } from 'net';
import { loadConfig } from '../config/environment';
import { backoffDelay, ImgsrvClient, ImgsrvError } from './imgsrv.client';

/** A scripted stand-in for Orthanc: each path answers from its own list, then repeats the last answer. */
function fakeServer(script: Record<string, Array<{ status: number; body?: unknown; type?: string }>>) {
  const calls: Array<{ url: string; authorization?: string; accept?: string }> = [];
  const server = http.createServer((req, res) => {
    calls.push({ url: req.url ?? '', authorization: req.headers.authorization, accept: req.headers.accept });
    const path = (req.url ?? '').split('?')[0];
    const answers = script[path];
    if (!answers) {
      res.writeHead(404).end();
      return;
    }
    const answer = answers.length > 1 ? answers.shift()! : answers[0];
    const type = answer.type ?? 'application/json';
    res.writeHead(answer.status, { 'Content-Type': type });
    res.end(Buffer.isBuffer(answer.body) ? answer.body : JSON.stringify(answer.body ?? {}));
  });
  return new Promise<{ url: string; calls: typeof calls; close: () => Promise<void> }>((resolve) =>
    server.listen(0, '127.0.0.1', () =>
      resolve({
        url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
        calls,
        close: () => new Promise((done) => server.close(() => done())),
      }),
    ),
  );
}

function clientFor(url: string): ImgsrvClient {
  const client = new ImgsrvClient(
    loadConfig({
      IMGSRV_URL: url,
      IMGSRV_USERNAME: 'svc',
      IMGSRV_PASSWORD: 'pw',
      JWT_SECRET: 'j'.repeat(32),
      WEBHOOK_SECRET: 'w'.repeat(16),
    }),
  );
  client.retryPolicy = { retries: 3, baseDelayMs: 5, maxDelayMs: 20 };
  return client;
}

describe('ImgsrvClient', () => {
  it('retries 5xx answers with backoff and returns the first success, with basic auth on every call', async () => {
    const server = await fakeServer({
      '/studies/abc': [{ status: 503 }, { status: 502 }, { status: 200, body: { ID: 'abc', Series: [] } }],
    });
    try {
      const study = await clientFor(server.url).getStudy('abc');
      expect(study).toEqual({ ID: 'abc', Series: [] });
      expect(server.calls).toHaveLength(3);
      expect(new Set(server.calls.map((c) => c.authorization))).toEqual(
        new Set([`Basic ${Buffer.from('svc:pw').toString('base64')}`]),
      );
    } finally {
      await server.close();
    }
  });

  it('gives up after the configured retries with a transient error', async () => {
    const server = await fakeServer({ '/studies/abc/series': [{ status: 500 }] });
    try {
      const error = await clientFor(server.url)
        .listStudySeries('abc')
        .catch((e) => e);
      expect(error).toBeInstanceOf(ImgsrvError);
      expect(error.status).toBe(500);
      expect(error.transient).toBe(true);
      expect(server.calls).toHaveLength(4);
      expect(server.calls[0].url).toBe('/studies/abc/series?expand=true');
    } finally {
      await server.close();
    }
  });

  it('does not retry a 4xx answer; a missing study is null', async () => {
    const server = await fakeServer({ '/instances/i1/rendered': [{ status: 415 }] });
    try {
      const client = clientFor(server.url);
      expect(await client.getStudy('missing')).toBeNull();
      const error = await client.renderedBuffer('i1').catch((e) => e);
      expect(error).toBeInstanceOf(ImgsrvError);
      expect([error.status, error.transient]).toEqual([415, false]);
      expect(server.calls.map((c) => c.url)).toEqual(['/studies/missing', '/instances/i1/rendered']);
      expect(server.calls[1].accept).toBe('image/jpeg');
    } finally {
      await server.close();
    }
  });

  it('retries network errors (nothing listening) and reports them without a status', async () => {
    const server = await fakeServer({});
    const url = server.url;
    await server.close();
    const error = await clientFor(url)
      .getChanges(0, 10)
      .catch((e) => e);
    expect(error).toBeInstanceOf(ImgsrvError);
    expect(error.status).toBeUndefined();
    expect(error.transient).toBe(true);
    expect(error.message).toMatch(/ECONNREFUSED/);
  });

  it('escapes ids in paths and returns rendered images as buffers', async () => {
    const jpeg = Buffer.from([0xff, 0xd8, 0xff, 0xe0, 1, 2, 3]);
    const server = await fakeServer({ '/instances/a%2Fb/rendered': [{ status: 200, body: jpeg, type: 'image/jpeg' }] });
    try {
      expect(await clientFor(server.url).renderedBuffer('a/b', { quality: 90 })).toEqual(jpeg);
      expect(server.calls[0].url).toBe('/instances/a%2Fb/rendered?quality=90');
    } finally {
      await server.close();
    }
  });

  it('detects the DICOMweb plugin once a minute, and treats a refused /plugins as absent', async () => {
    const server = await fakeServer({ '/plugins': [{ status: 200, body: ['explorer.js', 'dicom-web'] }] });
    const other = await fakeServer({ '/plugins': [{ status: 403 }] });
    try {
      const client = clientFor(server.url);
      expect(await client.hasDicomWeb()).toBe(true);
      expect(await client.hasDicomWeb()).toBe(true);
      expect(server.calls).toHaveLength(1);
      expect(await clientFor(other.url).hasDicomWeb()).toBe(false);
    } finally {
      await server.close();
      await other.close();
    }
  });

  it('reads the last change sequence and QIDO-RS answers (an empty one included)', async () => {
    const server = await fakeServer({
      '/changes': [{ status: 200, body: { Changes: [], Done: true, Last: 42 } }],
      '/dicom-web/studies/1.2/series/3.4/instances': [
        { status: 200, body: [{ '00080018': { Value: ['5.6'] } }] },
        { status: 204, body: Buffer.alloc(0) },
      ],
    });
    try {
      const client = clientFor(server.url);
      expect(await client.lastChangeSeq()).toBe(42);
      expect(server.calls[0].url).toBe('/changes?last=');
      expect(await client.qidoSeriesInstances('1.2', '3.4', ['00280010', '00280011'])).toEqual([
        { '00080018': { Value: ['5.6'] } },
      ]);
      expect(server.calls[1].url).toBe('/dicom-web/studies/1.2/series/3.4/instances?includefield=00280010,00280011');
      expect(await client.qidoSeriesInstances('1.2', '3.4', ['00280010'], { offset: 250, limit: 125 })).toEqual([]);
      expect(server.calls[2].url).toBe(
        '/dicom-web/studies/1.2/series/3.4/instances?includefield=00280010&offset=250&limit=125',
      );
    } finally {
      await server.close();
    }
  });

  it('grows the backoff exponentially up to the cap', () => {
    const policy = { retries: 5, baseDelayMs: 100, maxDelayMs: 1000 };
    for (const [attempt, nominal] of [
      [0, 100],
      [1, 200],
      [2, 400],
      [5, 1000],
    ]) {
      const delay = backoffDelay(policy, attempt);
      expect(delay).toBeGreaterThanOrEqual(nominal * 0.75);
      expect(delay).toBeLessThanOrEqual(nominal * 1.25);
    }
  });
});
