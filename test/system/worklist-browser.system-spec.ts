/**
 * The doctors' worklist in a real browser, through the shipped nginx, a real Orthanc, the API and
 * the worker: a doctor signs in at /login, OHIF's study list (the home page) shows exactly their
 * unit's studies, a name search narrows it (also typed without accents, as the archive matches), a
 * study opens with its pixels; another unit's study is neither listed nor opened by its URL; after
 * sign-out the list is refused.
 *
 * Opening a study with the session (its WADO-RS requests) needs the validator to accept the session
 * (decisions.md section 3b, "Validation with a session"): those expectations follow that contract.
 */
import * as path from 'path';
import { Browser, BrowserContext, Page } from 'playwright-core';
import { TestApp } from '../support/app';
import { ARTIFACTS, refreshReadmePicture, skipTour, viewportImage, waitFor } from '../support/browser';
import { sendWithStorescu, writeStudy, WrittenStudy } from '../../scripts/stack/dicom';
import { createSuperAdminUser, createTenant, createUnit, createUser, TEST_PASSWORD, UserRow } from '../support/factories';
import { NginxInstance } from '../../scripts/stack/nginx';
import { delay } from '../../scripts/stack/orthanc';
import { BrowserStack, startBrowserStack } from '../support/stack';

jest.setTimeout(240_000);

interface Sent {
  study: WrittenStudy;
  /** As OHIF's list shows a PN: "FAMILY, GIVEN". */
  shown: string;
  instances: number;
}

interface DicomWebResponse {
  url: string;
  status: number;
  body?: unknown;
}

describe("The doctors' worklist in a browser: sign in, list, search, open, sign out", () => {
  let workDir: string;
  let stack: BrowserStack;
  let t: TestApp;
  let nginx: NginxInstance;
  let browser: Browser;
  let doctor: UserRow;
  let ours: Sent[];
  let theirs: Sent;
  let context: BrowserContext;
  let page: Page;
  const dicomWeb: DicomWebResponse[] = [];

  async function device(superToken: string, tenantId: string, unitId: string, name: string): Promise<string> {
    const aet = `${name}_${Math.random().toString(36).slice(2, 8)}`.toUpperCase();
    const res = await t.http.post('/api/admin/modalities', {
      token: superToken,
      body: { tenant_id: tenantId, unit_id: unitId, name: `CT ${name} ${aet}`, aet, ip_address: '127.0.0.1' },
    });
    expect(res.status).toBe(201);
    return aet;
  }

  async function sendStudy(
    aet: string,
    name: string,
    patientName: string,
    shown: string,
    studyDate: string,
    description: string,
    modality = 'CT',
  ): Promise<Sent> {
    const study = await writeStudy(path.join(workDir, name), {
      patientId: `WL-${name}`,
      patientName,
      studyDate,
      studyDescription: description,
      series: [{ modality, seriesNumber: 1, manufacturer: 'ACME', instances: 2, rows: 256, columns: 256 }],
    });
    await sendWithStorescu(study.files, { aet, port: stack.orthanc.dicomPort });
    return { study, shown, instances: 2 };
  }

  /** Until the index holds the study with all its instances (the search's instance count). */
  async function waitUntilIndexed(sent: Sent, superToken: string): Promise<void> {
    const deadline = Date.now() + 60_000;
    for (;;) {
      const res = await t.http.get(`/api/dicom-web/studies?StudyInstanceUID=${sent.study.studyInstanceUid}`, {
        token: superToken,
      });
      const [found] = JSON.parse(res.raw.toString() || '[]') as Array<Record<string, { Value?: number[] }>>;
      if (found?.['00201208']?.Value?.[0] === sent.instances) return;
      if (Date.now() > deadline) throw new Error(`study ${sent.study.studyInstanceUid} not indexed within 60 s`);
      await delay(250);
    }
  }

  const listedUids = (response: DicomWebResponse | undefined): string[] =>
    ((response?.body ?? []) as Array<Record<string, { Value: string[] }>>).map((s) => s['0020000D'].Value[0]);
  /** The study-list searches the page made (not the viewer's check of one study). */
  const searches = () => dicomWeb.filter((r) => /\/dicom-web\/studies\?/.test(r.url) && !/StudyInstanceUID=/.test(r.url));

  /** The filter box of the study list's column headed `label` (the filter row under the headers). */
  async function filterBox(label: string) {
    // OHIF shows or drops its columns by the list's width, after a resize too.
    const deadline = Date.now() + 5_000;
    let headers: string[] = [];
    do {
      headers = (await page.locator('table th').allTextContents()).map((text) => text.trim());
    } while (!headers.includes(label) && Date.now() < deadline && (await delay(200), true));
    const column = headers.indexOf(label);
    expect({ label, headers, column: column >= 0 }).toEqual({ label, headers, column: true });
    return page.locator(`tr[data-filter-row] > td:nth-child(${column + 1}) input`);
  }

  /** Types `text` into a column's filter box: the search it makes, once answered. */
  async function searchBy(label: string, text: string): Promise<DicomWebResponse> {
    const before = searches().length;
    await (await filterBox(label)).fill(text);
    await waitFor(() => searches().length > before && searches()[searches().length - 1].body !== undefined, 20_000);
    return searches()[searches().length - 1];
  }

  /** OHIF's "Reset" of the filter row: the whole list again. */
  async function resetFilters(): Promise<void> {
    await page.getByRole('button', { name: 'Reset filters' }).click();
    for (const sent of ours) await page.getByText(sent.shown).first().waitFor({ timeout: 10_000 });
  }

  /** The list as OHIF shows it: the first study and not the second. */
  async function showsOnlyTheFirst(): Promise<void> {
    await page.getByText(ours[0].shown).first().waitFor({ timeout: 10_000 });
    await page.getByText(ours[1].shown).waitFor({ state: 'detached', timeout: 10_000 });
  }

  beforeAll(async () => {
    stack = await startBrowserStack('worklist');
    ({ t, nginx, browser, workDir } = stack);

    const superToken = (await createSuperAdminUser(t.db, t.http)).token;
    const tenant = await createTenant(t.db, { name: `Clinic worklist ${Date.now()}` });
    const unit = await createUnit(t.db, tenant.id);
    const otherUnit = await createUnit(t.db, tenant.id);
    doctor = await createUser(t.db, { tenant_id: tenant.id, unit_id: unit.id, name: 'Dr. Worklist' });
    const [aet, otherAet] = [
      await device(superToken, tenant.id, unit.id, 'OURS'),
      await device(superToken, tenant.id, otherUnit.id, 'THEIRS'),
    ];
    ours = [
      await sendStudy(aet, 'A1', 'SILVA^JOÃO', 'SILVA, JOÃO', '20240310', 'TC crânio sem contraste'),
      await sendStudy(aet, 'A2', 'SOUZA^MARIA', 'SOUZA, MARIA', '20240105', 'MR knee right', 'MR'),
    ];
    theirs = await sendStudy(otherAet, 'B1', 'PEREIRA^ANA', 'PEREIRA, ANA', '20240201', 'CT chest low dose');
    for (const sent of [...ours, theirs]) await waitUntilIndexed(sent, superToken);

    context = await browser.newContext({ viewport: { width: 1280, height: 800 } });
    page = await context.newPage();
    page.on('response', async (response) => {
      if (!response.url().includes('/dicom-web/')) return;
      const entry: DicomWebResponse = { url: response.url(), status: response.status() };
      dicomWeb.push(entry);
      if (/\/dicom-web\/studies\?/.test(response.url()) && response.status() === 200) {
        entry.body = await response.json().catch(() => undefined);
      }
    });
  });

  afterAll(async () => {
    await context?.close();
    await stack?.close();
  });

  it('sends a visitor without a session from / to the sign-in page', async () => {
    await page.goto(`${nginx.url}/`);
    await page.waitForURL(`${nginx.url}/login`);
    await page.locator('#email').waitFor();
  });

  it("shows the API's message for a wrong password", async () => {
    await page.fill('#email', doctor.email);
    await page.fill('#password', 'not-the-password');
    await page.click('#submit');
    await page.locator('#error').waitFor({ state: 'visible' });
    expect(await page.textContent('#error')).toBe('Credenciais inválidas.');
    await page.screenshot({ path: path.join(ARTIFACTS, 'worklist-sign-in.png') });
    expect(page.url()).toBe(`${nginx.url}/login`);
  });

  it("signs the doctor in and shows exactly their unit's studies, newest first", async () => {
    await page.fill('#password', TEST_PASSWORD);
    await page.click('#submit');
    await page.waitForURL(`${nginx.url}/`);
    for (const sent of ours) await page.getByText(sent.shown).first().waitFor({ timeout: 30_000 });
    await skipTour(page);
    expect(await page.getByText(theirs.shown).count()).toBe(0);

    const [search] = searches();
    expect(search.status).toBe(200);
    expect(listedUids(search)).toEqual(ours.map((s) => s.study.studyInstanceUid));

    await page.waitForTimeout(500);
    await page.screenshot({ path: path.join(ARTIFACTS, 'worklist.png') });
    await refreshReadmePicture('worklist.png');
  });

  it('narrows the list with a name search (a fragment, in lower case)', async () => {
    const before = searches().length;
    // The filter row's first box is the patient name's (the date boxes have ids, the modality one a label).
    const input = page.locator('table input:not([id]):not([aria-label])').first();
    await input.fill('silva');
    await waitFor(() => searches().length > before && searches()[searches().length - 1].body !== undefined, 20_000);
    const last = searches()[searches().length - 1];
    expect(decodeURIComponent(last.url)).toContain('PatientName=*silva*');
    expect(listedUids(last)).toEqual([ours[0].study.studyInstanceUid]);
    await page.getByText(ours[1].shown).waitFor({ state: 'detached', timeout: 10_000 });
    await page.getByText(ours[0].shown).first().waitFor({ timeout: 10_000 });
    await page.screenshot({ path: path.join(ARTIFACTS, 'worklist-search.png') });
  });

  // OHIF's study list would filter the archive's answer again in the browser (TanStack's
  // includesString: case-insensitive, but accents and wildcards as typed), hiding the rows the
  // archive found for "joao" (JOÃO), "cranio" (crânio) or "wl?a1" (WL-A1): app-config.js leaves the
  // text filters to the archive. Each test ends with OHIF's "Reset", the whole list again.
  /** What is typed in a filter box finds the first study only, at the archive and in OHIF's list. */
  const findsTheFirst = async (box: string, typed: string, asked: string, screenshot?: string) => {
    try {
      const last = await searchBy(box, typed);
      expect(decodeURIComponent(last.url)).toContain(asked);
      expect(listedUids(last)).toEqual([ours[0].study.studyInstanceUid]);
      await showsOnlyTheFirst();
      if (screenshot) await page.screenshot({ path: path.join(ARTIFACTS, screenshot) });
    } finally {
      await resetFilters();
    }
  };

  it('finds an accented name from a fragment typed without accents, in lower case', () =>
    findsTheFirst('Patient', 'joao', 'PatientName=*joao*', 'worklist-search-unaccented.png'));

  it('finds a description typed without accents', () => findsTheFirst('Description', 'cranio', 'StudyDescription=*cranio*'));

  it("finds an MRN with QIDO's one-character wildcard, as the archive matches it", async () => {
    // OHIF drops its MRN column from a list this narrow (1280 px with the preview panel open).
    await page.setViewportSize({ width: 1920, height: 800 });
    try {
      // "wl?a1" is WL-A1 at the archive (`?`: one character, ids case-insensitively).
      await findsTheFirst('MRN', 'wl?a1', '00100020=*wl?a1*');
    } finally {
      await page.setViewportSize({ width: 1280, height: 800 });
    }
  });

  // Needs the validator to accept the session (issue 15, item 2): until then its WADO-RS requests get 401.
  it('opens a study of the list and renders its pixels', async () => {
    const uid = ours[0].study.studyInstanceUid;
    // A double click on a row launches the default workflow (the basic viewer).
    await page.locator('tr', { hasText: ours[0].shown }).dblclick();
    await page.waitForURL(/\/viewer\?/);
    expect(page.url()).toContain(uid);
    const image = await viewportImage(page, 60_000);
    await skipTour(page);
    await page.screenshot({ path: path.join(ARTIFACTS, 'worklist-viewer.png') });
    expect(image).not.toBeNull();
    const ofStudy = dicomWeb.filter((r) => r.url.includes(uid));
    expect(ofStudy.filter((r) => r.status !== 200)).toEqual([]);
    expect(ofStudy.some((r) => /\/frames\/|\/rendered|\/bulkdata|\/metadata/.test(r.url))).toBe(true);
  });

  it("neither lists nor opens another unit's study by its URL", async () => {
    const uid = theirs.study.studyInstanceUid;
    const from = dicomWeb.length;
    await page.goto(`${nginx.url}/viewer?StudyInstanceUIDs=${uid}`);
    // OHIF first asks the study search for the study: the answer is empty, so "not found".
    await waitFor(() => dicomWeb.slice(from).some((r) => r.url.includes(uid)), 30_000);
    expect(await viewportImage(page, 5_000)).toBeNull();
    await page.screenshot({ path: path.join(ARTIFACTS, 'worklist-other-unit.png') });
    const naming = dicomWeb.slice(from).filter((r) => r.url.includes(uid));
    const checks = naming.filter((r) => /\/dicom-web\/studies\?/.test(r.url));
    expect(checks.length).toBeGreaterThan(0);
    expect(checks.map((r) => [r.status, r.body])).toEqual(checks.map(() => [200, []]));
    expect(naming.filter((r) => !checks.includes(r) && r.status === 200)).toEqual([]);
    // Asked for directly with the session, the image server's answers are refused by the validation
    // (a session outside its scope: 403; needs the validator to accept the session, issue 15 item 2).
    const direct = await page.evaluate(async (studyUid) => (await fetch(`/dicom-web/studies/${studyUid}/series`)).status, uid);
    expect(direct).toBe(403);
    const listed = await page.evaluate(
      async (studyUid) => (await fetch(`/dicom-web/studies?StudyInstanceUID=${studyUid}`)).json(),
      uid,
    );
    expect(listed).toEqual([]);
  });

  it('signs out: the list is refused and / leads to the sign-in page again', async () => {
    await page.goto(`${nginx.url}/`);
    await page.getByText(ours[0].shown).first().waitFor({ timeout: 30_000 });
    await page.click('#pacs-sign-out');
    await page.waitForURL(`${nginx.url}/login`);
    const refused = await page.evaluate(async () => {
      const response = await fetch('/dicom-web/studies');
      return { status: response.status, body: await response.json() };
    });
    expect(refused).toEqual({ status: 401, body: { message: 'Unauthenticated.' } });
    await page.goto(`${nginx.url}/`);
    await page.waitForURL(`${nginx.url}/login`);
  });
});
