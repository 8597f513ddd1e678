/**
 * `npm run bench:ingest [-- --instances 1000 --series 4 --size 128 --no-fallback --keep]`
 *
 * Ingestion of one large generated study against a real Orthanc (the shipped configuration, as the
 * system tests run it): the study is sent once with storescu, then the webhook is posted to the API
 * and the clock runs until the study is complete in PostgreSQL (every instance, every thumbnail).
 * The API and one worker run in this process, so every HTTP call the worker makes to Orthanc is
 * counted by an axios interceptor on its ImgsrvClient.
 *
 * Two scenarios: Orthanc with the DICOMweb plugin (Rows/Columns/SliceThickness by one QIDO-RS call
 * per series), and without it (the per-instance fallback), then a re-run of the webhook on the
 * unchanged study. Everything runs on a database and queue prefix of its own, dropped at the end
 * (unless --keep). Figures go to stdout and bench/results/ingest-<time>.json.
 */
import { INestApplicationContext } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { NestFastifyApplication } from '@nestjs/platform-fastify';
import { getQueueToken } from '@nestjs/bull';
import { getDataSourceToken } from '@nestjs/typeorm';
import type { Queue } from 'bull';
import { Command } from 'commander';
import { randomBytes } from 'crypto';
import { mkdirSync, promises as fs, writeFileSync } from 'fs';
import Redis from 'ioredis';
import * as os from 'os';
import { join } from 'path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { createApiApp } from '../src/app.factory';
import { WorkerModule } from '../src/app.module';
import { INDEX_QUEUE, STUDY_QUEUE } from '../src/common/queues/queues.module';
import { loadConfig } from '../src/config/environment';
import { openDataSource } from '../src/database/data-source-options';
import { ImgsrvClient } from '../src/imgsrv/imgsrv.client';
import { sendWithStorescu, writeStudy, WrittenStudy } from '../test/support/dicom';
import { basicAuth, delay, OrthancInstance, startOrthanc } from '../test/support/orthanc';
import { databaseUrl, quoteIdent } from './lib/db';

interface Options {
  instances: number;
  series: number;
  size: number;
  fallback: boolean;
  keep: boolean;
}

interface Scenario {
  name: string;
  dicomWeb: boolean;
  rerun: boolean;
}

interface Figures {
  scenario: string;
  instances: number;
  series: number;
  webhookToListedMs: number;
  webhookToCompleteMs: number;
  studyJobMs: number;
  indexJobMs: number;
  indexPhasesMs: Record<string, number>;
  orthancCalls: number;
  callsByKind: Record<string, number>;
  instancesPerSecond: number;
  indexInstancesPerSecond: number;
}

function parseOptions(): Options {
  return new Command()
    .option('--instances <n>', 'instances in the study', (v) => Number(v), 1000)
    .option('--series <n>', 'series in the study', (v) => Number(v), 4)
    .option('--size <px>', 'rows and columns of every image', (v) => Number(v), 128)
    .option('--no-fallback', 'skip the scenario without the DICOMweb plugin')
    .option('--keep', 'keep the database and the generated files', false)
    .parse(process.argv)
    .opts<Options>();
}

/** `/instances/<id>/rendered` -> `/instances/{id}/rendered`, to count calls by kind. */
function kindOf(url: string): string {
  const path = url.split('?')[0];
  return path
    .replace(/\/dicom-web\/studies\/[^/]+\/series\/[^/]+\/instances/, '/dicom-web/studies/{uid}/series/{uid}/instances')
    .replace(/\/(studies|series|instances)\/[0-9a-f]{8}(-[0-9a-f]{8}){4}/g, '/$1/{id}');
}

async function waitFor<T>(what: string, probe: () => Promise<T | null | undefined | false>, timeoutMs: number): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await delay(25);
  }
}

async function main(): Promise<void> {
  const options = parseOptions();
  const runId = `${Date.now().toString(36)}${randomBytes(2).toString('hex')}`;
  const database = `pacs_bench_ingest_${runId}`;
  const env = {
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl(database),
    QUEUE_PREFIX: `pacs_bench_ingest_${runId}`,
    JWT_SECRET: randomBytes(32).toString('hex'),
    WEBHOOK_SECRET: randomBytes(16).toString('hex'),
    RECONCILE_INTERVAL: '0',
    WORKER_CONCURRENCY: '2',
    LOG_LEVEL: 'error',
    MIGRATIONS_RUN: 'true',
  };
  Object.assign(process.env, env);
  const workDir = await fs.mkdtemp(join(os.tmpdir(), 'pacs-bench-ingest-'));

  console.log(
    `Generating a ${options.instances}-instance study (${options.series} series, ${options.size}x${options.size} 16-bit)...`,
  );
  const perSeries = Math.ceil(options.instances / options.series);
  const study = await writeStudy(join(workDir, 'study'), {
    patientId: `BENCH-${runId}`,
    patientName: 'BENCH^INGEST',
    studyDate: '20240115',
    series: Array.from({ length: options.series }, (_, i) => ({
      modality: 'CT',
      seriesNumber: i + 1,
      instances: Math.min(perSeries, options.instances - i * perSeries),
      rows: options.size,
      columns: options.size,
      sliceThickness: 1,
    })).filter((s) => s.instances > 0),
  });

  const migrated = await openDataSource(env.DATABASE_URL, { migrate: true });
  await migrated.destroy();

  const scenarios: Scenario[] = [{ name: 'DICOMweb plugin', dicomWeb: true, rerun: true }];
  if (options.fallback) scenarios.push({ name: 'no DICOMweb plugin (per-instance fallback)', dicomWeb: false, rerun: false });

  const results: Figures[] = [];
  const orthancs: OrthancInstance[] = [];
  try {
    let storage: string | undefined;
    for (const scenario of scenarios) {
      const { figures, orthanc } = await runScenario(scenario, study, orthancs, storage);
      storage ??= join(orthanc.dir, 'db');
      results.push(...figures);
    }
  } catch (error) {
    console.error('benchmark failed:', error);
    process.exitCode = 1;
  } finally {
    for (const orthanc of orthancs.reverse()) await orthanc.destroy();
    if (!options.keep) {
      await fs.rm(workDir, { recursive: true, force: true });
      await dropEverything(env.DATABASE_URL, database, env.QUEUE_PREFIX);
    }
  }

  if (process.exitCode) return;
  console.log('\nResults');
  console.table(
    results.map((r) => ({
      scenario: r.scenario,
      'webhook -> listed (ms)': r.webhookToListedMs,
      'webhook -> complete (ms)': r.webhookToCompleteMs,
      'study job (ms)': r.studyJobMs,
      'index job (ms)': r.indexJobMs,
      'Orthanc calls': r.orthancCalls,
      'instances/s (end to end)': r.instancesPerSecond,
      'instances/s (index job)': r.indexInstancesPerSecond,
    })),
  );
  for (const r of results) {
    const phases = Object.entries(r.indexPhasesMs).map(([phase, ms]) => `${phase} ${ms} ms`).join(', ');
    console.log(`\n${r.scenario}\n  index job phases: ${phases}\n  Orthanc calls:`);
    for (const [kind, count] of Object.entries(r.callsByKind).sort((a, b) => b[1] - a[1])) {
      console.log(`  ${String(count).padStart(5)}  GET ${kind}`);
    }
  }
  const resultsDir = join(__dirname, 'results');
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `ingest-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify({ options, machine: { cpus: os.cpus().length, node: process.version }, results }, null, 2),
  );
  console.log(`\nWritten to ${file}`);
}

/**
 * One scenario on its own Orthanc. `storage`: the storage folder of an earlier (stopped) Orthanc that
 * already holds the study, so it is sent only once.
 */
async function runScenario(
  scenario: Scenario,
  study: WrittenStudy,
  started: OrthancInstance[],
  storage?: string,
): Promise<{ figures: Figures[]; orthanc: OrthancInstance }> {
  console.log(`\n== ${scenario.name}`);
  const orthanc = await startOrthanc({
    stableAge: 1,
    // Posts nowhere: the benchmark posts the webhook itself, to start the clock exactly.
    webhookUrl: 'http://127.0.0.1:9/api/imgsrv/webhook',
    extraConfig: {
      ...(scenario.dicomWeb ? {} : { Plugins: [] }),
      ...(storage ? { StorageDirectory: storage, IndexDirectory: storage } : {}),
    },
  });
  started.push(orthanc);
  let api: NestFastifyApplication | undefined;
  let worker: INestApplicationContext | undefined;
  try {
    Object.assign(process.env, {
      IMGSRV_URL: orthanc.url,
      IMGSRV_USERNAME: orthanc.username,
      IMGSRV_PASSWORD: orthanc.password,
    });
    const config = loadConfig();
    if (!storage) {
      const sentAt = Date.now();
      await sendWithStorescu(study.files, { aet: 'BENCH_CT', port: orthanc.dicomPort, chunkSize: 500 });
      console.log(`sent ${study.files.length} instances with storescu in ${Date.now() - sentAt} ms`);
    }
    const imgsrvStudyId = await lookupStudy(orthanc, study.studyInstanceUid);
    await waitFor('Orthanc to call the study stable', async () => (await orthancJson(orthanc, `/studies/${imgsrvStudyId}`)).IsStable, 60_000);

    api = await createApiApp(config);
    await api.listen(0, '127.0.0.1');
    const apiUrl = await api.getUrl();
    worker = await NestFactory.createApplicationContext(WorkerModule, { logger: ['error'] });
    worker.enableShutdownHooks();
    const db = worker.get<DataSource>(getDataSourceToken());
    await db.query(
      `WITH t AS (INSERT INTO tenants (name, slug) VALUES ('Bench clinic', 'bench-clinic')
                  ON CONFLICT DO NOTHING RETURNING id),
            u AS (INSERT INTO units (tenant_id, name, slug) SELECT id, 'Bench unit', 'bench-unit' FROM t RETURNING id, tenant_id)
       INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address)
       SELECT tenant_id, id, 'Bench CT', 'BENCH_CT', '127.0.0.1' FROM u`,
    );

    // Orthanc derives its ids from the DICOM UIDs: start each scenario from an empty archive.
    await db.query(`DELETE FROM studies WHERE imgsrv_study_id = $1`, [imgsrvStudyId]);

    const calls: string[] = [];
    worker.get(ImgsrvClient).http.interceptors.request.use((request) => {
      calls.push(kindOf(request.url ?? ''));
      return request;
    });

    const figures: Figures[] = [];
    const runs = scenario.rerun ? ['first ingestion', 'webhook again, study unchanged'] : ['first ingestion'];
    for (const run of runs) {
      calls.length = 0;
      const previous = await indexedAt(db, imgsrvStudyId);
      const started = Date.now();
      const answer = await fetch(`${apiUrl}/api/imgsrv/webhook`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', 'x-webhook-secret': config.WEBHOOK_SECRET },
        body: JSON.stringify({ ID: imgsrvStudyId }),
      });
      if (answer.status !== 200) throw new Error(`webhook answered ${answer.status}: ${await answer.text()}`);
      const listedAt = await waitFor(
        'the study to be listed',
        async () => {
          const [row] = await db.query(`SELECT updated_at FROM studies WHERE imgsrv_study_id = $1`, [imgsrvStudyId]);
          return row && (!previous || row.updated_at.getTime() > previous.getTime()) ? Date.now() : null;
        },
        60_000,
      );
      await waitFor(
        'the study to be complete',
        async () => {
          const now = await indexedAt(db, imgsrvStudyId);
          if (!now || (previous && now.getTime() <= previous.getTime())) return false;
          const [counts] = await db.query(
            `SELECT (SELECT count(*)::int FROM instances i JOIN series s ON s.id = i.series_id WHERE s.study_id = st.id) AS instances,
                    (SELECT count(*)::int FROM thumbnails th WHERE th.study_id = st.id) AS thumbnails
             FROM studies st WHERE st.imgsrv_study_id = $1`,
            [imgsrvStudyId],
          );
          return counts.instances === study.files.length && counts.thumbnails === study.seriesUids.length + 1;
        },
        300_000,
      );
      const completeMs = Date.now() - started;
      const durations = await jobDurations(worker, imgsrvStudyId);
      const byKind: Record<string, number> = {};
      for (const kind of calls) byKind[kind] = (byKind[kind] ?? 0) + 1;
      const name = `${scenario.name}: ${run}`;
      figures.push({
        scenario: name,
        instances: study.files.length,
        series: study.seriesUids.length,
        webhookToListedMs: listedAt - started,
        webhookToCompleteMs: completeMs,
        studyJobMs: durations.study,
        indexJobMs: durations.index,
        indexPhasesMs: durations.phases,
        orthancCalls: calls.length,
        callsByKind: byKind,
        instancesPerSecond: Math.round((study.files.length / completeMs) * 1000),
        indexInstancesPerSecond: Math.round((study.files.length / Math.max(1, durations.index)) * 1000),
      });
      console.log(`${name}: complete in ${completeMs} ms with ${calls.length} calls to Orthanc`);
    }
    return { figures, orthanc };
  } finally {
    await worker?.close();
    await api?.close();
    // Stopped, not deleted: the next scenario reads the same storage.
    await orthanc.stop();
  }
}

async function indexedAt(db: DataSource, imgsrvStudyId: string): Promise<Date | null> {
  const [row] = await db.query(`SELECT indexed_at FROM imgsrv_study_sync WHERE imgsrv_study_id = $1`, [imgsrvStudyId]);
  return row?.indexed_at ?? null;
}

/**
 * Run time of the latest finished study job and index job of the study, from Bull's own
 * timestamps, and the index job's own account of its phases.
 */
async function jobDurations(
  worker: INestApplicationContext,
  imgsrvStudyId: string,
): Promise<{ study: number; index: number; phases: Record<string, number> }> {
  const latest = async (queueName: string) => {
    const jobs = (await worker.get<Queue>(getQueueToken(queueName)).getJobs(['completed'])).filter(
      (job) => job?.data?.imgsrvStudyId === imgsrvStudyId && job.finishedOn,
    );
    jobs.sort((a, b) => (b.finishedOn ?? 0) - (a.finishedOn ?? 0));
    return jobs[0];
  };
  const runTime = (job?: { finishedOn?: number; processedOn?: number }) => (job ? (job.finishedOn ?? 0) - (job.processedOn ?? 0) : 0);
  const index = await latest(INDEX_QUEUE);
  return { study: runTime(await latest(STUDY_QUEUE)), index: runTime(index), phases: index?.returnvalue?.timingsMs ?? {} };
}

async function orthancJson(orthanc: OrthancInstance, path: string): Promise<any> {
  const response = await fetch(`${orthanc.url}${path}`, { headers: { Authorization: basicAuth(orthanc.username, orthanc.password) } });
  return response.json();
}

async function lookupStudy(orthanc: OrthancInstance, studyInstanceUid: string): Promise<string> {
  const response = await fetch(`${orthanc.url}/tools/lookup`, {
    method: 'POST',
    headers: { Authorization: basicAuth(orthanc.username, orthanc.password) },
    body: studyInstanceUid,
  });
  const hit = ((await response.json()) as Array<{ ID: string; Type: string }>).find((entry) => entry.Type === 'Study');
  if (!hit) throw new Error('the study did not reach Orthanc');
  return hit.ID;
}

async function dropEverything(url: string, database: string, prefix: string): Promise<void> {
  const admin = new URL(url);
  admin.pathname = '/postgres';
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`).catch(() => undefined);
  await client.end();
  const redis = new Redis(process.env.REDIS_URL ?? 'redis://127.0.0.1:6379');
  let cursor = '0';
  do {
    const [next, keys] = await redis.scan(cursor, 'MATCH', `${prefix}:*`, 'COUNT', 1000);
    if (keys.length) await redis.del(...keys);
    cursor = next;
  } while (cursor !== '0');
  await redis.quit();
}

main().then(
  () => process.exit(process.exitCode ?? 0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
