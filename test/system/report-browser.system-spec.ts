/**
 * The report page in a real browser, through the shipped nginx, a real Orthanc, the API and the
 * worker: from OHIF's study list one click opens a study's report page (its row's Report link) or
 * /reports, the studies to report; the doctor picks a study of that worklist, writes, inserts a
 * preset, the draft is saved as they type; a second tab's save makes the first tab's next save
 * stale, which is refused and said; the session ends while the doctor types and the text is back
 * after signing in again; a failed save keeps Sign from signing the older text; then the report is
 * signed, its PDF opens, the DOC series filed by the worker shows in the viewer, whose Reports
 * button opens the study's report page, and a double click on it shows the PDF in OHIF's PDF
 * viewport under the viewer pages' Content-Security-Policy (nothing blocked).
 */
import { execFileSync } from 'child_process';
import { mkdtempSync, writeFileSync } from 'fs';
import { tmpdir } from 'os';
import * as path from 'path';
import { Browser, BrowserContext, Page, Response } from 'playwright-core';
import sharp from 'sharp';
import { TestApp } from '../support/app';
import { ARTIFACTS, refreshReadmePicture } from '../support/browser';
import { sendWithStorescu, writeStudy, WrittenStudy } from '../../scripts/stack/dicom';
import { createStudy } from '../support/clinical-factories';
import { createTenant, createUnit, createUser, login, TEST_PASSWORD, UserRow } from '../support/factories';
import { NginxInstance } from '../../scripts/stack/nginx';
import { waitFor as waitUntil } from '../../scripts/stack/orthanc';
import { BrowserStack, startBrowserStack } from '../support/stack';

jest.setTimeout(240_000);

/** A date-time as the page shows it: dd/mm/yyyy HH:MM, 24 h, in the browser's (here the tests') zone. */
function shownDateTime(at: Date | string): string {
  const d = new Date(at);
  const two = (n: number) => String(n).padStart(2, '0');
  return `${two(d.getDate())}/${two(d.getMonth() + 1)}/${d.getFullYear()} ${two(d.getHours())}:${two(d.getMinutes())}`;
}

function pdfText(pdf: Buffer): string {
  const file = path.join(mkdtempSync(path.join(tmpdir(), 'report-page-')), 'r.pdf');
  writeFileSync(file, pdf);
  return execFileSync('pdftotext', [file, '-']).toString();
}

describe('The report page in a browser: write, preset, save, a stale save refused, sign, the PDF, the DOC series', () => {
  let stack: BrowserStack;
  let t: TestApp;
  let nginx: NginxInstance;
  let browser: Browser;
  let doctor: UserRow;
  let place: { tenant_id: string; unit_id: string };
  let study: WrittenStudy;
  let studyId: string;
  let context: BrowserContext;
  let page: Page;
  let second: Page;

  const saved = (p: Page, version: number) => p.getByText(`Draft saved (version ${version}).`).waitFor({ timeout: 20_000 });
  const stored = async () =>
    (
      await t.db.query(`SELECT findings, impression, version FROM reports WHERE study_id = $1 AND status = 'draft'`, [studyId])
    )[0];

  beforeAll(async () => {
    stack = await startBrowserStack('reports');
    ({ t, nginx, browser } = stack);
    const tenant = await createTenant(t.db, { name: `Clínica São Paulo ${Date.now()}` });
    const unit = await createUnit(t.db, tenant.id, { name: 'Unidade Centro' });
    place = { tenant_id: tenant.id, unit_id: unit.id };
    const signature = `data:image/png;base64,${(
      await sharp({ create: { width: 120, height: 40, channels: 3, background: '#ffffff' } })
        .png()
        .toBuffer()
    ).toString('base64')}`;
    doctor = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id, name: 'Dra. Conceição Lima', signature });
    await t.db.query(`UPDATE users SET crm = '654321/SP' WHERE id = $1`, [doctor.id]);
    const admin = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id, is_tenant_admin: true });
    const adminToken = await login(t.http, admin.email);
    const preset = await t.http.post('/api/tenant/report-presets', {
      token: adminToken,
      body: { name: 'TC crânio normal', modality: 'CT', findings: 'Sulcos e cisternas de amplitude normal.' },
    });
    expect(preset.status).toBe(201);
    const aet = `RP${Math.random().toString(36).slice(2, 8)}`.toUpperCase();
    await t.db.query(
      `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, '127.0.0.1')`,
      [tenant.id, unit.id, `CT ${aet}`, aet],
    );
    study = await writeStudy(path.join(stack.workDir, 'ct'), {
      patientId: 'RP-1',
      patientName: 'SÃO JOSÉ^MARIA DA CONCEIÇÃO',
      studyDate: '20240310',
      studyDescription: 'TC de crânio',
      series: [{ modality: 'CT', seriesNumber: 1, instances: 2, rows: 64, columns: 64 }],
    });
    await sendWithStorescu(study.files, { aet, port: stack.orthanc.dicomPort });
    const row = await waitUntil(
      'the study indexed',
      async () =>
        (
          await t.db.query(
            `SELECT s.id FROM studies s JOIN imgsrv_study_sync y USING (imgsrv_study_id)
              WHERE s.study_instance_uid = $1 AND y.indexed_at IS NOT NULL`,
            [study.studyInstanceUid],
          )
        )[0],
      60_000,
    );
    studyId = row.id;
    context = await browser.newContext({ viewport: { width: 1280, height: 900 } });
    page = await context.newPage();
  });

  afterAll(async () => {
    await context?.close();
    await stack?.close();
  });

  it("opens a study's report page from its row of the study list with one click", async () => {
    await page.goto(`${nginx.url}/login`);
    await page.fill('#email', doctor.email);
    await page.fill('#password', TEST_PASSWORD);
    await page.click('#submit');
    await page.waitForURL(`${nginx.url}/`);
    // OHIF's bundle is parsed and the study searched before the row shows: slow on a loaded machine.
    const link = page.locator('tr', { hasText: 'SÃO JOSÉ, MARIA DA CONCEIÇÃO' }).locator('a.pacs-report-link');
    await link.waitFor({ timeout: 120_000 });
    // The column has nothing to filter: OHIF's filter input there is hidden.
    const filter = page.locator('tr[data-filter-row] > td:nth-last-child(2) input');
    expect([await filter.count(), await filter.isVisible()]).toEqual([1, false]);
    await link.click();
    await page.waitForURL(`${nginx.url}/reports?uid=${study.studyInstanceUid}`);
    await page.locator('#patient').getByText('SÃO JOSÉ, MARIA DA CONCEIÇÃO').waitFor();
    // Opening the page writes nothing: the draft starts when the doctor types.
    expect((await t.db.query(`SELECT count(*)::int AS n FROM reports WHERE study_id = $1`, [studyId]))[0].n).toBe(0);
  });

  it('opens the page of studies to report from the study list with one click, and lists the study', async () => {
    await page.goto(`${nginx.url}/`);
    // OHIF's bundle is parsed before the page's DOMContentLoaded, when app-config.js adds the link: slow on a loaded machine.
    await page.locator('#pacs-reports').click({ timeout: 120_000 });
    await page.waitForURL(`${nginx.url}/reports`);
    await page.locator('#worklist li', { hasText: 'SÃO JOSÉ, MARIA DA CONCEIÇÃO' }).waitFor();
    const viewerLink = await page.locator('#worklist li a.viewer').first().getAttribute('href');
    expect(viewerLink).toBe(`/viewer?StudyInstanceUIDs=${study.studyInstanceUid}`);
  });

  it('creates the draft as the doctor types, inserts a preset and saves it', async () => {
    await page.locator('#worklist li a.name').first().click();
    await page.locator('#patient').getByText('SÃO JOSÉ, MARIA DA CONCEIÇÃO').waitFor();
    await page.fill('#indication', 'Cefaleia há 3 dias.');
    await saved(page, 1);
    expect((await t.db.query(`SELECT report_status FROM studies WHERE id = $1`, [studyId]))[0].report_status).toBe('draft');
    await page.selectOption('#preset', { label: 'TC crânio normal (CT)' });
    await page.click('#apply-preset');
    await saved(page, 2);
    expect(await stored()).toMatchObject({ findings: 'Sulcos e cisternas de amplitude normal.', version: 2 });
  });

  it("refuses a stale save after a second tab's save, says so, and overwrites nothing", async () => {
    second = await context.newPage();
    await second.goto(`${nginx.url}/reports?study=${studyId}`);
    await second.locator('#findings').waitFor();
    await saved(second, 2);
    await second.fill('#impression', 'Sem alterações agudas.');
    await saved(second, 3);

    await page.fill('#findings', 'Texto antigo da primeira aba.');
    await page.locator('#conflict').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await page.textContent('#conflict')).toContain('Not saved');
    expect(await stored()).toMatchObject({
      findings: 'Sulcos e cisternas de amplitude normal.',
      impression: 'Sem alterações agudas.',
      version: 3,
    });
    await page.screenshot({ path: path.join(ARTIFACTS, 'report-page-stale.png') });
    await page.click('#reload');
    await saved(page, 3);
    expect(await page.inputValue('#impression')).toBe('Sem alterações agudas.');
    await second.close();
  });

  it('keeps the text typed as the session ended: signed in again, the page puts it back and saves it', async () => {
    await context.clearCookies();
    await page.fill('#findings', 'Texto digitado quando a sessão expirou.');
    await page.waitForURL(/\/login\?next=/, { timeout: 20_000 });
    await page.fill('#email', doctor.email);
    await page.fill('#password', TEST_PASSWORD);
    await page.click('#submit');
    await page.waitForURL(`${nginx.url}/reports?study=${studyId}`, { timeout: 20_000 });
    await saved(page, 4);
    expect(await page.inputValue('#findings')).toBe('Texto digitado quando a sessão expirou.');
    expect(await stored()).toMatchObject({
      findings: 'Texto digitado quando a sessão expirou.',
      impression: 'Sem alterações agudas.',
      version: 4,
    });
  });

  it('does not sign while the text on screen is not saved', async () => {
    const reportWrites = '**/api/studies/*/reports/*';
    await page.route(reportWrites, (route) =>
      route.request().method() === 'PATCH'
        ? route.fulfill({ status: 503, contentType: 'application/json', body: '{"message":"Service unavailable."}' })
        : route.continue(),
    );
    await page.fill('#findings', 'Sulcos e cisternas de amplitude normal.');
    await page.click('#sign');
    await page.getByText('Not saved: Service unavailable.').waitFor({ timeout: 20_000 });
    await page.waitForFunction(() => !(document.getElementById('sign') as HTMLButtonElement).disabled);
    const reports = await t.db.query(`SELECT status, version FROM reports WHERE study_id = $1`, [studyId]);
    expect(reports).toEqual([{ status: 'draft', version: 4 }]);
    await page.unroute(reportWrites);
  });

  it('previews the draft PDF, signs, and opens the signed PDF', async () => {
    await page.fill('#findings', 'Sulcos e cisternas de amplitude normal. Parênquima sem lesões.');
    await saved(page, 5);
    // The link opens the PDF in a new tab (its answer: an A4 PDF); its bytes are read with the same session.
    const pdfBytes = (href: string) =>
      page.evaluate(async (url) => {
        const response = await fetch(url);
        const bytes = new Uint8Array(await response.arrayBuffer());
        let binary = '';
        bytes.forEach((b) => (binary += String.fromCharCode(b)));
        return { status: response.status, type: response.headers.get('content-type'), base64: btoa(binary) };
      }, href);
    const opened = (click: () => Promise<void>) =>
      Promise.all([context.waitForEvent('response', (r: Response) => r.url().endsWith('/pdf')), click()]).then(([r]) => r);
    const previewAnswer = await opened(() => page.click('#preview'));
    expect(previewAnswer.status()).toBe(200);
    expect(previewAnswer.headers()['content-type']).toBe('application/pdf');
    const preview = await pdfBytes((await page.getAttribute('#preview', 'href')) as string);
    expect(preview).toMatchObject({ status: 200, type: 'application/pdf' });
    expect(pdfText(Buffer.from(preview.base64, 'base64'))).toContain('DRAFT');

    // Sign asks first; declined, nothing is signed.
    const asked: string[] = [];
    page.once('dialog', (dialog) => {
      asked.push(dialog.message());
      void dialog.dismiss();
    });
    await page.click('#sign');
    await page.waitForFunction(() => !(document.getElementById('sign') as HTMLButtonElement).disabled);
    expect(asked).toHaveLength(1);
    expect(asked[0]).toContain('cannot be changed');
    expect(asked[0]).toContain('amended');
    expect(await t.db.query(`SELECT status, version FROM reports WHERE study_id = $1`, [studyId])).toEqual([
      { status: 'draft', version: 5 },
    ]);
    expect(await page.textContent('#status')).toBe('Not signed.');

    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('#sign');
    await page.getByText('Signed. The PDF is kept').waitFor({ timeout: 20_000 });
    await page.locator('#signed a.signed-pdf').waitFor();
    // The signing time as the study dates: dd/mm/yyyy, and 24 h.
    const [{ signed_at }] = await t.db.query(`SELECT signed_at FROM reports WHERE study_id = $1 AND status = 'final'`, [
      studyId,
    ]);
    expect(await page.textContent('#signed li')).toContain(` on ${shownDateTime(signed_at)} — `);
    await page.screenshot({ path: path.join(ARTIFACTS, 'report-page.png') });
    await refreshReadmePicture('report-page.png');
    const signedAnswer = await opened(() => page.click('#signed a.signed-pdf'));
    expect(signedAnswer.status()).toBe(200);
    const signed = await pdfBytes((await page.getAttribute('#signed a.signed-pdf', 'href')) as string);
    const text = pdfText(Buffer.from(signed.base64, 'base64'));
    for (const expected of ['MARIA DA CONCEIÇÃO', 'Parênquima sem lesões.', 'Dra. Conceição Lima', 'CRM 654321/SP']) {
      expect(text).toContain(expected);
    }
    expect(text).not.toContain('DRAFT');
  });

  it('sends the study on: the download link answers a ZIP with the session', async () => {
    expect(await page.getAttribute('#download', 'href')).toBe(`/api/studies/${studyId}/archive`);
    const answer = await page.evaluate(
      async (url) => {
        const response = await fetch(url);
        const head = new Uint8Array(await response.arrayBuffer()).slice(0, 2);
        return { status: response.status, type: response.headers.get('content-type'), head: String.fromCharCode(...head) };
      },
      (await page.getAttribute('#download', 'href')) as string,
    );
    expect(answer).toEqual({ status: 200, type: 'application/zip', head: 'PK' });
    const [download] = await Promise.all([page.waitForEvent('download'), page.click('#download')]);
    expect(download.suggestedFilename()).toMatch(/\.zip$/);
    await download.cancel();
  });

  it('sends the study on: a share link made on the page opens with its passcode, shows the study, and revoked answers 410', async () => {
    // The API's field errors show beside the form.
    await page.fill('#share-passcode', 'abc');
    await page.click('#share-create');
    await page.locator('#share-passcode-error').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await page.textContent('#share-passcode-error')).toMatch(/passcode/i);
    expect(await page.locator('#share-created').isHidden()).toBe(true);
    expect((await t.db.query(`SELECT count(*)::int AS n FROM shares WHERE study_id = $1`, [studyId]))[0].n).toBe(0);

    await page.fill('#share-hours', '48');
    await page.fill('#share-uses', '3');
    await page.fill('#share-passcode', 'segredo-123');
    await page.fill('#share-note', 'Dr. Paulo, neurologia');
    await page.click('#share-create');
    await page.locator('#share-created').waitFor({ state: 'visible', timeout: 20_000 });
    expect(await page.locator('#share-passcode-error').isHidden()).toBe(true);
    const [share] = await t.db.query(
      `SELECT id, expires_at, max_uses, uses, note FROM shares WHERE study_id = $1 AND revoked_at IS NULL`,
      [studyId],
    );
    expect(share).toMatchObject({ max_uses: 3, uses: 0, note: 'Dr. Paulo, neurologia' });
    const link = await page.inputValue('#share-link');
    expect(link).toMatch(new RegExp(`^${nginx.url}/s/[A-Za-z0-9_-]{43}$`));
    const created = (await page.textContent('#share-created')) as string;
    expect(created).toContain(`Expires ${shownDateTime(share.expires_at)}`);
    expect(created).toContain('3 uses');
    expect(created).toContain('shown only now');
    // Copy puts the whole link on the clipboard.
    await context.grantPermissions(['clipboard-read', 'clipboard-write'], { origin: nginx.url });
    await page.click('#share-copy');
    await page.getByText('Copied.').waitFor();
    expect(await page.evaluate(() => navigator.clipboard.readText())).toBe(link);
    // The study's shares, listed.
    const row = page.locator('#shares tbody tr', { hasText: 'Dr. Paulo, neurologia' });
    await row.waitFor();
    expect(await row.locator('td').allTextContents()).toEqual([
      'Dr. Paulo, neurologia',
      'Dra. Conceição Lima',
      shownDateTime(share.expires_at),
      '0 / 3',
      'yes',
      'active',
      'Revoke',
    ]);
    await page.screenshot({ path: path.join(ARTIFACTS, 'report-page-share.png'), fullPage: true });

    // The recipient, in a browser of their own: the passcode, then the study.
    const recipient = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    try {
      const shared = await recipient.newPage();
      await shared.goto(link);
      await shared.locator('#passcode').waitFor({ state: 'visible', timeout: 15_000 });
      await shared.fill('#passcode', 'segredo-123');
      await shared.click('#submit');
      await shared.locator('#open-report').waitFor({ state: 'visible', timeout: 15_000 });
      expect(await shared.textContent('#shared-patient')).toBe('SÃO JOSÉ, MARIA DA CONCEIÇÃO');
      const line = (await shared.textContent('#shared-study-line')) as string;
      for (const expected of ['10/03/2024', 'TC de crânio', 'CT']) expect(line).toContain(expected);
      expect((await t.db.query(`SELECT uses FROM shares WHERE id = $1`, [share.id]))[0].uses).toBe(1);

      // Revoke asks first; declined, the link stays.
      page.once('dialog', (dialog) => void dialog.dismiss());
      await row.locator('button.revoke').click();
      await page.waitForTimeout(500);
      expect((await t.db.query(`SELECT revoked_at FROM shares WHERE id = $1`, [share.id]))[0].revoked_at).toBeNull();
      page.once('dialog', (dialog) => void dialog.accept());
      await row.locator('button.revoke').click();
      await row.locator('td', { hasText: /^revoked / }).waitFor({ timeout: 20_000 });
      expect(await row.locator('button.revoke').count()).toBe(0);
      expect((await t.db.query(`SELECT revoked_at FROM shares WHERE id = $1`, [share.id]))[0].revoked_at).not.toBeNull();

      const again = await recipient.newPage();
      await again.goto(link);
      await again.waitForFunction(
        () => document.getElementById('status')?.textContent === 'This link has been revoked.',
        null,
        {
          timeout: 15_000,
        },
      );
      const open = await again.evaluate(
        async (token) => {
          const response = await fetch('/api/shares/open', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ token, passcode: 'segredo-123' }),
          });
          return response.status;
        },
        link.slice(link.lastIndexOf('/') + 1),
      );
      expect(open).toBe(410);
    } finally {
      await recipient.close();
    }
  });

  it("files the PDF as the study's DOC series, which the viewer shows; its Reports button opens this study's report", async () => {
    await waitUntil(
      'the DOC series in the API',
      async () => {
        const res = await t.http.get(`/api/studies/${studyId}/series`, { token: await login(t.http, doctor.email) });
        return (res.body as Array<{ modality: string }>).some((s) => s.modality === 'DOC');
      },
      60_000,
    );
    // What OHIF asks for a study's series, with the session, through nginx and the gate.
    const series = await page.evaluate(async (uid) => {
      const response = await fetch(`/dicom-web/studies/${uid}/series`);
      return { status: response.status, body: await response.json() };
    }, study.studyInstanceUid);
    expect(series.status).toBe(200);
    const modalities = (series.body as Array<Record<string, { Value: string[] }>>).map((s) => s['00080060'].Value[0]);
    expect(modalities.sort()).toEqual(['CT', 'DOC']);
    // The viewer opens the study; its study browser shows the DOC series beside the CT one.
    const viewer = await context.newPage();
    await viewer.goto(`${nginx.url}/viewer?StudyInstanceUIDs=${study.studyInstanceUid}`);
    await viewer.getByText('DOC', { exact: true }).first().waitFor({ timeout: 60_000 });
    await viewer.screenshot({ path: path.join(ARTIFACTS, 'report-doc-series-viewer.png') });
    // From the viewer, one click opens this study's report page.
    await viewer.locator('#pacs-reports').click({ timeout: 60_000 });
    await viewer.waitForURL(`${nginx.url}/reports?study=${studyId}`, { timeout: 30_000 });
    await viewer.locator('#patient').getByText('SÃO JOSÉ, MARIA DA CONCEIÇÃO').waitFor();
    await viewer.getByText('Report (signed)').waitFor();
  });

  it('opens the signed PDF in the viewer: a double click on the DOC series shows it, nothing blocked by the page policy', async () => {
    const viewer = await context.newPage();
    // What the page's Content-Security-Policy (nginx) blocked, as the page and the console report it.
    const blocked: string[] = [];
    viewer.on('console', (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) blocked.push(message.text());
    });
    await viewer.addInitScript(() => {
      document.addEventListener('securitypolicyviolation', (event) => {
        console.error(`Content Security Policy violation: ${event.violatedDirective} ${event.blockedURI}`);
      });
    });
    // The PDF's bytes as OHIF fetches them (WADO-RS, through nginx and the gate).
    const pdfAnswers: Array<{ url: string; status: number; body: Promise<Buffer> }> = [];
    viewer.on('response', (response) => {
      if (response.url().includes('/dicom-web/') && !response.url().endsWith('/metadata')) {
        pdfAnswers.push({
          url: response.url(),
          status: response.status(),
          body: response.body().catch(() => Buffer.alloc(0)),
        });
      }
    });
    try {
      await viewer.goto(`${nginx.url}/viewer?StudyInstanceUIDs=${study.studyInstanceUid}`);
      const doc = viewer.locator('[data-cy^="study-browser-thumbnail"]', {
        has: viewer.locator('[data-cy="series-modality-label"]', { hasText: /^DOC$/ }),
      });
      await doc.first().dblclick({ timeout: 60_000 });
      // OHIF's PDF viewport: an <object> whose data is the PDF it fetched, as a blob: URL of the page.
      const object = viewer.locator('object[type="application/pdf"][data]');
      await object.waitFor({ state: 'attached', timeout: 60_000 });
      const data = (await object.getAttribute('data')) as string;
      expect(data).toMatch(new RegExp(`^blob:${nginx.url}/`));
      // Give the plugin time to load (a blocked load is reported asynchronously), then: nothing blocked.
      await viewer.waitForTimeout(2_000);
      expect(blocked).toEqual([]);
      // A browser with a PDF viewer (Debian's chromium has one, headless too) shows the blob in it,
      // not OHIF's fallback text; one without would show the fallback whatever the policy.
      if (await viewer.evaluate(() => navigator.pdfViewerEnabled)) {
        await waitUntil('the PDF viewer showing the blob', async () => viewer.frames().some((f) => f.url() === data), 20_000);
        expect(await viewer.getByText('No online PDF viewer installed').isVisible()).toBe(false);
      }
      await viewer.screenshot({ path: path.join(ARTIFACTS, 'report-pdf-viewer.png') });
      // The kept PDF's bytes came from the image server (200), in OHIF's WADO-RS request for them.
      const [report] = await t.db.query(`SELECT id FROM reports WHERE study_id = $1`, [studyId]);
      const kept = (
        await t.http.get(`/api/studies/${studyId}/reports/${report.id}/pdf`, { token: await login(t.http, doctor.email) })
      ).raw;
      const answers = await Promise.all(pdfAnswers.map(async (a) => ({ ...a, body: await a.body })));
      const withPdf = answers.filter((a) => a.body.includes(kept)).map((a) => a.status);
      expect({ withPdf, urls: answers.map((a) => a.url) }).toMatchObject({ withPdf: [200] });
    } finally {
      await viewer.close();
    }
  });

  it('lists every study to report, 15 more at a click, and opens a study by UID on any page of its search', async () => {
    // 21 studies of one Patient ID; the oldest has no accession number, so the page finds it by the
    // Patient ID's search, whose first page holds the 15 newer ones.
    const target = await createStudy(t.db, {
      ...place,
      patient_id: 'RP-MANY',
      patient_name: 'MUITOS^ESTUDOS',
      accession_number: null,
      study_date: '2019-01-01',
    });
    for (let day = 1; day <= 20; day++) {
      await createStudy(t.db, {
        ...place,
        patient_id: 'RP-MANY',
        patient_name: 'MUITOS^ESTUDOS',
        study_date: `2020-01-${String(day).padStart(2, '0')}`,
      });
    }
    await page.goto(`${nginx.url}/reports`);
    const items = page.locator('#worklist li');
    await items.nth(14).waitFor();
    expect(await items.count()).toBe(15);
    await page.click('#worklist-more');
    await items.nth(20).waitFor();
    expect(await items.count()).toBe(21);
    await page.locator('#worklist-more').waitFor({ state: 'hidden' });
    await page.goto(`${nginx.url}/reports?uid=${target.study_instance_uid}`);
    await page.waitForURL(`${nginx.url}/reports?study=${target.id}`, { timeout: 30_000 });
    await page.locator('#patient').getByText('MUITOS, ESTUDOS').waitFor();
    expect(await page.textContent('#study-line')).toContain('01/01/2019');
  });

  it('discards the draft after asking: the API then has none and the study is to report again', async () => {
    const fresh = await createStudy(t.db, { ...place, patient_id: 'RP-DISCARD', patient_name: 'RASCUNHO^DESCARTADO' });
    await page.goto(`${nginx.url}/reports?study=${fresh.id}`);
    await page.locator('#patient').getByText('RASCUNHO, DESCARTADO').waitFor();
    expect(await page.locator('#discard').isHidden()).toBe(true);
    await page.fill('#findings', 'Texto que será descartado.');
    await saved(page, 1);
    await page.locator('#discard').waitFor({ state: 'visible' });
    const reports = async () =>
      (await t.http.get(`/api/studies/${fresh.id}/reports`, { token: await login(t.http, doctor.email) })).body;

    // Declined: the draft stays.
    page.once('dialog', (dialog) => void dialog.dismiss());
    await page.click('#discard');
    await page.waitForTimeout(500);
    expect(await reports()).toHaveLength(1);

    page.once('dialog', (dialog) => void dialog.accept());
    await page.click('#discard');
    await page.getByText('Draft discarded.').waitFor({ timeout: 20_000 });
    expect(await reports()).toEqual([]);
    expect((await t.db.query(`SELECT report_status FROM studies WHERE id = $1`, [fresh.id]))[0].report_status).toBe('pending');
    expect(await page.inputValue('#findings')).toBe('');
    expect(await page.locator('#discard').isHidden()).toBe(true);
    await page.locator('#worklist li', { hasText: 'RASCUNHO, DESCARTADO' }).waitFor();
  });
});
