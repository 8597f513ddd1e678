/**
 * The OHIF viewer in a real browser (Debian's chromium, driven by playwright-core), end to end
 * through the shipped nginx: a device sends a study to a real Orthanc, whose webhook reaches the API,
 * a worker indexes it, the user signs in and asks for a viewer token, and the viewer shows the image
 * over DICOMweb, each request checked by the API's validator. Another tenant's study and an expired
 * token show no image, and nginx logs the 403 / 401.
 */
import { execFile } from 'child_process';
import { promises as fs } from 'fs';
import { promisify } from 'util';
import * as path from 'path';
import { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { viewerTokenKey } from '../../src/viewer/viewer.service';
import { TestApp } from '../support/app';
import { ARTIFACTS, refreshReadmePicture, skipTour, viewportImage, waitFor } from '../support/browser';
import { sendWithStorescu, writeStudy, WrittenStudy } from '../../scripts/stack/dicom';
import { createSuperAdminUser, createTenant, createUnit, createUser, TEST_PASSWORD } from '../support/factories';
import { fetchJson } from '../../scripts/stack/http';
import { NginxInstance } from '../../scripts/stack/nginx';
import { delay, OrthancInstance } from '../../scripts/stack/orthanc';
import { BrowserStack, startBrowserStack } from '../support/stack';

jest.setTimeout(240_000);
const execFileAsync = promisify(execFile);

interface Site {
  aet: string;
  patientId: string;
  token: string;
  study: WrittenStudy;
  studyId: string;
}

describe('OHIF viewer in a browser, through nginx, Orthanc, the API and the worker', () => {
  let workDir: string;
  let orthanc: OrthancInstance;
  let nginx: NginxInstance;
  let t: TestApp;
  let stack: BrowserStack;
  let browser: Browser;
  let ours: Site;
  let theirs: Site;

  /** Through nginx, as the browser's page would. */
  const api = (method: string, url: string, token?: string, body?: unknown) => fetchJson(nginx.url, method, url, token, body);

  async function site(name: string, superToken: string): Promise<Site> {
    const tenant = await createTenant(t.db, { name: `Clinic ${name} ${Date.now()}` });
    const unit = await createUnit(t.db, tenant.id);
    const user = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id });
    const aet = `${name}_${Math.random().toString(36).slice(2, 8)}`.toUpperCase();
    const modality = await api('POST', '/api/admin/modalities', superToken, {
      tenant_id: tenant.id,
      unit_id: unit.id,
      name: `CT ${name}`,
      aet,
      ip_address: '127.0.0.1',
    });
    expect(modality.status).toBe(201);
    const login = await api('POST', '/api/login', undefined, { email: user.email, password: TEST_PASSWORD });
    expect(login.status).toBe(200);
    const patientId = `${name}-1`;
    const study = await writeStudy(path.join(workDir, name), {
      patientId,
      patientName: `${name}^PATIENT`,
      studyDate: '20240115',
      studyDescription: `Browser test ${name}`,
      series: [{ modality: 'CT', seriesNumber: 1, manufacturer: 'ACME', instances: 3, rows: 256, columns: 256 }],
    });
    // Our study as devices often send: compressed (JPEG-LS lossless), so the viewer's codecs run.
    if (name === 'OURS') {
      for (const file of study.files) await execFileAsync('dcmcjpls', [file, file]);
    }
    return { aet, patientId, token: login.body.access_token, study, studyId: '' };
  }

  /** Polls the API (as the site's user) until the study is listed and its series are indexed. */
  async function waitUntilIndexed(s: Site): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const list = await api('GET', `/api/studies?search=${encodeURIComponent(s.patientId)}`, s.token);
      const found = (list.body?.data ?? []).find((row: any) => row.study_instance_uid === s.study.studyInstanceUid);
      if (found) {
        const series = await api('GET', `/api/studies/${found.id}/series`, s.token);
        if (series.status === 200 && series.body.length === 1 && series.body[0].instance_count === 3) {
          s.studyId = found.id;
          return;
        }
      }
      if (Date.now() > deadline) throw new Error(`study ${s.study.studyInstanceUid} not indexed within 60 s`);
      await delay(250);
    }
  }

  async function viewerToken(s: Site): Promise<string> {
    const res = await api('POST', '/api/viewer/token', s.token, { study_id: s.studyId });
    expect(res.status).toBe(200);
    return res.body.token;
  }

  /** Opens the viewer on a study and waits until its network settles (or the time runs out). */
  async function openViewer(
    studyUid: string,
    token: string,
  ): Promise<{
    page: Page;
    dicomWeb: Array<{ url: string; status: number; auth: string | undefined }>;
    blocked: string[];
    frameTypes: string[];
  }> {
    const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
    const dicomWeb: Array<{ url: string; status: number; auth: string | undefined }> = [];
    // What the page's Content-Security-Policy (nginx) blocked, as the browser reports it.
    const blocked: string[] = [];
    const frameTypes: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) blocked.push(message.text());
    });
    page.on('pageerror', (error) => {
      if (/Content Security Policy|Refused to|EvalError|WebAssembly/i.test(error.message)) blocked.push(error.message);
    });
    page.on('response', (response) => {
      if (response.url().includes('/frames/')) frameTypes.push(response.headers()['content-type'] ?? '');
      if (response.url().includes('/dicom-web/')) {
        dicomWeb.push({ url: response.url(), status: response.status(), auth: response.request().headers().authorization });
      }
    });
    await page.goto(`${nginx.url}/viewer?StudyInstanceUIDs=${encodeURIComponent(studyUid)}&token=${encodeURIComponent(token)}`);
    return { page, dicomWeb, blocked, frameTypes };
  }

  beforeAll(async () => {
    stack = await startBrowserStack('browser');
    ({ t, orthanc, nginx, browser, workDir } = stack);

    const superAdmin = await createSuperAdminUser(t.db, t.http);
    [ours, theirs] = [await site('OURS', superAdmin.token), await site('THEIRS', superAdmin.token)];
    await sendWithStorescu(ours.study.files, { aet: ours.aet, port: orthanc.dicomPort, propose: '-xt' });
    await sendWithStorescu(theirs.study.files, { aet: theirs.aet, port: orthanc.dicomPort });
    await Promise.all([waitUntilIndexed(ours), waitUntilIndexed(theirs)]);
  });

  afterAll(async () => {
    await stack?.close();
  });

  it('shows the study sent by the device: the viewport holds the generated image', async () => {
    const token = await viewerToken(ours);
    const { page, dicomWeb, blocked, frameTypes } = await openViewer(ours.study.studyInstanceUid, token);
    try {
      const image = await viewportImage(page, 60_000);
      // Under the proxy's Content-Security-Policy: OHIF ran without anything blocked, its codecs
      // included (the frames came as JPEG-LS, decoded in the browser).
      expect(blocked).toEqual([]);
      expect(frameTypes.length).toBeGreaterThan(0);
      expect(frameTypes.every((type) => type.includes('image/jls'))).toBe(true);
      await skipTour(page);
      await page.screenshot({ path: path.join(ARTIFACTS, 'viewer.png') });
      expect(image).not.toBeNull();
      await fs.writeFile(path.join(ARTIFACTS, 'viewer-canvas.png'), image!.png);

      // The image's own pattern: a bright square near the top-left corner over a diagonal gradient
      // that is black at the top-left and brightest at the bottom-right.
      const { data, info } = await sharp(image!.png).removeAlpha().greyscale().raw().toBuffer({ resolveWithObject: true });
      const at = (x: number, y: number) => data[y * info.width + x];
      let [minX, minY, maxX, maxY] = [info.width, info.height, -1, -1];
      for (let y = 0; y < info.height; y++) {
        for (let x = 0; x < info.width; x++) {
          if (at(x, y) > 12)
            [minX, minY, maxX, maxY] = [Math.min(minX, x), Math.min(minY, y), Math.max(maxX, x), Math.max(maxY, y)];
        }
      }
      const [w, h] = [maxX - minX + 1, maxY - minY + 1];
      expect(w).toBeGreaterThan(100);
      // Square pixels in, square image out (the viewport keeps the aspect ratio).
      expect(Math.abs(w - h) / Math.max(w, h)).toBeLessThan(0.1);
      const mean = (fx: number, fy: number) => {
        let sum = 0;
        let n = 0;
        const [x0, y0] = [minX + Math.floor(fx * w), minY + Math.floor(fy * h)];
        for (let y = y0; y < y0 + Math.floor(h / 10); y++)
          for (let x = x0; x < x0 + Math.floor(w / 10); x++) ((sum += at(x, y)), n++);
        return sum / n;
      };
      const topRight = mean(0.85, 0.05);
      const bottomLeft = mean(0.05, 0.85);
      const bottomRight = mean(0.85, 0.85);
      const centre = mean(0.45, 0.45);
      expect(bottomRight).toBeGreaterThan(topRight + 25);
      expect(Math.abs(topRight - bottomLeft)).toBeLessThan(20);
      expect(bottomRight).toBeGreaterThan(centre);
      let brightest = 0;
      for (let y = minY; y < minY + Math.floor(h / 2); y++)
        for (let x = minX; x < minX + Math.floor(w / 2); x++) brightest = Math.max(brightest, at(x, y));
      expect(brightest).toBeGreaterThan(bottomRight + 60);

      // Every DICOMweb request carried the token as a bearer; those of the study were let through.
      const uid = ours.study.studyInstanceUid;
      const ofStudy = dicomWeb.filter((r) => r.url.includes(uid));
      expect(ofStudy.length).toBeGreaterThan(2);
      expect(dicomWeb.every((r) => r.auth === `Bearer ${token}`)).toBe(true);
      expect(ofStudy.filter((r) => r.status !== 200)).toEqual([]);
      expect(ofStudy.some((r) => /\/frames\/|\/rendered|\/bulkdata|\/metadata/.test(r.url))).toBe(true);
      // The study browser also searches the patient's other studies (a QIDO query without a study
      // UID): the token opens one study, so the proxy refuses that search and nothing else.
      for (const refused of dicomWeb.filter((r) => r.status !== 200)) {
        expect(refused.status).toBe(403);
        expect(refused.url).toMatch(/\/dicom-web\/studies\?/);
        expect(refused.url).not.toContain(uid);
      }
      // The access log holds paths without their queries (tokens, patient names): count the requests
      // whose path names the study.
      const logged = nginx
        .accessLog()
        .split('\n')
        .filter((line) => line.includes('/dicom-web/') && line.includes(uid));
      expect(logged.length).toBe(ofStudy.filter((r) => new URL(r.url).pathname.includes(uid)).length);
      expect(logged.every((line) => / 200 /.test(line))).toBe(true);

      await refreshReadmePicture('viewer.png');
    } finally {
      await page.close();
    }
  });

  it("shows nothing for another tenant's study with our token, and nginx logs the 403", async () => {
    const token = await viewerToken(ours);
    const uid = theirs.study.studyInstanceUid;
    const { page, dicomWeb } = await openViewer(uid, token);
    try {
      await waitFor(() => dicomWeb.some((r) => r.status === 403), 30_000);
      expect(await viewportImage(page, 5_000)).toBeNull();
      await page.screenshot({ path: path.join(ARTIFACTS, 'viewer-other-tenant.png') });
      expect(dicomWeb.filter((r) => r.status === 200)).toEqual([]);
      const denied = nginx
        .accessLog()
        .split('\n')
        .filter((line) => line.includes('/dicom-web/') && line.includes(uid));
      expect(denied.length).toBeGreaterThan(0);
      expect(denied.every((line) => / 403 /.test(line))).toBe(true);
    } finally {
      await page.close();
    }
  });

  it('shows nothing with an expired viewer token, and nginx logs the 401', async () => {
    const token = await viewerToken(ours);
    // Expired as Redis expires it: the token's key reaches its TTL.
    await t.redis.pexpire(viewerTokenKey(token), 1);
    await delay(20);
    const uid = ours.study.studyInstanceUid;
    const { page, dicomWeb } = await openViewer(uid, token);
    try {
      await waitFor(() => dicomWeb.some((r) => r.status === 401), 30_000);
      expect(await viewportImage(page, 5_000)).toBeNull();
      await page.screenshot({ path: path.join(ARTIFACTS, 'viewer-expired.png') });
      expect(dicomWeb.filter((r) => r.status === 200)).toEqual([]);
      const lines = nginx
        .accessLog()
        .split('\n')
        .filter((line) => line.includes('/dicom-web/') && line.includes(uid));
      expect(lines.some((line) => / 401 /.test(line))).toBe(true);
    } finally {
      await page.close();
    }
  });

  it('shows the queue board at /queues to a super admin signed in through the proxy, and not to a doctor', async () => {
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const blocked: string[] = [];
    page.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) blocked.push(message.text());
    });
    try {
      const signIn = async (email: string) =>
        page.evaluate(
          async ([mail, password]) =>
            (
              await fetch('/api/login', {
                method: 'POST',
                headers: { 'content-type': 'application/json' },
                body: JSON.stringify({ email: mail, password }),
              })
            ).status,
          [email, TEST_PASSWORD],
        );
      await page.goto(`${nginx.url}/app-config.js`);
      const doctor = await createUser(t.db, { tenant_id: null, unit_id: null });
      expect(await signIn(doctor.email)).toBe(200);
      const refused = await page.goto(`${nginx.url}/queues`);
      expect(refused?.status()).toBe(403);

      const admin = await createUser(t.db, { is_super_admin: true });
      expect(await signIn(admin.email)).toBe(200);
      const board = await page.goto(`${nginx.url}/queues`);
      expect(board?.status()).toBe(200);
      for (const queue of ['study', 'index', 'reconcile']) {
        await page.getByText(queue, { exact: true }).first().waitFor({ timeout: 20_000 });
      }
      await page.screenshot({ path: path.join(ARTIFACTS, 'queues.png') });
      await refreshReadmePicture('queues.png');
      // Only the board's third-party web font is refused (the page falls back to a system font).
      expect(blocked.filter((message) => !message.includes('https://fonts.googleapis.com/'))).toEqual([]);
    } finally {
      await context.close();
    }
  });

  describe('viewer tokens and user tokens do not stand in for each other', () => {
    const series = () => `/dicom-web/studies/${ours.study.studyInstanceUid}/series`;

    it('takes the viewer token as X-Viewer-Token or as a bearer at the proxy', async () => {
      const token = await viewerToken(ours);
      for (const headers of [{ 'x-viewer-token': token }, { authorization: `Bearer ${token}` }] as Array<
        Record<string, string>
      >) {
        const res = await fetch(`${nginx.url}${series()}`, { headers });
        expect(res.status).toBe(200);
        expect(((await res.json()) as unknown[]).length).toBe(1);
      }
    });

    it('prefers X-Viewer-Token over the bearer when both are sent', async () => {
      const token = await viewerToken(ours);
      const res = await fetch(`${nginx.url}${series()}`, {
        headers: { 'x-viewer-token': 'not-a-token', authorization: `Bearer ${token}` },
      });
      expect(res.status).toBe(401);
    });

    it("refuses a user access token as X-Viewer-Token; as a bearer it is a session, at the user's own scope", async () => {
      const asViewerToken = await fetch(`${nginx.url}${series()}`, { headers: { 'x-viewer-token': ours.token } });
      expect(asViewerToken.status).toBe(401);
      // What the validator told nginx (nginx answers the client with its own 401 page).
      const verdict = await t.http.get('/api/viewer/token/validate', {
        headers: { 'x-viewer-token': ours.token, 'x-original-uri': series() },
      });
      expect(verdict.status).toBe(401);
      expect(verdict.body).toEqual({ error: 'Invalid or expired token' });
      const session = { authorization: `Bearer ${ours.token}` };
      expect((await fetch(`${nginx.url}${series()}`, { headers: session })).status).toBe(200);
      const theirSeries = `/dicom-web/studies/${theirs.study.studyInstanceUid}/series`;
      expect((await fetch(`${nginx.url}${theirSeries}`, { headers: session })).status).toBe(403);
    });

    it('refuses a viewer token as a user token on the API', async () => {
      const token = await viewerToken(ours);
      for (const url of ['/api/me', '/api/studies', `/api/studies/${ours.studyId}`]) {
        const res = await api('GET', url, token);
        expect({ url, status: res.status, body: res.body }).toEqual({
          url,
          status: 401,
          body: { message: 'Unauthenticated.' },
        });
      }
      const cookie = await fetch(`${nginx.url}/api/me`, { headers: { cookie: `pacs_access_token=${token}` } });
      expect(cookie.status).toBe(401);
    });
  });
});
