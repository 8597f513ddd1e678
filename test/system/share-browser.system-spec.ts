/**
 * A share link in a real browser (Debian's chromium, playwright-core), through the shipped nginx: a
 * device sends a study, a doctor shares it with a passcode, and the recipient opens /s/<token>: the
 * page asks for the passcode, refuses a wrong one, then the viewer shows that study's image, never
 * a sign-in or the study list. A revoked link shows the API's message. Once the study has a signed
 * report, the page offers the images and the report's PDF.
 */
import * as path from 'path';
import { Browser } from 'playwright-core';
import { TestApp } from '../support/app';
import { ARTIFACTS, skipTour, viewportImage } from '../support/browser';
import { sendWithStorescu, writeStudy, WrittenStudy } from '../../scripts/stack/dicom';
import { createSuperAdminUser, createTenant, createUnit, createUser, TEST_PASSWORD } from '../support/factories';
import { fetchJson } from '../../scripts/stack/http';
import { NginxInstance } from '../../scripts/stack/nginx';
import { delay, OrthancInstance } from '../../scripts/stack/orthanc';
import { BrowserStack, startBrowserStack } from '../support/stack';

jest.setTimeout(240_000);

describe('a share link in a browser', () => {
  let stack: BrowserStack;
  let t: TestApp;
  let orthanc: OrthancInstance;
  let nginx: NginxInstance;
  let browser: Browser;
  let doctorToken: string;
  let doctorId: string;
  let study: WrittenStudy;
  let studyId: string;

  const api = (method: string, url: string, token?: string, body?: unknown) => fetchJson(nginx.url, method, url, token, body);

  beforeAll(async () => {
    stack = await startBrowserStack('share');
    ({ t, orthanc, nginx, browser } = stack);
    const superAdmin = await createSuperAdminUser(t.db, t.http);
    const tenant = await createTenant(t.db);
    const unit = await createUnit(t.db, tenant.id);
    const doctor = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id });
    doctorId = doctor.id;
    const aet = `SHARE_${Math.random().toString(36).slice(2, 8)}`.toUpperCase();
    const modality = await api('POST', '/api/admin/modalities', superAdmin.token, {
      tenant_id: tenant.id,
      unit_id: unit.id,
      name: 'CT share',
      aet,
      ip_address: '127.0.0.1',
    });
    expect(modality.status).toBe(201);
    doctorToken = (await api('POST', '/api/login', undefined, { email: doctor.email, password: TEST_PASSWORD })).body
      .access_token;
    study = await writeStudy(path.join(stack.workDir, 'shared'), {
      patientId: 'SHARE-1',
      patientName: 'SHARED^PATIENT',
      studyDate: '20240115',
      studyDescription: 'Tórax',
      series: [{ modality: 'CT', seriesNumber: 1, instances: 2, rows: 256, columns: 256 }],
    });
    await sendWithStorescu(study.files, { aet, port: orthanc.dicomPort });
    const deadline = Date.now() + 60_000;
    for (;;) {
      const list = await api('GET', '/api/studies?search=SHARE-1', doctorToken);
      const found = (list.body?.data ?? []).find(
        (row: { study_instance_uid: string }) => row.study_instance_uid === study.studyInstanceUid,
      );
      if (found) {
        const series = await api('GET', `/api/studies/${found.id}/series`, doctorToken);
        if (series.body?.[0]?.instance_count === 2) {
          studyId = found.id;
          break;
        }
      }
      if (Date.now() > deadline) throw new Error('study not indexed within 60 s');
      await delay(250);
    }
  });

  afterAll(async () => {
    await stack?.close();
  });

  it('asks for the passcode, refuses a wrong one, then shows the study in the viewer without a sign-in', async () => {
    const share = await api('POST', `/api/studies/${studyId}/shares`, doctorToken, { passcode: 'open-sesame' });
    expect(share.status).toBe(201);
    const context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    const page = await context.newPage();
    const visited: string[] = [];
    page.on('framenavigated', (frame) => {
      if (frame === page.mainFrame()) visited.push(new URL(frame.url()).pathname);
    });
    try {
      await page.goto(`${nginx.url}${share.body.url}`);
      await page.locator('#passcode').waitFor({ state: 'visible', timeout: 15_000 });
      expect(await page.locator('#status').textContent()).toBe('This study is protected by a passcode.');
      // Nothing to open before the passcode: no images button leading to a sign-in.
      expect(await page.locator('#opened').isHidden()).toBe(true);
      await page.fill('#passcode', 'not-the-passcode');
      await page.click('#submit');
      await page.locator('#error').waitFor({ state: 'visible' });
      expect(await page.locator('#error').textContent()).toBe('Wrong passcode.');

      await page.fill('#passcode', 'open-sesame');
      await page.click('#submit');
      await page.waitForURL(/\/viewer\?/, { timeout: 15_000 });
      const image = await viewportImage(page, 60_000);
      await skipTour(page);
      await page.screenshot({ path: path.join(ARTIFACTS, 'share.png') });
      expect(image).not.toBeNull();
      expect(visited.filter((p) => p === '/login' || p === '/')).toEqual([]);
      // OHIF took the token out of the address bar.
      expect(page.url()).not.toContain('token=');
      const [row] = await t.db.query(`SELECT uses FROM shares WHERE id = $1`, [share.body.id]);
      expect(row.uses).toBe(1);
      // The share's token is not in nginx's access log.
      expect(nginx.accessLog()).not.toContain(share.body.token);

      // A reload reads on with the viewer token the share page kept in this tab: no sign-in, no use.
      await page.reload();
      expect(await viewportImage(page, 60_000)).not.toBeNull();
      expect(visited.filter((p) => p === '/login' || p === '/')).toEqual([]);
      expect(page.url()).not.toContain('token=');
      const [after] = await t.db.query(`SELECT uses FROM shares WHERE id = $1`, [share.body.id]);
      expect(after.uses).toBe(1);
    } finally {
      await context.close();
    }
  });

  it('shows why a revoked link no longer opens', async () => {
    const share = await api('POST', `/api/studies/${studyId}/shares`, doctorToken, {});
    expect((await api('DELETE', `/api/studies/${studyId}/shares/${share.body.id}`, doctorToken)).status).toBe(204);
    const page = await browser.newPage();
    try {
      await page.goto(`${nginx.url}${share.body.url}`);
      await page.waitForFunction(() => document.getElementById('status')?.textContent === 'This link has been revoked.', null, {
        timeout: 15_000,
      });
      expect(await page.locator('#passcode-form').isHidden()).toBe(true);
      expect(await page.locator('#opened').isHidden()).toBe(true);
    } finally {
      await page.close();
    }
  });

  it('offers the images and the signed report once the study has one', async () => {
    await t.db.query(`UPDATE users SET crm = '112233/SP' WHERE id = $1`, [doctorId]);
    const draft = await api('POST', `/api/studies/${studyId}/reports`, doctorToken, { impression: 'Normal study.' });
    expect(draft.status).toBe(201);
    expect(
      (await api('POST', `/api/studies/${studyId}/reports/${draft.body.id}/sign`, doctorToken, { version: 1 })).status,
    ).toBe(200);
    const share = await api('POST', `/api/studies/${studyId}/shares`, doctorToken, {});
    const page = await browser.newPage();
    try {
      await page.goto(`${nginx.url}${share.body.url}`);
      await page.locator('#open-report').waitFor({ state: 'visible', timeout: 15_000 });
      expect(await page.locator('#status').textContent()).toBe('The study has a signed report.');
      expect(await page.locator('#open-images').getAttribute('href')).toMatch(/^\/viewer\?StudyInstanceUIDs=/);
      // The study, from the open answer: the patient as people read the name, the date as dd/mm/yyyy.
      expect(await page.textContent('#shared-patient')).toBe('SHARED, PATIENT');
      expect(await page.textContent('#shared-study-line')).toBe('15/01/2024 · CT · Tórax');
      // The two actions stand out from the page: text against its background at 4.5:1 at least (WCAG AA).
      for (const id of ['open-images', 'open-report']) {
        const look = await page.evaluate((which) => {
          const rgb = (color: string) => (color.match(/[\d.]+/g) ?? []).map(Number);
          const luminance = ([r, g, b]: number[]) => {
            const c = [r, g, b].map((v) => v / 255).map((v) => (v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4));
            return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
          };
          const link = document.getElementById(which) as HTMLElement;
          let back: Element | null = link;
          while (
            back &&
            (rgb(getComputedStyle(back).backgroundColor)[3] === 0 || getComputedStyle(back).backgroundColor === 'transparent')
          )
            back = back.parentElement;
          const [a, b] = [
            luminance(rgb(getComputedStyle(link).color)),
            luminance(rgb(getComputedStyle(back ?? document.body).backgroundColor)),
          ];
          const box = link.getBoundingClientRect();
          return { contrast: (Math.max(a, b) + 0.05) / (Math.min(a, b) + 0.05), height: box.height };
        }, id);
        expect(look.contrast).toBeGreaterThanOrEqual(4.5);
        expect(look.height).toBeGreaterThanOrEqual(32);
      }
      await page.screenshot({ path: path.join(ARTIFACTS, 'share-opened.png') });
      const head = await page.evaluate(async () => {
        const href = (document.getElementById('open-report') as HTMLAnchorElement).href;
        const bytes = new Uint8Array(await (await fetch(href)).arrayBuffer());
        return String.fromCharCode(...bytes.slice(0, 5));
      });
      expect(head).toBe('%PDF-');
      // The recipient clicks it: a new tab shows the PDF in the browser's viewer, under the page's policy.
      const refused: string[] = [];
      page.context().on('console', (message) => {
        if (/Content Security Policy/i.test(message.text())) refused.push(message.text());
      });
      const [tab] = await Promise.all([page.waitForEvent('popup'), page.click('#open-report')]);
      await tab.waitForLoadState('load');
      expect(await tab.evaluate(() => document.contentType)).toBe('application/pdf');
      // Chromium's PDF viewer (an extension frame) shows the document's title once it has read the PDF.
      const pdfTitle = async () => {
        const viewer = tab.frames().find((frame) => frame.url().startsWith('chrome-extension://'));
        return viewer
          ?.evaluate(() => {
            type Host = Element & { shadowRoot: ShadowRoot | null };
            const toolbar = (document.querySelector('pdf-viewer') as Host | null)?.shadowRoot?.querySelector(
              'viewer-toolbar',
            ) as Host | null;
            return toolbar?.shadowRoot?.querySelector('#title')?.textContent?.trim() ?? '';
          })
          .catch(() => '');
      };
      const deadline = Date.now() + 15_000;
      while ((await pdfTitle()) !== 'Report — SHARED, PATIENT' && Date.now() < deadline) await delay(100);
      expect(await pdfTitle()).toBe('Report — SHARED, PATIENT');
      await tab.screenshot({ path: path.join(ARTIFACTS, 'share-report.png') });
      expect(refused).toEqual([]);
    } finally {
      await page.close();
    }
  });
});
