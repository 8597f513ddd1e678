/**
 * The headless browser of the system tests: Debian's chromium driven by playwright-core (no browser
 * download), and what the tests read from OHIF's page.
 */
import { existsSync, promises as fs } from 'fs';
import * as path from 'path';
import { Page } from 'playwright-core';
import sharp from 'sharp';
import { delay } from '../../scripts/stack/orthanc';
import { ROOT } from '../../scripts/stack/processes';

/** Where the browser tests leave their screenshots (git-ignored). */
export const ARTIFACTS = path.join(ROOT, 'test-artifacts');
/** The pictures of the README and docs/. */
const DOCS = path.join(ROOT, 'docs');

/**
 * Copies the screenshot `test-artifacts/<name>` to `docs/<name>`, the docs' picture: on request
 * only (`UPDATE_SCREENSHOTS=1`) or when it is missing, so that test runs leave the tree clean.
 */
export async function refreshReadmePicture(name: string): Promise<void> {
  const picture = path.join(DOCS, name);
  if (process.env.UPDATE_SCREENSHOTS === '1' || !existsSync(picture)) {
    await fs.mkdir(DOCS, { recursive: true });
    await fs.copyFile(path.join(ARTIFACTS, name), picture);
  }
}

export const CHROMIUM = process.env.CHROMIUM_BIN ?? '/usr/bin/chromium';
export const CHROMIUM_ARGS = [
  '--headless',
  '--no-sandbox',
  '--disable-gpu',
  '--disable-quic',
  '--no-first-run',
  '--disable-background-networking',
  '--disable-component-update',
  '--disable-sync',
];

/** What the viewport's canvas holds, read from its pixels (not a page screenshot: no overlays). */
export interface CanvasImage {
  png: Buffer;
  width: number;
  height: number;
}

/** The first viewport canvas with a non-blank image, polled; null when none shows up in time. */
export async function viewportImage(page: Page, timeoutMs: number): Promise<CanvasImage | null> {
  const deadline = Date.now() + timeoutMs;
  while (Date.now() < deadline) {
    const dataUrls: string[] = await page.evaluate(() =>
      Array.from(document.querySelectorAll('canvas.cornerstone-canvas'))
        .map((canvas) => (canvas as HTMLCanvasElement).toDataURL('image/png'))
        .filter((url) => url.startsWith('data:image/png')),
    );
    for (const url of dataUrls) {
      const png = Buffer.from(url.slice(url.indexOf(',') + 1), 'base64');
      const { width, height } = await sharp(png).metadata();
      const stats = await sharp(png).removeAlpha().stats();
      if (width && height && stats.channels[0].max - stats.channels[0].min > 100) return { png, width, height };
    }
    await delay(500);
  }
  return null;
}

/** OHIF's first-visit tour covers the viewport: dismissed for the screenshot. */
export async function skipTour(page: Page): Promise<void> {
  const skip = page.getByText('Skip all', { exact: true });
  if (await skip.isVisible().catch(() => false)) {
    await skip.click();
    await page.waitForTimeout(300);
  }
}

export async function waitFor(probe: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!probe()) {
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await delay(200);
  }
}
