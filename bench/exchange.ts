/**
 * `npm run bench:exchange [-- --instances 500 --duration 8 --connections 32 --database pacs_bench_exchange]`
 *
 * The exchange rows of decisions.md 3d, against the built API (`node dist/src/main.js`,
 * NODE_ENV=production; `npm run build` first), a real Orthanc with the shipped configuration and
 * the shipped nginx, all on this machine:
 *  - upload of a generated study (`--instances` 128 KB CT instances, 64 MB at 500): a direct POST of
 *    each file to Orthanc's /instances (one connection, in turn) against one STOW-RS request of all
 *    of them through nginx to the API (the same files, the study deleted in between); instances/s
 *    and the API's RSS growth during the upload;
 *  - download of that study: Orthanc's own /studies/{id}/archive against GET /api/studies/{id}/archive
 *    (MB/s, best of three each), then 4 concurrent downloads through the API with its RSS growth;
 *  - opening a share link: POST /api/shares/open at `--connections` connections for `--duration`
 *    seconds (without a passcode, and with one: scrypt on the thread pool), p50 / p99.
 */
import autocannon from 'autocannon';
import { Command } from 'commander';
import { randomBytes } from 'crypto';
import { promises as fs } from 'fs';
import { loadavg, tmpdir } from 'os';
import { join } from 'path';
import * as bcrypt from 'bcryptjs';
import { openDataSource } from '../src/database/data-source-options';
import { writeStudy } from '../scripts/stack/dicom';
import { startNginx } from '../scripts/stack/nginx';
import { basicAuth, startOrthanc } from '../scripts/stack/orthanc';
import { memoryOf, rssSampler, startApi } from './lib/processes';

const ROOT = join(__dirname, '..');
const PASSWORD = 'bench-exchange-password';

const program = new Command()
  .option('--instances <n>', 'instances in the generated study', '500')
  .option('--duration <s>', 'seconds per share-open run', '8')
  .option('--connections <n>', 'connections of the share-open runs', '32')
  .option('--warmup <s>', 'seconds of untimed load before each of those runs, as `npm run bench` does', '2')
  .option('--database <name>', 'database of its own (created and migrated)', 'pacs_bench_exchange')
  .parse();
const options = program.opts<{ instances: string; duration: string; connections: string; warmup: string; database: string }>();

const mb = (bytes: number) => bytes / 1024 / 1024;
const fixed = (n: number, digits = 1) => n.toFixed(digits);

async function timed<T>(run: () => Promise<T>): Promise<{ value: T; seconds: number }> {
  const started = process.hrtime.bigint();
  const value = await run();
  return { value, seconds: Number(process.hrtime.bigint() - started) / 1e9 };
}

/** Reads a response body to its end, counting bytes (nothing kept). */
async function drain(response: Response): Promise<number> {
  let bytes = 0;
  const reader = response.body!.getReader();
  for (;;) {
    const { done, value } = await reader.read();
    if (done) return bytes;
    bytes += value.byteLength;
  }
}

async function main(): Promise<void> {
  const instances = Number(options.instances);
  const base = new URL(process.env.DATABASE_URL || 'postgres://postgres@127.0.0.1:5432/pacs');
  base.pathname = `/${options.database}`;
  const databaseUrl = base.toString();
  const db = await openDataSource(databaseUrl, { migrate: true });
  const workDir = await fs.mkdtemp(join(tmpdir(), 'pacs-bench-exchange-'));
  const orthanc = await startOrthanc({ username: 'svc', password: randomBytes(12).toString('hex') });
  const authorization = basicAuth(orthanc.username, orthanc.password);
  const api = await startApi(join(ROOT, 'dist', 'src', 'main.js'), {
    NODE_ENV: 'production',
    DATABASE_URL: databaseUrl,
    QUEUE_PREFIX: `${options.database}_exchange`,
    JWT_SECRET: randomBytes(32).toString('hex'),
    WEBHOOK_SECRET: randomBytes(16).toString('hex'),
    LOG_LEVEL: 'warn',
    IMGSRV_URL: orthanc.url,
    IMGSRV_USERNAME: orthanc.username,
    IMGSRV_PASSWORD: orthanc.password,
    TRUST_PROXY: '127.0.0.1',
  });
  const nginx = await startNginx({
    apiPort: Number(new URL(api.url).port),
    orthancPort: orthanc.httpPort,
    orthancUser: orthanc.username,
    orthancPassword: orthanc.password,
  });
  const pid = api.process.pid!;
  try {
    const slug = `exchange-${randomBytes(4).toString('hex')}`;
    const [tenant] = await db.query(`INSERT INTO tenants (name, slug) VALUES ($1, $1) RETURNING id`, [slug]);
    const [unit] = await db.query(`INSERT INTO units (tenant_id, name, slug) VALUES ($1, 'Bench', $2) RETURNING id`, [
      tenant.id,
      slug,
    ]);
    const email = `${slug}@exchange.bench`;
    await db.query(
      `INSERT INTO users (tenant_id, unit_id, name, email, password, is_active) VALUES ($1, $2, 'Bench doctor', $3, $4, true)`,
      [tenant.id, unit.id, email, bcrypt.hashSync(PASSWORD, 4)],
    );
    const login = await fetch(`${api.url}/api/login`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ email, password: PASSWORD }),
    });
    const token = ((await login.json()) as { access_token: string }).access_token;

    const written = await writeStudy(join(workDir, 'study'), {
      patientId: `EX-${slug}`,
      patientName: 'EXCHANGE^BENCH',
      studyDate: '20240301',
      series: [{ modality: 'CT', seriesNumber: 1, instances, rows: 256, columns: 256 }],
    });
    const files = await Promise.all(written.files.map((file) => fs.readFile(file)));
    const totalBytes = files.reduce((sum, file) => sum + file.length, 0);

    // Upload: direct, one POST per instance in turn.
    const direct = await timed(async () => {
      let studyId = '';
      for (const file of files) {
        const response = await fetch(`${orthanc.url}/instances`, {
          method: 'POST',
          headers: { Authorization: authorization, 'Content-Type': 'application/dicom' },
          body: new Uint8Array(file),
        });
        studyId = ((await response.json()) as { ParentStudy: string }).ParentStudy;
      }
      return studyId;
    });
    await fetch(`${orthanc.url}/studies/${direct.value}`, { method: 'DELETE', headers: { Authorization: authorization } });

    // Upload: one STOW-RS request through nginx, the body streamed from memory.
    const boundary = `bench-${randomBytes(8).toString('hex')}`;
    const parts: Buffer[] = [];
    for (const file of files) {
      parts.push(Buffer.from(`--${boundary}\r\nContent-Type: application/dicom\r\n\r\n`), file, Buffer.from('\r\n'));
    }
    parts.push(Buffer.from(`--${boundary}--\r\n`));
    const stowBody = Buffer.concat(parts);
    const uploadMemory = rssSampler(pid, 50);
    const uploadRssStart = memoryOf(pid)!.rssMb;
    uploadMemory.resetPeak();
    const stow = await timed(async () => {
      const response = await fetch(`${nginx.url}/dicom-web/studies`, {
        method: 'POST',
        headers: {
          authorization: `Bearer ${token}`,
          'content-type': `multipart/related; type="application/dicom"; boundary=${boundary}`,
        },
        body: new Uint8Array(stowBody),
      });
      const answer = (await response.json()) as { '00081199'?: { Value: unknown[] }; '00081198'?: { Value: unknown[] } };
      if (response.status !== 200 || answer['00081199']?.Value.length !== instances) {
        throw new Error(`STOW-RS: ${response.status} ${JSON.stringify(answer).slice(0, 300)}`);
      }
    });
    const uploadGrowth = uploadMemory.peak() - uploadRssStart;
    uploadMemory.stop();

    // The study's row, as ingestion would write it (no worker runs here).
    const [stored] = (await (
      await fetch(`${orthanc.url}/tools/lookup`, {
        method: 'POST',
        headers: { Authorization: authorization },
        body: written.studyInstanceUid,
      })
    ).json()) as Array<{ ID: string }>;
    const [patient] = await db.query(
      `INSERT INTO patients (tenant_id, patient_id, patient_name) VALUES ($1, $2, 'EXCHANGE^BENCH') RETURNING id`,
      [tenant.id, `EX-${slug}`],
    );
    const [study] = await db.query(
      `INSERT INTO studies (tenant_id, unit_id, patient_uuid, imgsrv_study_id, study_instance_uid, patient_id, patient_name, study_date, report_status)
       VALUES ($1, $2, $3, $4, $5, $6, 'EXCHANGE^BENCH', '2024-03-01', 'pending') RETURNING id`,
      [tenant.id, unit.id, patient.id, stored.ID, written.studyInstanceUid, `EX-${slug}`],
    );

    // Download: Orthanc's own archive against the API's, best of three each, taken in turn so that
    // a change of the machine's load falls on both. Throughput in the study's own bytes (the ZIP is
    // deflated: generated images shrink a lot).
    const orthancArchive = {
      url: `${orthanc.url}/studies/${stored.ID}/archive`,
      headers: { Authorization: authorization },
      bytes: 0,
      seconds: Infinity,
    };
    const apiArchive = {
      url: `${api.url}/api/studies/${study.id}/archive`,
      headers: { authorization: `Bearer ${token}` },
      bytes: 0,
      seconds: Infinity,
    };
    for (let run = 0; run < 3; run++) {
      for (const side of [orthancArchive, apiArchive]) {
        const { value, seconds } = await timed(async () => drain(await fetch(side.url, { headers: side.headers })));
        side.bytes = value;
        side.seconds = Math.min(side.seconds, seconds);
      }
    }
    const downloadMemory = rssSampler(pid, 50);
    const downloadRssStart = memoryOf(pid)!.rssMb;
    downloadMemory.resetPeak();
    const concurrent = await timed(() =>
      Promise.all(Array.from({ length: 4 }, async () => drain(await fetch(apiArchive.url, { headers: apiArchive.headers })))),
    );
    const downloadGrowth = downloadMemory.peak() - downloadRssStart;
    downloadMemory.stop();

    // Each timed run follows the same load, untimed: the first second of a cold route (its code not
    // yet optimised, the pool still opening connections) is not what a running service answers.
    const measured = async (request: autocannon.Options): Promise<autocannon.Result> => {
      const connections = Number(options.connections);
      if (Number(options.warmup) > 0) await autocannon({ ...request, connections, duration: Number(options.warmup) });
      return autocannon({ ...request, connections, duration: Number(options.duration) });
    };
    // Share opens: enough shares that no run uses one up.
    const openRun = async (passcode: string | undefined) => {
      const tokens: string[] = [];
      for (let n = 0; n < 60; n++) {
        const response = await fetch(`${api.url}/api/studies/${study.id}/shares`, {
          method: 'POST',
          headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
          body: JSON.stringify({ max_uses: 1000, ...(passcode ? { passcode } : {}) }),
        });
        tokens.push(((await response.json()) as { token: string }).token);
      }
      let next = 0;
      return measured({
        url: `${api.url}/api/shares/open`,
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        requests: [
          {
            setupRequest: (request: autocannon.Request) => ({
              ...request,
              body: JSON.stringify({ token: tokens[next++ % tokens.length], ...(passcode ? { passcode } : {}) }),
            }),
          },
        ],
      });
    };
    // The same run's reference: a study's detail (one indexed read), as the machine answers it now.
    const reference = await measured({
      url: `${api.url}/api/studies/${study.id}`,
      headers: { authorization: `Bearer ${token}` },
    });
    const plainOpen = await openRun(undefined);
    const passcodeOpen = await openRun('bench-passcode');

    const load = loadavg()
      .map((n) => n.toFixed(2))
      .join(' ');
    const rows = [
      [
        'Upload, direct POST /instances (1 connection)',
        `${fixed(instances / direct.seconds)} instances/s`,
        `${fixed(mb(totalBytes) / direct.seconds)} MB/s`,
        '',
      ],
      [
        'Upload, one STOW-RS request through nginx',
        `${fixed(instances / stow.seconds)} instances/s (${fixed(direct.seconds / stow.seconds, 2)}x direct)`,
        `${fixed(mb(totalBytes) / stow.seconds)} MB/s`,
        `API RSS +${fixed(uploadGrowth)} MB`,
      ],
      [
        "Download, Orthanc's /archive",
        `${fixed(mb(totalBytes) / orthancArchive.seconds)} MB/s of DICOM`,
        `${fixed(mb(orthancArchive.bytes))} MB ZIP`,
        '',
      ],
      [
        'Download, GET /api/studies/{id}/archive',
        `${fixed(mb(totalBytes) / apiArchive.seconds)} MB/s of DICOM (${fixed(orthancArchive.seconds / apiArchive.seconds, 2)}x Orthanc)`,
        `${fixed(mb(apiArchive.bytes))} MB ZIP`,
        '',
      ],
      [
        'Download, 4 at once through the API',
        `${fixed((4 * mb(totalBytes)) / concurrent.seconds)} MB/s of DICOM in all`,
        `${concurrent.value.every((bytes) => bytes === apiArchive.bytes) ? 'all whole' : 'INCOMPLETE'}`,
        `API RSS +${fixed(downloadGrowth)} MB`,
      ],
      [
        `Reference: GET /api/studies/{id} (${options.connections} connections)`,
        `p50 ${reference.latency.p50} ms, p99 ${reference.latency.p99} ms`,
        `${fixed(reference.requests.average, 0)} req/s`,
        `non-2xx ${reference.non2xx}`,
      ],
      [
        `Share open, no passcode (${options.connections} connections)`,
        `p50 ${plainOpen.latency.p50} ms, p99 ${plainOpen.latency.p99} ms`,
        `${fixed(plainOpen.requests.average, 0)} req/s`,
        `non-2xx ${plainOpen.non2xx}`,
      ],
      [
        `Share open, with a passcode (${options.connections} connections)`,
        `p50 ${passcodeOpen.latency.p50} ms, p99 ${passcodeOpen.latency.p99} ms`,
        `${fixed(passcodeOpen.requests.average, 0)} req/s`,
        `non-2xx ${passcodeOpen.non2xx}`,
      ],
    ];
    console.log(`\nExchange (${instances} instances, ${fixed(mb(totalBytes))} MB; load average ${load})`);
    console.log('| Measure | Figure | Volume | Memory |\n|---|---|---|---|');
    for (const row of rows) console.log(`| ${row.join(' | ')} |`);
  } finally {
    await nginx.stop();
    await api.stop();
    await orthanc.destroy();
    await db.destroy();
    await fs.rm(workDir, { recursive: true, force: true });
  }
}

main().then(
  () => process.exit(0),
  (error) => {
    console.error(error);
    process.exit(1);
  },
);
