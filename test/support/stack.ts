/**
 * The whole local stack for the browser tests, in this process where it can be: the API (listening
 * on a port), the queue worker's module, a real Orthanc with the shipped configuration whose webhook
 * reaches the API, the shipped nginx with the viewer, and Debian's chromium.
 */
import { INestApplicationContext } from '@nestjs/common';
import { Test, TestingModule } from '@nestjs/testing';
import { existsSync, promises as fs } from 'fs';
import { AddressInfo } from 'net';
import * as os from 'os';
import * as path from 'path';
import { Browser, chromium } from 'playwright-core';
import { WorkerModule } from '../../src/app.module';
import { APP_CONFIG } from '../../src/config/config.module';
import { AppConfig } from '../../src/config/environment';
import { nestLogLevels } from '../../src/config/log-levels';
import { createTestApp, TestApp } from './app';
import { ARTIFACTS, CHROMIUM, CHROMIUM_ARGS } from './browser';
import { NginxInstance, startNginx, VIEWER_ROOT } from '../../scripts/stack/nginx';
import { getFreePort, OrthancInstance, startOrthanc } from '../../scripts/stack/orthanc';

export interface BrowserStack {
  t: TestApp;
  orthanc: OrthancInstance;
  nginx: NginxInstance;
  browser: Browser;
  /** A fresh temporary folder for the run's files (generated studies), removed by `close`. */
  workDir: string;
  close(): Promise<void>;
}

/**
 * `name` keeps the run's Redis prefix apart from other test files' and names its temporary folder;
 * test-artifacts/ (the screenshots) is created too.
 */
export async function startBrowserStack(name: string): Promise<BrowserStack> {
  if (!existsSync(path.join(VIEWER_ROOT, 'index.html'))) {
    throw new Error(`the OHIF viewer is not installed in ${VIEWER_ROOT}: run \`node viewer/install.js\``);
  }
  if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium`);

  const [apiPort, orthancHttp, orthancDicom] = await Promise.all([getFreePort(), getFreePort(), getFreePort()]);
  const env = {
    QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}_${name}`,
    IMGSRV_URL: `http://127.0.0.1:${orthancHttp}`,
    IMGSRV_USERNAME: 'svc',
    IMGSRV_PASSWORD: `svc-${name}-password`,
    RECONCILE_INTERVAL: '0',
    TRUST_PROXY: '127.0.0.1',
  };
  const t = await createTestApp(env);
  await t.app.listen(apiPort, '127.0.0.1');
  // The worker process's module, in this process (it registers no passport strategy).
  const workerRef = await Test.createTestingModule({ imports: [WorkerModule] })
    .overrideProvider(APP_CONFIG)
    .useValue(t.config)
    .compile();
  const worker: INestApplicationContext = await workerRef.init();
  const orthanc = await startOrthanc({
    username: env.IMGSRV_USERNAME,
    password: env.IMGSRV_PASSWORD,
    httpPort: orthancHttp,
    dicomPort: orthancDicom,
    stableAge: 2,
    webhookUrl: `http://127.0.0.1:${apiPort}/api/imgsrv/webhook`,
    webhookSecret: t.config.WEBHOOK_SECRET,
  });
  const nginx = await startNginx({
    apiPort: (t.app.getHttpServer().address() as AddressInfo).port,
    orthancPort: orthanc.httpPort,
    orthancUser: orthanc.viewerUsername,
    orthancPassword: orthanc.viewerPassword,
  });
  const browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: CHROMIUM_ARGS });
  const workDir = await fs.mkdtemp(path.join(os.tmpdir(), `pacs-${name}-`));
  await fs.mkdir(ARTIFACTS, { recursive: true });
  return {
    t,
    orthanc,
    nginx,
    browser,
    workDir,
    close: async () => {
      await browser.close();
      await nginx.stop();
      await worker.close();
      await t.close();
      await orthanc.destroy();
      await fs.rm(workDir, { recursive: true, force: true });
    },
  };
}

/**
 * A real Orthanc whose webhook reaches the API (signed with the environment's WEBHOOK_SECRET), and
 * the API listening on a free loopback port (`apiUrl`); `env` adds to the test app's environment
 * (its queue prefix, the reconciler's interval, ...). The ingestion system tests' stack, without
 * the worker: each starts as many as it needs with `startWorkerModule`.
 */
export async function startOrthancAndApi(options: {
  stableAge: number;
  env: Record<string, string>;
}): Promise<{ t: TestApp; orthanc: OrthancInstance; apiUrl: string }> {
  const apiPort = await getFreePort();
  const apiUrl = `http://127.0.0.1:${apiPort}`;
  const orthanc = await startOrthanc({
    stableAge: options.stableAge,
    webhookUrl: `${apiUrl}/api/imgsrv/webhook`,
    webhookSecret: process.env.WEBHOOK_SECRET,
  });
  let t: TestApp | undefined;
  try {
    t = await createTestApp({
      IMGSRV_URL: orthanc.url,
      IMGSRV_USERNAME: orthanc.username,
      IMGSRV_PASSWORD: orthanc.password,
      ...options.env,
    });
    await t.app.listen(apiPort, '127.0.0.1');
    return { t, orthanc, apiUrl };
  } catch (error) {
    // The caller never sees what was started: stopped here.
    await t?.close().catch(() => undefined);
    await orthanc.destroy();
    throw error;
  }
}

/** The worker process's module in this process, on `config`, logging at its levels; started. */
export async function startWorkerModule(config: AppConfig): Promise<TestingModule> {
  const moduleRef = await Test.createTestingModule({ imports: [WorkerModule] })
    .overrideProvider(APP_CONFIG)
    .useValue(config)
    .compile();
  moduleRef.useLogger(nestLogLevels(config));
  await moduleRef.init();
  return moduleRef;
}
