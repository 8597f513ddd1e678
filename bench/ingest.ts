/**
 * `npm run bench:ingest [-- --parts nodelay,e2e,index --index sqlite|postgresql --instances 1000 --series 4
 *   --size 128 --no-fallback --e2e-instances 500 --devices 4 --stable-age 10 --keep
 *   --nodelay-sides neither,orthanc,storescu,both --lua docker/orthanc/webhook.lua,... --orthanc-config '{"Key":1}']`
 *
 * Three parts, each on Orthancs of its own (`--index postgresql`: Orthanc's PostgreSQL index plugin on a
 * database of its own on the local server, dropped after, instead of its SQLite file):
 *
 * - `nodelay`: storescu sends 300 CT slices of 128 KB in one association, with TCP_NODELAY=1
 *   (scripts/dicom-network-env.js) on neither side, Orthanc's only, storescu's only, both.
 * - `e2e`: from the first byte a device sends to "listed" (the study in GET /api/studies) and to
 *   "complete with thumbnails", through the real webhook of the shipped Lua script with the production
 *   StableAge (10 s, shown apart: it is a wait, not work): one device sending a 500-slice CT, then four
 *   devices each sending one at once.
 * - `index`: ingestion of one large generated study against a real Orthanc (the shipped
 *   configuration, as the system tests run it): the study is sent once with storescu, then the webhook
 *   is posted to the API and the clock runs until the study is complete in PostgreSQL (every instance,
 *   every thumbnail).
 *
 * The API and one worker run in this process, so every HTTP call the worker makes to Orthanc is
 * counted by an axios interceptor on its ImgsrvClient. The index part has two scenarios: Orthanc with the DICOMweb plugin (Rows/Columns/SliceThickness by one QIDO-RS call
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
import * as bcrypt from 'bcryptjs';
import { Command } from 'commander';
import { randomBytes } from 'crypto';
import { mkdirSync, promises as fs, writeFileSync } from 'fs';
import Redis from 'ioredis';
import * as os from 'os';
import { join, resolve } from 'path';
import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { createApiApp } from '../src/app.factory';
import { WorkerModule } from '../src/app.module';
import { INDEX_QUEUE, STUDY_QUEUE } from '../src/common/queues/queues.module';
import { loadConfig } from '../src/config/environment';
import { openDataSource } from '../src/database/data-source-options';
import { ImgsrvClient } from '../src/imgsrv/imgsrv.client';
import { sendWithStorescu, StudySpec, writeStudy, WrittenStudy } from '../scripts/stack/dicom';
import { ArchivelessDoor, startArchivelessDoor } from '../scripts/stack/door';
import { basicAuth, delay, getFreePort, OrthancInstance, startOrthanc } from '../scripts/stack/orthanc';
import { databaseUrl, quoteIdent } from './lib/db';
import { cpuMsOf } from './lib/processes';

let archivelessDoor: Promise<ArchivelessDoor> | undefined;
/** For the runs that send to Orthanc without the API: the study's door over an empty archive. */
const archivelessDoorUrl = async (): Promise<string> => (await (archivelessDoor ??= startArchivelessDoor())).url;

type Part = 'nodelay' | 'e2e' | 'index';
const PARTS: Part[] = ['nodelay', 'e2e', 'index'];

interface Options {
  parts: Part[];
  index: 'sqlite' | 'postgresql';
  instances: number;
  series: number;
  size: number;
  fallback: boolean;
  e2eInstances: number;
  e2eSize: number;
  devices: number;
  stableAge: number;
  keep: boolean;
  nodelaySides: NoDelaySides[];
  /** Orthanc's LuaScripts in the nodelay and e2e parts (default: the shipped webhook.lua). */
  lua?: string[];
  /** Merged into the configuration of the Orthancs of the nodelay and e2e parts. */
  orthancConfig: Record<string, unknown>;
  /** The storage of the nodelay and e2e Orthancs: new (empty), or with the folders of one in use. */
  storage: 'new' | 'in-use';
}

type NoDelaySides = 'neither' | 'orthanc' | 'storescu' | 'both';
const NODELAY_SIDES: NoDelaySides[] = ['neither', 'orthanc', 'storescu', 'both'];

const DICOMWEB_PLUGIN = '/usr/share/orthanc/plugins/libOrthancDicomWeb.so';
const POSTGRESQL_INDEX_PLUGIN = '/usr/share/orthanc/plugins/libOrthancPostgreSQLIndex.so';

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
    .option('--parts <list>', `parts to run, of ${PARTS.join(',')}`, (v) => v.split(',') as Part[], PARTS)
    .option('--index <kind>', "Orthanc's index: sqlite (its default) or postgresql (the plugin)", 'sqlite')
    .option('--e2e-instances <n>', 'instances of the CT each device sends (e2e)', (v) => Number(v), 500)
    .option('--e2e-size <px>', 'rows and columns of the CT slices (e2e, nodelay): 256 is 128 KB', (v) => Number(v), 256)
    .option('--devices <n>', 'devices sending at once in the second e2e row', (v) => Number(v), 4)
    .option('--stable-age <s>', "Orthanc's StableAge in the e2e rows (production: 10)", (v) => Number(v), 10)
    .option('--instances <n>', 'instances in the study (index)', (v) => Number(v), 1000)
    .option('--series <n>', 'series in the study', (v) => Number(v), 4)
    .option('--size <px>', 'rows and columns of every image', (v) => Number(v), 128)
    .option('--no-fallback', 'skip the scenario without the DICOMweb plugin')
    .option('--keep', 'keep the database and the generated files', false)
    .option(
      '--nodelay-sides <list>',
      `TCP_NODELAY rows to run (nodelay), of ${NODELAY_SIDES.join(',')}`,
      (v) => v.split(',') as NoDelaySides[],
      NODELAY_SIDES,
    )
    .option('--lua <files>', "Orthanc's LuaScripts in the nodelay and e2e parts (default: the shipped webhook.lua)", (v) =>
      v.split(',').map((file) => resolve(file)),
    )
    .option(
      '--orthanc-config <json>',
      'merged into the Orthanc configuration of the nodelay and e2e parts',
      (v) => JSON.parse(v),
      {},
    )
    .option(
      '--storage <kind>',
      "the nodelay and e2e Orthancs' storage: new (empty) or in-use (its 65,536 folders already made, as in an archive that holds some 100,000 instances)",
      'new',
    )
    .parse(process.argv)
    .opts<Options>();
}

/** `/instances/<id>/rendered` -> `/instances/{id}/rendered`, to count calls by kind. */
function kindOf(url: string): string {
  const path = url.split('?')[0];
  return path
    .replace(
      /\/dicom-web\/studies\/[^/]+\/series\/[^/]+\/instances(\/[^/]+)?/,
      (_all, instance) => `/dicom-web/studies/{uid}/series/{uid}/instances${instance ? '/{uid}' : ''}`,
    )
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
  const unknownParts = options.parts.filter((part) => !PARTS.includes(part));
  if (unknownParts.length) throw new Error(`unknown part(s): ${unknownParts.join(', ')} (parts: ${PARTS.join(', ')})`);
  if (options.index !== 'sqlite' && options.index !== 'postgresql') throw new Error('--index is sqlite or postgresql');
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
  const indexes = new OrthancIndexes(options.index, `pacs_bench_orthanc_${runId}`);
  const loadAtStart = os.loadavg();
  console.log(
    `Orthanc index: ${options.index}; storage: ${options.storage}; load average ${loadAtStart.map((l) => l.toFixed(2)).join(' / ')}`,
  );
  if (options.lua) console.log(`Lua scripts: ${options.lua.join(', ')}`);
  if (Object.keys(options.orthancConfig).length)
    console.log(`Orthanc configuration added: ${JSON.stringify(options.orthancConfig)}`);

  const migrated = await openDataSource(env.DATABASE_URL, { migrate: true });
  await migrated.destroy();

  const noDelay: NoDelayFigures[] = [];
  const endToEnd: EndToEndFigures[] = [];
  const results: Figures[] = [];
  const orthancs: OrthancInstance[] = [];
  try {
    if (options.parts.includes('nodelay')) noDelay.push(...(await runNoDelayMatrix(options, workDir, indexes, orthancs)));
    if (options.parts.includes('e2e')) endToEnd.push(...(await runEndToEnd(options, workDir, indexes, orthancs)));
    if (options.parts.includes('index')) results.push(...(await runIndexPart(options, runId, workDir, indexes, orthancs)));
  } catch (error) {
    console.error('benchmark failed:', error);
    process.exitCode = 1;
  } finally {
    for (const orthanc of orthancs.reverse()) await orthanc.destroy();
    if (!options.keep) {
      await fs.rm(workDir, { recursive: true, force: true });
      await dropEverything(database, env.QUEUE_PREFIX);
      await indexes.dropAll();
    }
  }

  if (process.exitCode) return;
  const load = { atStart: loadAtStart, atEnd: os.loadavg() };
  console.log(
    `\nResults (Orthanc index: ${options.index}; load average at start ${load.atStart.map((l) => l.toFixed(2)).join(' / ')}, at end ${load.atEnd.map((l) => l.toFixed(2)).join(' / ')})`,
  );
  if (noDelay.length) {
    console.log(
      `\nstorescu, ${NODELAY_INSTANCES} CT slices of ${Math.round((options.e2eSize * options.e2eSize * 2) / 1024)} KB in one association`,
    );
    console.table(
      noDelay.map((r) => ({
        'TCP_NODELAY=1 on': r.sides,
        seconds: r.seconds,
        'instances/s': r.instancesPerSecond,
        stored: r.stored,
        'Orthanc CPU ms/instance': r.orthancCpuMsPerInstance,
        ...(options.index === 'postgresql' ? { 'index PostgreSQL CPU ms/instance': r.indexCpuMsPerInstance } : {}),
      })),
    );
  }
  if (endToEnd.length) {
    console.log(`\nEnd to end, from the first byte a device sends (StableAge ${options.stableAge} s: a wait, not work)`);
    console.table(
      endToEnd.map((r) => ({
        scenario: r.scenario,
        'send (s)': r.sendSeconds,
        'intake (inst/s)': r.intakePerSecond,
        'Orthanc CPU ms/inst': r.intakeOrthancCpuMsPerInstance,
        ...(options.index === 'postgresql' ? { 'index PG CPU ms/inst': r.intakeIndexCpuMsPerInstance } : {}),
        'StableAge (s)': r.stableAgeSeconds,
        'last instance -> webhook (s)': r.stableWaitSeconds,
        'webhook -> listed (s)': r.webhookToListedSeconds,
        'webhook -> complete (s)': r.webhookToCompleteSeconds,
        'first byte -> listed (s)': r.firstByteToListedSeconds,
        'first byte -> complete (s)': r.firstByteToCompleteSeconds,
        'work = complete - StableAge (s)': r.workSeconds,
      })),
    );
  }
  if (results.length) {
    console.log('\nIndexing a stored study, from the webhook');
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
      const phases = Object.entries(r.indexPhasesMs)
        .map(([phase, ms]) => `${phase} ${ms} ms`)
        .join(', ');
      console.log(`\n${r.scenario}\n  index job phases: ${phases}\n  Orthanc calls:`);
      for (const [kind, count] of Object.entries(r.callsByKind).sort((a, b) => b[1] - a[1])) {
        console.log(`  ${String(count).padStart(5)}  GET ${kind}`);
      }
    }
  }
  const resultsDir = join(__dirname, 'results');
  mkdirSync(resultsDir, { recursive: true });
  const file = join(resultsDir, `ingest-${new Date().toISOString().replace(/[:.]/g, '-')}.json`);
  writeFileSync(
    file,
    JSON.stringify(
      { options, machine: { cpus: os.cpus().length, node: process.version, load }, noDelay, endToEnd, results },
      null,
      2,
    ),
  );
  console.log(`\nWritten to ${file}`);
}

/** Orthanc's index: its own SQLite file (nothing to configure), or the PostgreSQL plugin on a database of its own per name. */
class OrthancIndexes {
  private readonly created: string[] = [];

  constructor(
    readonly kind: Options['index'],
    private readonly prefix: string,
  ) {}

  /** The PostgreSQL database of the index called `name`; undefined with SQLite. */
  database(name: string): string | undefined {
    return this.kind === 'postgresql' ? `${this.prefix}_${name}` : undefined;
  }

  /** Configuration for an Orthanc loading `plugins`, with the index called `name` (the same name: the same index). */
  async config(name: string, plugins: string[]): Promise<Record<string, unknown>> {
    const database = this.database(name);
    if (!database) return { Plugins: plugins };
    if (!this.created.includes(database)) {
      await withAdmin((client) => client.query(`CREATE DATABASE ${quoteIdent(database)}`));
      this.created.push(database);
    }
    const url = new URL(databaseUrl(database));
    return {
      Plugins: [...plugins, POSTGRESQL_INDEX_PLUGIN],
      PostgreSQL: {
        EnableIndex: true,
        EnableStorage: false,
        Host: url.hostname,
        Port: Number(url.port || 5432),
        Database: database,
        Username: decodeURIComponent(url.username) || 'postgres',
        Password: decodeURIComponent(url.password),
        // Several Orthancs may share one index (plugin 4.0): no exclusive lock.
        Lock: false,
      },
    };
  }

  async dropAll(): Promise<void> {
    await withAdmin(async (client) => {
      for (const database of this.created) {
        await client.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`).catch(() => undefined);
      }
    });
  }
}

async function withAdmin<T>(work: (client: Client) => Promise<T>): Promise<T> {
  const admin = new URL(databaseUrl('postgres'));
  const client = new Client({ connectionString: admin.toString() });
  await client.connect();
  try {
    return await work(client);
  } finally {
    await client.end();
  }
}

const NODELAY_INSTANCES = 300;

interface NoDelayFigures {
  sides: string;
  seconds: number;
  instancesPerSecond: number;
  stored: number;
  /** Orthanc's CPU time per stored instance (and its PostgreSQL index's, when it has one). */
  orthancCpuMsPerInstance: number;
  indexCpuMsPerInstance: number;
}

/**
 * storescu sending 300 CT slices in one association to a fresh Orthanc, with DCMTK's TCP_NODELAY on
 * neither side, on Orthanc's only, on storescu's only (a device's own setting), on both.
 */
async function runNoDelayMatrix(
  options: Options,
  workDir: string,
  indexes: OrthancIndexes,
  started: OrthancInstance[],
): Promise<NoDelayFigures[]> {
  console.log(`\n== TCP_NODELAY: storescu of ${NODELAY_INSTANCES} slices of ${options.e2eSize}x${options.e2eSize} 16-bit`);
  const study = await writeStudy(join(workDir, 'nodelay'), ctSpec('NODELAY', NODELAY_INSTANCES, options.e2eSize));
  const on = { TCP_NODELAY: '1' };
  const off = { TCP_NODELAY: '0' };
  const cases = [
    { key: 'neither', sides: 'neither', orthanc: off, device: off },
    { key: 'orthanc', sides: 'Orthanc only', orthanc: on, device: off },
    { key: 'storescu', sides: 'storescu only', orthanc: off, device: on },
    { key: 'both', sides: 'both', orthanc: on, device: on },
  ].filter((row) => options.nodelaySides.includes(row.key as NoDelaySides));
  const figures: NoDelayFigures[] = [];
  for (const [n, row] of cases.entries()) {
    const orthanc = await startOrthanc({
      stableAge: 60,
      env: { ...row.orthanc, PACS_DOOR_URL: await archivelessDoorUrl() },
      extraConfig: {
        ...(await indexes.config(`nodelay${n}`, [DICOMWEB_PLUGIN])),
        ...(await benchOrthancConfig(options, workDir, `nodelay${n}`)),
      },
    });
    started.push(orthanc);
    const cpuBefore = await orthancCpuSeconds(orthanc, indexes.database(`nodelay${n}`));
    const sentAt = Date.now();
    await sendWithStorescu(study.files, {
      aet: 'BENCH_NODELAY',
      port: orthanc.dicomPort,
      chunkSize: study.files.length,
      env: row.device,
    });
    const ms = Date.now() - sentAt;
    const cpuAfter = await orthancCpuSeconds(orthanc, indexes.database(`nodelay${n}`));
    const stored = (await orthancJson(orthanc, '/statistics')).CountInstances as number;
    figures.push({
      sides: row.sides,
      seconds: round(ms / 1000, 2),
      instancesPerSecond: Math.round((study.files.length / ms) * 1000),
      stored,
      orthancCpuMsPerInstance: round(((cpuAfter.orthanc - cpuBefore.orthanc) * 1000) / Math.max(1, stored), 2),
      indexCpuMsPerInstance: round(((cpuAfter.index - cpuBefore.index) * 1000) / Math.max(1, stored), 2),
    });
    console.log(`TCP_NODELAY=1 on ${row.sides}: ${ms} ms, ${stored} stored`);
    await orthanc.destroy();
    started.splice(started.indexOf(orthanc), 1);
  }
  await fs.rm(join(workDir, 'nodelay'), { recursive: true, force: true });
  return figures;
}

function ctSpec(patient: string, instances: number, size: number, series = 1): StudySpec {
  const perSeries = Math.ceil(instances / series);
  return {
    patientId: `BENCH-${patient}`,
    patientName: `BENCH^${patient}`,
    studyDate: '20240115',
    series: Array.from({ length: series }, (_, i) => ({
      modality: 'CT',
      seriesNumber: i + 1,
      instances: Math.min(perSeries, instances - i * perSeries),
      rows: size,
      columns: size,
      sliceThickness: 1,
    })).filter((s) => s.instances > 0),
  };
}

/** `--lua`, `--orthanc-config` and `--storage`, for the Orthancs of the nodelay and e2e parts. */
async function benchOrthancConfig(options: Options, workDir: string, name: string): Promise<Record<string, unknown>> {
  const storage =
    options.storage === 'in-use' ? { StorageDirectory: await storageInUse(join(workDir, `storage-${name}`)) } : {};
  return { ...(options.lua ? { LuaScripts: options.lua } : {}), ...storage, ...options.orthancConfig };
}

/**
 * A storage folder as an archive in use has it: Orthanc files an instance under two levels of
 * folders named by the first two bytes of its attachment's UUID (00/00 to ff/ff), made on first use.
 * A new storage makes a folder for nearly every instance of its first thousands; after some 100,000
 * instances (a few hundred CTs) 78% of the 65,536 exist, so the first studies pay a cost no later
 * one does.
 */
async function storageInUse(dir: string): Promise<string> {
  const hex = Array.from({ length: 256 }, (_, n) => n.toString(16).padStart(2, '0'));
  for (const first of hex) {
    await Promise.all(hex.map((second) => fs.mkdir(join(dir, first, second), { recursive: true })));
  }
  return dir;
}

const round = (value: number, digits = 1): number => Number(value.toFixed(digits));

/**
 * CPU seconds (user + system) used so far by the Orthanc process and, with the PostgreSQL index, by
 * the PostgreSQL backends serving its index: what the machine's load does not change.
 */
async function orthancCpuSeconds(
  orthanc: OrthancInstance,
  indexDatabase?: string,
): Promise<{ orthanc: number; index: number }> {
  let index = 0;
  if (indexDatabase) {
    const { rows } = await withAdmin((client) =>
      client.query(`SELECT pid FROM pg_stat_activity WHERE datname = $1`, [indexDatabase]),
    );
    index = rows.reduce((sum, row) => sum + cpuMsOf(row.pid), 0) / 1000;
  }
  return { orthanc: orthanc.pid ? cpuMsOf(orthanc.pid) / 1000 : 0, index };
}

interface EndToEndStudy {
  device: string;
  sendMs: number;
  webhookAfterSendMs: number;
  webhookToListedMs: number;
  webhookToCompleteMs: number;
  firstByteToListedMs: number;
  firstByteToCompleteMs: number;
}

interface EndToEndFigures {
  scenario: string;
  devices: number;
  instancesPerStudy: number;
  sendSeconds: number;
  intakePerSecond: number;
  /** Orthanc's CPU time per instance while the devices sent (and its PostgreSQL index's). */
  intakeOrthancCpuMsPerInstance: number;
  intakeIndexCpuMsPerInstance: number;
  stableAgeSeconds: number;
  stableWaitSeconds: number;
  webhookToListedSeconds: number;
  webhookToCompleteSeconds: number;
  firstByteToListedSeconds: number;
  firstByteToCompleteSeconds: number;
  workSeconds: number;
  studies: EndToEndStudy[];
}

/**
 * The whole way, as in production: devices send with storescu, Orthanc (the shipped configuration and
 * Lua script, StableAge of production) calls the webhook of the API, the worker indexes; the clock runs
 * from just before the first storescu starts until the study is in GET /api/studies, and until it is
 * complete with its thumbnails. The API and a worker run in this process (as in the index part).
 */
async function runEndToEnd(
  options: Options,
  workDir: string,
  indexes: OrthancIndexes,
  started: OrthancInstance[],
): Promise<EndToEndFigures[]> {
  const rows = [...new Set([1, options.devices])];
  const aets = Array.from({ length: Math.max(...rows) }, (_, i) => `BENCH_E2E_${i + 1}`);
  const login = await registerE2eTenant(aets);
  const figures: EndToEndFigures[] = [];
  for (const devices of rows) {
    const scenario = `${devices === 1 ? 'one device' : `${devices} devices at once`}, ${options.e2eInstances}-slice CT each`;
    console.log(`\n== end to end: ${scenario} (StableAge ${options.stableAge} s)`);
    const studies: WrittenStudy[] = [];
    for (let d = 0; d < devices; d++) {
      studies.push(
        await writeStudy(
          join(workDir, `e2e-${devices}-${d}`),
          ctSpec(`E2E-${devices}-${d}`, options.e2eInstances, options.e2eSize),
        ),
      );
    }
    const apiPort = await getFreePort();
    const orthanc = await startOrthanc({
      stableAge: options.stableAge,
      webhookUrl: `http://127.0.0.1:${apiPort}/api/imgsrv/webhook`,
      webhookSecret: process.env.WEBHOOK_SECRET,
      extraConfig: {
        ...(await indexes.config(`e2e${devices}`, [DICOMWEB_PLUGIN])),
        ...(await benchOrthancConfig(options, workDir, `e2e${devices}`)),
      },
    });
    started.push(orthanc);
    Object.assign(process.env, {
      IMGSRV_URL: orthanc.url,
      IMGSRV_USERNAME: orthanc.username,
      IMGSRV_PASSWORD: orthanc.password,
    });
    const api = await createApiApp(loadConfig());
    let worker: INestApplicationContext | undefined;
    try {
      await api.listen(apiPort, '127.0.0.1');
      worker = await NestFactory.createApplicationContext(WorkerModule, { logger: ['error'] });
      const db = worker.get<DataSource>(getDataSourceToken());
      const token = await login(`http://127.0.0.1:${apiPort}`);

      const indexDatabase = indexes.database(`e2e${devices}`);
      const cpuBefore = await orthancCpuSeconds(orthanc, indexDatabase);
      let cpuAfter = cpuBefore;
      const firstByte = Date.now();
      const sends = studies.map((study, d) =>
        sendWithStorescu(study.files, {
          aet: aets[d],
          port: orthanc.dicomPort,
          chunkSize: study.files.length,
          timeoutMs: 600_000,
        }).then(() => Date.now()),
      );
      const intakeCpu = Promise.all(sends).then(async () => (cpuAfter = await orthancCpuSeconds(orthanc, indexDatabase)));
      const listedAt = new Map<string, number>();
      const completeAt = new Map<string, number>();
      const watching = (async () => {
        const deadline = Date.now() + 600_000;
        while (completeAt.size < studies.length || listedAt.size < studies.length) {
          if (Date.now() > deadline) throw new Error('timed out waiting for the studies to be listed and complete');
          const list = await fetch(`http://127.0.0.1:${apiPort}/api/studies`, {
            headers: { authorization: `Bearer ${token}` },
          });
          const body = await list.text();
          const now = Date.now();
          for (const study of studies) {
            if (!listedAt.has(study.studyInstanceUid) && body.includes(study.studyInstanceUid))
              listedAt.set(study.studyInstanceUid, now);
          }
          for (const study of studies) {
            if (completeAt.has(study.studyInstanceUid)) continue;
            if (await isComplete(db, study)) completeAt.set(study.studyInstanceUid, Date.now());
          }
          await delay(50);
        }
      })();
      const [sentAt] = await Promise.all([Promise.all(sends), watching, intakeCpu]);

      const perStudy: EndToEndStudy[] = [];
      for (const [d, study] of studies.entries()) {
        const [row] = await db.query(`SELECT imgsrv_study_id FROM studies WHERE study_instance_uid = $1`, [
          study.studyInstanceUid,
        ]);
        const webhookAt = await firstStudyJobAt(worker, row.imgsrv_study_id);
        const listed = listedAt.get(study.studyInstanceUid)!;
        const complete = completeAt.get(study.studyInstanceUid)!;
        perStudy.push({
          device: aets[d],
          sendMs: sentAt[d] - firstByte,
          webhookAfterSendMs: webhookAt - sentAt[d],
          webhookToListedMs: listed - webhookAt,
          webhookToCompleteMs: complete - webhookAt,
          firstByteToListedMs: listed - firstByte,
          firstByteToCompleteMs: complete - firstByte,
        });
      }
      const worst = (key: keyof Omit<EndToEndStudy, 'device'>) => round(Math.max(...perStudy.map((s) => s[key])) / 1000, 2);
      const row: EndToEndFigures = {
        scenario,
        devices,
        instancesPerStudy: options.e2eInstances,
        sendSeconds: worst('sendMs'),
        intakePerSecond: Math.round((devices * options.e2eInstances) / worst('sendMs')),
        intakeOrthancCpuMsPerInstance: round(
          ((cpuAfter.orthanc - cpuBefore.orthanc) * 1000) / (devices * options.e2eInstances),
          2,
        ),
        intakeIndexCpuMsPerInstance: round(((cpuAfter.index - cpuBefore.index) * 1000) / (devices * options.e2eInstances), 2),
        stableAgeSeconds: options.stableAge,
        stableWaitSeconds: worst('webhookAfterSendMs'),
        webhookToListedSeconds: worst('webhookToListedMs'),
        webhookToCompleteSeconds: worst('webhookToCompleteMs'),
        firstByteToListedSeconds: worst('firstByteToListedMs'),
        firstByteToCompleteSeconds: worst('firstByteToCompleteMs'),
        workSeconds: round(worst('firstByteToCompleteMs') - options.stableAge, 2),
        studies: perStudy,
      };
      figures.push(row);
      console.log(
        `${scenario}: sent in ${row.sendSeconds} s (${row.intakePerSecond} instances/s), listed after ${row.firstByteToListedSeconds} s, complete after ${row.firstByteToCompleteSeconds} s (StableAge ${options.stableAge} s)`,
      );
    } finally {
      await worker?.close();
      await api.close();
      await orthanc.destroy();
      started.splice(started.indexOf(orthanc), 1);
      for (let d = 0; d < devices; d++) await fs.rm(join(workDir, `e2e-${devices}-${d}`), { recursive: true, force: true });
    }
  }
  return figures;
}

/** A tenant whose devices are `aets` and its admin; returns a login (a fresh access token from an API URL). */
async function registerE2eTenant(aets: string[]): Promise<(apiUrl: string) => Promise<string>> {
  const email = 'admin@bench-e2e.bench';
  const password = randomBytes(12).toString('hex');
  const client = new Client({ connectionString: process.env.DATABASE_URL });
  await client.connect();
  try {
    const {
      rows: [unit],
    } = await client.query(
      `WITH t AS (INSERT INTO tenants (name, slug) VALUES ('Bench e2e clinic', 'bench-e2e-clinic') RETURNING id)
       INSERT INTO units (tenant_id, name, slug) SELECT id, 'Bench e2e unit', 'bench-e2e-unit' FROM t RETURNING id, tenant_id`,
    );
    await client.query(
      `INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address)
       SELECT $1, $2, 'Bench ' || aet, aet, '127.0.0.1' FROM unnest($3::text[]) AS aet`,
      [unit.tenant_id, unit.id, aets],
    );
    await client.query(
      `INSERT INTO users (tenant_id, unit_id, name, email, password, is_super_admin, is_tenant_admin, is_active)
       VALUES ($1, NULL, 'Bench e2e admin', $2, $3, false, true, true)`,
      [unit.tenant_id, email, bcrypt.hashSync(password, 4)],
    );
  } finally {
    await client.end();
  }
  return async (apiUrl) => {
    const answer = await fetch(`${apiUrl}/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password }),
    });
    if (answer.status !== 200) throw new Error(`login answered ${answer.status}: ${await answer.text()}`);
    return ((await answer.json()) as { access_token: string }).access_token;
  };
}

/** Every instance and every thumbnail (one per series and the study's) of `study` in PostgreSQL. */
async function isComplete(db: DataSource, study: WrittenStudy): Promise<boolean> {
  const [counts] = await db.query(
    `SELECT (SELECT count(*)::int FROM instances i JOIN series s ON s.id = i.series_id WHERE s.study_id = st.id) AS instances,
            (SELECT count(*)::int FROM thumbnails th WHERE th.study_id = st.id) AS thumbnails
     FROM studies st WHERE st.study_instance_uid = $1`,
    [study.studyInstanceUid],
  );
  return !!counts && counts.instances === study.files.length && counts.thumbnails === study.seriesUids.length + 1;
}

/** When the first study job of the study was queued: the webhook's arrival, to the millisecond. */
async function firstStudyJobAt(worker: INestApplicationContext, imgsrvStudyId: string): Promise<number> {
  const jobs = await worker
    .get<Queue>(getQueueToken(STUDY_QUEUE))
    .getJobs(['completed', 'active', 'waiting', 'delayed', 'failed']);
  const times = jobs.filter((job) => job?.data?.imgsrvStudyId === imgsrvStudyId).map((job) => job.timestamp);
  if (!times.length) throw new Error(`no study job for ${imgsrvStudyId}`);
  return Math.min(...times);
}

/** The original benchmark: one large study stored once, then the webhook posted by hand and timed. */
async function runIndexPart(
  options: Options,
  runId: string,
  workDir: string,
  indexes: OrthancIndexes,
  orthancs: OrthancInstance[],
): Promise<Figures[]> {
  console.log(
    `\nGenerating a ${options.instances}-instance study (${options.series} series, ${options.size}x${options.size} 16-bit)...`,
  );
  const study = await writeStudy(
    join(workDir, 'study'),
    ctSpec(`INGEST-${runId}`, options.instances, options.size, options.series),
  );
  const scenarios: Scenario[] = [{ name: 'DICOMweb plugin', dicomWeb: true, rerun: true }];
  if (options.fallback) scenarios.push({ name: 'no DICOMweb plugin (per-instance fallback)', dicomWeb: false, rerun: false });
  const results: Figures[] = [];
  let storage: string | undefined;
  for (const scenario of scenarios) {
    const indexConfig = await indexes.config('index', scenario.dicomWeb ? [DICOMWEB_PLUGIN] : []);
    const { figures, orthanc } = await runScenario(scenario, study, orthancs, indexConfig, storage);
    storage ??= join(orthanc.dir, 'db');
    results.push(...figures);
  }
  return results;
}

/**
 * One scenario on its own Orthanc. `storage`: the storage folder of an earlier (stopped) Orthanc that
 * already holds the study, so it is sent only once.
 */
async function runScenario(
  scenario: Scenario,
  study: WrittenStudy,
  started: OrthancInstance[],
  indexConfig: Record<string, unknown>,
  storage?: string,
): Promise<{ figures: Figures[]; orthanc: OrthancInstance }> {
  console.log(`\n== ${scenario.name}`);
  const orthanc = await startOrthanc({
    stableAge: 1,
    // Posts nowhere: the benchmark posts the webhook itself, to start the clock exactly. The API is
    // not up while the study is sent: the door without the archive answers the image server.
    webhookUrl: 'http://127.0.0.1:9/api/imgsrv/webhook',
    env: { PACS_DOOR_URL: await archivelessDoorUrl() },
    extraConfig: {
      ...indexConfig,
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
    await waitFor(
      'Orthanc to call the study stable',
      async () => (await orthancJson(orthanc, `/studies/${imgsrvStudyId}`)).IsStable,
      60_000,
    );

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
  const runTime = (job?: { finishedOn?: number; processedOn?: number }) =>
    job ? (job.finishedOn ?? 0) - (job.processedOn ?? 0) : 0;
  const index = await latest(INDEX_QUEUE);
  return { study: runTime(await latest(STUDY_QUEUE)), index: runTime(index), phases: index?.returnvalue?.timingsMs ?? {} };
}

async function orthancJson(orthanc: OrthancInstance, path: string): Promise<any> {
  const response = await fetch(`${orthanc.url}${path}`, {
    headers: { Authorization: basicAuth(orthanc.username, orthanc.password) },
  });
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

async function dropEverything(database: string, prefix: string): Promise<void> {
  await withAdmin((client) =>
    client.query(`DROP DATABASE IF EXISTS ${quoteIdent(database)} WITH (FORCE)`).catch(() => undefined),
  );
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
