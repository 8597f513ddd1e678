/**
 * `npm run bench:reports [-- --duration 10 --filings 5]` (after `npm run build`)
 *
 * The report targets (issue 41): the built API and worker as their own processes, a real Orthanc
 * (docker/orthanc's configuration), PostgreSQL and Redis on a database of their own.
 * - PDF of a one-page report, 8 concurrent renders, while list requests (4 connections) run
 *   alongside: p99 of each, and of the list alone first (the event loop is not held).
 * - Signing -> the DOC series listed by GET /api/studies/{id}/series: per study, from the signing's
 *   answer to the first listing that holds it.
 */
import autocannon from 'autocannon';
import * as bcrypt from 'bcryptjs';
import { Command } from 'commander';
import { randomBytes } from 'crypto';
import { promises as fs } from 'fs';
import { loadavg, tmpdir } from 'os';
import { join } from 'path';
import { Client } from 'pg';
import { sendWithStorescu, writeStudy } from '../scripts/stack/dicom';
import { getFreePort, startOrthanc } from '../scripts/stack/orthanc';
import { startBuiltProcess } from '../scripts/stack/processes';
import { databaseUrl } from './lib/db';
import { percentile, round } from './lib/stats';

const PASSWORD = 'bench-password';

async function json(response: Response): Promise<any> {
  const body = await response.json();
  if (!response.ok) throw new Error(`${response.url}: ${response.status} ${JSON.stringify(body)}`);
  return body;
}

function drive(url: string, token: string, connections: number, duration: number): Promise<autocannon.Result> {
  return new Promise((resolve, reject) => {
    autocannon({ url, connections, duration, headers: { authorization: `Bearer ${token}` } }, (error, result) =>
      error ? reject(error) : resolve(result),
    );
  });
}

const line = (result: autocannon.Result) =>
  `p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, ${round(result.requests.average)} req/s, ` +
  `${result.non2xx} non-2xx, ${result.errors} errors`;

async function main(): Promise<void> {
  const options = new Command()
    .option('--duration <seconds>', 'seconds per measurement', '10')
    .option('--filings <count>', 'studies signed for the filing row', '5')
    .parse()
    .opts<{ duration: string; filings: string }>();
  const duration = Number(options.duration);
  const suffix = randomBytes(3).toString('hex');
  const database = `pacs_bench_reports_${suffix}`;
  const url = databaseUrl(database);
  const workDir = await fs.mkdtemp(join(tmpdir(), 'pacs-bench-reports-'));
  const apiPort = await getFreePort();
  const webhookSecret = randomBytes(16).toString('hex');
  const orthanc = await startOrthanc({
    stableAge: 1,
    webhookUrl: `http://127.0.0.1:${apiPort}/api/imgsrv/webhook`,
    webhookSecret,
  });
  const env = {
    DATABASE_URL: url,
    QUEUE_PREFIX: `pacs-bench-reports-${suffix}`,
    IMGSRV_URL: orthanc.url,
    IMGSRV_USERNAME: orthanc.username,
    IMGSRV_PASSWORD: orthanc.password,
    WEBHOOK_SECRET: webhookSecret,
    JWT_SECRET: randomBytes(32).toString('hex'),
    RECONCILE_INTERVAL: '0',
  };
  const api = await startBuiltProcess('main', env, { port: apiPort, readyTimeoutMs: 120_000 });
  const worker = await startBuiltProcess('worker', env);
  const db = new Client({ connectionString: url });
  await db.connect();
  try {
    const [tenant] = (
      await db.query(`INSERT INTO tenants (name, slug) VALUES ('Clínica São Paulo', $1) RETURNING id`, [`sp-${suffix}`])
    ).rows;
    const [unit] = (
      await db.query(`INSERT INTO units (tenant_id, name, slug) VALUES ($1, 'Unidade Centro', $2) RETURNING id`, [
        tenant.id,
        `c-${suffix}`,
      ])
    ).rows;
    const email = `doctor-${suffix}@bench.test`;
    await db.query(
      `INSERT INTO users (tenant_id, unit_id, name, email, password, crm) VALUES ($1, $2, 'Dra. Conceição', $3, $4, '123456/SP')`,
      [tenant.id, unit.id, email, bcrypt.hashSync(PASSWORD, 4)],
    );
    const aet = `BENCH${suffix}`.toUpperCase();
    await db.query(`INSERT INTO modalities (tenant_id, unit_id, name, aet, ip_address) VALUES ($1, $2, $3, $4, '127.0.0.1')`, [
      tenant.id,
      unit.id,
      `CT ${aet}`,
      aet,
    ]);
    // A unit with 2,000 studies for the list requests.
    await db.query(
      `INSERT INTO studies (tenant_id, unit_id, imgsrv_study_id, study_instance_uid, patient_id, patient_name, study_date,
                            study_description, modalities, report_status)
       SELECT $1, $2, 'bench-' || n, '2.25.' || n, 'P' || n, 'SILVA^MARIA ' || n, date '2024-01-01' + (n % 300),
              'CT crânio', ARRAY['CT'], 'pending'
         FROM generate_series(1, 2000) n`,
      [tenant.id, unit.id],
    );
    const token = (
      await json(
        await fetch(`${api.url}/api/login`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ email, password: PASSWORD }),
        }),
      )
    ).access_token as string;
    const authed = (path: string, init: RequestInit = {}) =>
      fetch(`${api.url}${path}`, {
        ...init,
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json', ...(init.headers ?? {}) },
      });
    const [anyStudy] = (await db.query(`SELECT id FROM studies WHERE unit_id = $1 LIMIT 1`, [unit.id])).rows;
    const draft = await json(
      await authed(`/api/studies/${anyStudy.id}/reports`, {
        method: 'POST',
        body: JSON.stringify({
          indication: 'Cefaleia há três dias.',
          technique: 'Tomografia computadorizada do crânio sem contraste.',
          findings: 'Sulcos, fissuras e cisternas de amplitude normal. '.repeat(12),
          impression: 'Exame dentro dos limites da normalidade.',
        }),
      }),
    );
    const pdfUrl = `${api.url}/api/studies/${anyStudy.id}/reports/${draft.id}/pdf`;
    const listUrl = `${api.url}/api/studies?page=2`;
    await drive(pdfUrl, token, 2, 2); // warm-up: the render threads start, the statements are prepared
    await drive(listUrl, token, 2, 2);

    const listAlone = await drive(listUrl, token, 4, duration);
    const [pdf, listAlongside] = await Promise.all([drive(pdfUrl, token, 8, duration), drive(listUrl, token, 4, duration)]);

    // Signing -> the DOC series listed.
    const filings: number[] = [];
    for (let n = 0; n < Number(options.filings); n++) {
      const study = await writeStudy(join(workDir, `s${n}`), {
        patientId: `BENCH-${suffix}-${n}`,
        patientName: 'SOUZA^JOÃO',
        studyDate: '20240310',
        series: [{ modality: 'CT', seriesNumber: 1, instances: 2, rows: 64, columns: 64 }],
      });
      await sendWithStorescu(study.files, { aet, port: orthanc.dicomPort });
      let studyId: string | undefined;
      for (
        const deadline = Date.now() + 60_000;
        !studyId && Date.now() < deadline;
        await new Promise((r) => setTimeout(r, 200))
      ) {
        studyId = (
          await db.query(
            `SELECT s.id FROM studies s JOIN imgsrv_study_sync y USING (imgsrv_study_id)
              WHERE s.study_instance_uid = $1 AND y.indexed_at IS NOT NULL`,
            [study.studyInstanceUid],
          )
        ).rows[0]?.id;
      }
      if (!studyId) throw new Error('study not indexed within 60 s');
      const report = await json(
        await authed(`/api/studies/${studyId}/reports`, { method: 'POST', body: JSON.stringify({ findings: 'Normal.' }) }),
      );
      await json(await authed(`/api/studies/${studyId}/reports/${report.id}/sign`, { method: 'POST', body: '{"version":1}' }));
      const signedAt = Date.now();
      for (;;) {
        const series = await json(await authed(`/api/studies/${studyId}/series`));
        if ((series as Array<{ modality: string }>).some((s) => s.modality === 'DOC')) break;
        if (Date.now() - signedAt > 60_000) throw new Error('DOC series not listed within 60 s');
        await new Promise((r) => setTimeout(r, 100));
      }
      filings.push(Date.now() - signedAt);
    }

    const load = loadavg()
      .map((v) => v.toFixed(2))
      .join(', ');
    console.log(`\nReports bench (${duration} s per measurement; load average at the end: ${load})`);
    console.log(`list alone (4 connections):                 ${line(listAlone)}`);
    console.log(`PDF of a one-page report (8 concurrent):    ${line(pdf)}`);
    console.log(`list alongside the PDFs (4 connections):    ${line(listAlongside)}`);
    console.log(
      `signing -> DOC series listed (${filings.length} studies): median ${percentile(filings, 50)} ms, ` +
        `max ${Math.max(...filings)} ms (${filings.join(', ')})`,
    );
  } finally {
    await db.end();
    await worker.stop();
    await api.stop();
    await orthanc.destroy();
    await fs.rm(workDir, { recursive: true, force: true });
    const admin = new Client({ connectionString: databaseUrl('postgres') });
    await admin.connect();
    await admin.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`).catch(() => undefined);
    await admin.end();
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
