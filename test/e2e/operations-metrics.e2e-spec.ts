import { getQueueToken } from '@nestjs/bull';
import Bull, { Queue } from 'bull';
import { randomUUID } from 'crypto';
import type { AddressInfo } from 'net';
import { INDEX_QUEUE, RECONCILE_QUEUE, REPORT_FILING_QUEUE, STUDY_QUEUE } from '../../src/common/queues/queues.module';
import { REDIS } from '../../src/common/redis/redis.module';
import { JobMetricsRecorder } from '../../src/operations/metrics/job-metrics.recorder';
import { MetricsService } from '../../src/operations/metrics/metrics.service';
import { createTestApp, TestApp } from '../support/app';
import { delay } from '../../scripts/stack/orthanc';
import { createStudy } from '../support/clinical-factories';
import { createClinic, createSuperAdminUser } from '../support/factories';
import { socketRequest } from '../support/http';

const METRICS_TOKEN = 'metrics-token-0123456789abcdef';

interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

/** The Prometheus text format's samples (HELP/TYPE lines aside). */
function parse(text: string): Sample[] {
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    const match = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$/.exec(line);
    if (!match) continue;
    const labels: Record<string, string> = {};
    for (const [, key, value] of (match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[key] = value;
    samples.push({ name: match[1], labels, value: Number(match[3]) });
  }
  return samples;
}

/** The value of the one sample with that name and (at least) those labels; 0 when absent. */
function valueOf(samples: Sample[], name: string, labels: Record<string, string> = {}): number {
  const found = samples.filter((s) => s.name === name && Object.entries(labels).every(([k, v]) => s.labels[k] === v));
  if (found.length > 1) throw new Error(`${name} ${JSON.stringify(labels)} matches ${found.length} samples`);
  return found[0]?.value ?? 0;
}

describe('Operations: Prometheus metrics at /metrics', () => {
  let t: TestApp;
  let superToken: string;
  const scrapeText = async (): Promise<string> => {
    const res = await t.http.get('/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } });
    expect(res.status).toBe(200);
    return res.body as string;
  };
  const scrape = async (): Promise<Sample[]> => parse(await scrapeText());

  beforeAll(async () => {
    t = await createTestApp({ METRICS_TOKEN, QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}_metrics` });
    superToken = (await createSuperAdminUser(t.db, t.http)).token;
  });
  afterAll(() => t.close());

  describe('access', () => {
    it.each([
      ['no Authorization header', {}],
      ['a wrong token', { authorization: 'Bearer wrong-token-0123456789abcdef' }],
      ['the token with another scheme', { authorization: `Basic ${METRICS_TOKEN}` }],
      ['the token without a scheme', { authorization: METRICS_TOKEN }],
      ['the token as a prefix', { authorization: `Bearer ${METRICS_TOKEN}x` }],
    ])('answers 401 {message: Unauthenticated.} for %s', async (_label, headers) => {
      const res = await t.http.get('/metrics', { headers: headers as Record<string, string> });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
      expect(res.headers['www-authenticate']).toBe('Bearer');
    });

    it('does not take a user access token, even a super admin one', async () => {
      const res = await t.http.get('/metrics', { token: superToken });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ message: 'Unauthenticated.' });
    });

    it('does not take the token from the query string', async () => {
      const res = await t.http.get('/metrics', { query: { token: METRICS_TOKEN } });
      expect(res.status).toBe(401);
    });

    it('answers the Prometheus text format with the token', async () => {
      const res = await t.http.get('/metrics', { headers: { authorization: `bearer  ${METRICS_TOKEN}` } });
      expect(res.status).toBe(200);
      expect(res.headers['content-type']).toBe('text/plain; version=0.0.4; charset=utf-8');
      expect(res.headers['cache-control']).toBe('no-store');
    });
  });

  describe('content', () => {
    it('declares every metric the operator dashboards use', async () => {
      const text = await scrapeText();
      for (const [name, type] of [
        ['pacs_http_request_duration_seconds', 'histogram'],
        ['pacs_http_requests_total', 'counter'],
        ['pacs_queue_jobs', 'gauge'],
        ['pacs_job_duration_seconds', 'histogram'],
        ['pacs_ingestion_lag_seconds', 'histogram'],
        ['pacs_viewer_validations_total', 'counter'],
        ['pacs_viewer_validation_cache_total', 'counter'],
        ['pacs_process_resident_memory_bytes', 'gauge'],
        ['pacs_nodejs_eventloop_lag_seconds', 'gauge'],
      ]) {
        expect(text).toContain(`# TYPE ${name} ${type}`);
      }
    });

    it('counts a request and observes its latency under its route, and moves on the next request', async () => {
      const labels = { method: 'GET', route: '/api/health', status_code: '200' };
      const before = await scrape();
      expect((await t.http.get('/api/health')).status).toBe(200);
      const after = await scrape();
      expect(valueOf(after, 'pacs_http_requests_total', labels)).toBe(valueOf(before, 'pacs_http_requests_total', labels) + 1);
      expect(valueOf(after, 'pacs_http_request_duration_seconds_count', labels)).toBe(
        valueOf(before, 'pacs_http_request_duration_seconds_count', labels) + 1,
      );
      expect(valueOf(after, 'pacs_http_request_duration_seconds_sum', labels)).toBeGreaterThan(
        valueOf(before, 'pacs_http_request_duration_seconds_sum', labels),
      );
      expect(valueOf(after, 'pacs_http_request_duration_seconds_bucket', { ...labels, le: '+Inf' })).toBe(
        valueOf(after, 'pacs_http_request_duration_seconds_count', labels),
      );
    });

    it('labels by route pattern, never by raw URL, and counts each status apart', async () => {
      const id = randomUUID();
      expect((await t.http.get(`/queues/api/queues/${RECONCILE_QUEUE}/${id}`, { token: superToken })).status).toBe(404);
      expect((await t.http.get(`/queues/api/queues/${RECONCILE_QUEUE}/${id}`)).status).toBe(401);
      expect((await t.http.get(`/no/such/${id}`)).status).toBe(404);
      const text = await scrapeText();
      expect(text).not.toContain(id);
      const samples = parse(text);
      const route = '/queues/api/queues/:queueName/:jobId';
      expect(valueOf(samples, 'pacs_http_requests_total', { route, status_code: '404' })).toBeGreaterThanOrEqual(1);
      expect(valueOf(samples, 'pacs_http_requests_total', { route, status_code: '401' })).toBeGreaterThanOrEqual(1);
      expect(valueOf(samples, 'pacs_http_requests_total', { route: 'unmatched', status_code: '404' })).toBeGreaterThanOrEqual(
        1,
      );
    });

    it('reads queue depths per queue and state at scrape time', async () => {
      const reconcile = t.app.get<Queue>(getQueueToken(RECONCILE_QUEUE));
      const index = t.app.get<Queue>(getQueueToken(INDEX_QUEUE));
      const before = await scrape();
      for (const queue of [STUDY_QUEUE, INDEX_QUEUE, RECONCILE_QUEUE, REPORT_FILING_QUEUE]) {
        for (const state of ['waiting', 'active', 'delayed', 'failed']) {
          expect(before.some((s) => s.name === 'pacs_queue_jobs' && s.labels.queue === queue && s.labels.state === state)).toBe(
            true,
          );
        }
      }
      const delayed = await reconcile.add({ probe: true }, { delay: 3_600_000, jobId: randomUUID() });
      const waiting = await index.add('probe', { probe: true }, { jobId: randomUUID() });
      const after = await scrape();
      expect(valueOf(after, 'pacs_queue_jobs', { queue: RECONCILE_QUEUE, state: 'delayed' })).toBe(
        valueOf(before, 'pacs_queue_jobs', { queue: RECONCILE_QUEUE, state: 'delayed' }) + 1,
      );
      expect(valueOf(after, 'pacs_queue_jobs', { queue: INDEX_QUEUE, state: 'waiting' })).toBe(
        valueOf(before, 'pacs_queue_jobs', { queue: INDEX_QUEUE, state: 'waiting' }) + 1,
      );
      await delayed.remove();
      await waiting.remove();
    });

    it('counts viewer validations by result and the cache hits and misses of their study lookups', async () => {
      const metrics = t.app.get(MetricsService);
      const before = await scrape();
      metrics.viewerValidation('allowed', true);
      metrics.viewerValidation('allowed', false);
      metrics.viewerValidation('forbidden', true);
      metrics.viewerValidation('missing_token');
      const after = await scrape();
      const delta = (name: string, labels: Record<string, string>) =>
        valueOf(after, name, labels) - valueOf(before, name, labels);
      expect(delta('pacs_viewer_validations_total', { result: 'allowed' })).toBe(2);
      expect(delta('pacs_viewer_validations_total', { result: 'forbidden' })).toBe(1);
      expect(delta('pacs_viewer_validations_total', { result: 'missing_token' })).toBe(1);
      expect(delta('pacs_viewer_validation_cache_total', { result: 'hit' })).toBe(2);
      expect(delta('pacs_viewer_validation_cache_total', { result: 'miss' })).toBe(1);
    });
  });

  // In process the Nest route answers (Fastify's hooks count it); on a socket the raw route does.
  describe.each(['in process', 'socket'] as const)('viewer validations through the validate endpoint (%s)', (via) => {
    let baseUrl = '';
    beforeAll(async () => {
      if (via !== 'socket') return;
      await t.app.listen(0, '127.0.0.1');
      baseUrl = `http://127.0.0.1:${(t.app.getHttpServer().address() as AddressInfo).port}`;
    });

    it('moves the validation counters, the study-lookup cache counters and the request metrics', async () => {
      const clinic = await createClinic(t.db, t.http);
      const other = await createClinic(t.db, t.http);
      const study = await createStudy(t.db, { tenant_id: clinic.tenant.id, unit_id: clinic.unit1.id });
      const foreign = await createStudy(t.db, { tenant_id: other.tenant.id, unit_id: other.unit1.id });
      const issued = await t.http.post('/api/viewer/token', { token: clinic.token1, body: { study_id: study.id } });
      expect(issued.status).toBe(200);
      const validate = (token: string | undefined, uid: string) => {
        const headers = { ...(token ? { 'x-viewer-token': token } : {}), 'x-original-uri': `/dicom-web/studies/${uid}/series` };
        return via === 'socket'
          ? socketRequest(baseUrl, 'GET', '/api/viewer/token/validate', headers)
          : t.http.get('/api/viewer/token/validate', { headers });
      };

      const before = await scrape();
      expect((await validate(issued.body.token, study.study_instance_uid)).status).toBe(200);
      expect((await validate(issued.body.token, study.study_instance_uid)).status).toBe(200);
      expect((await validate(issued.body.token, foreign.study_instance_uid)).status).toBe(403);
      expect((await validate(undefined, study.study_instance_uid)).status).toBe(401);
      expect((await validate(randomUUID(), study.study_instance_uid)).status).toBe(401);
      const after = await scrape();

      const delta = (name: string, labels: Record<string, string>) =>
        valueOf(after, name, labels) - valueOf(before, name, labels);
      expect(delta('pacs_viewer_validations_total', { result: 'allowed' })).toBe(2);
      expect(delta('pacs_viewer_validations_total', { result: 'forbidden' })).toBe(1);
      expect(delta('pacs_viewer_validations_total', { result: 'missing_token' })).toBe(1);
      expect(delta('pacs_viewer_validations_total', { result: 'invalid_token' })).toBe(1);
      // Three validations looked a study up: the issued study is cached from the start.
      const lookups =
        delta('pacs_viewer_validation_cache_total', { result: 'hit' }) +
        delta('pacs_viewer_validation_cache_total', { result: 'miss' });
      expect(lookups).toBe(3);
      expect(delta('pacs_viewer_validation_cache_total', { result: 'hit' })).toBeGreaterThanOrEqual(2);
      const route = { method: 'GET', route: '/api/viewer/token/validate' };
      expect(delta('pacs_http_requests_total', { ...route, status_code: '200' })).toBe(2);
      expect(delta('pacs_http_requests_total', { ...route, status_code: '401' })).toBe(2);
      expect(delta('pacs_http_requests_total', { ...route, status_code: '403' })).toBe(1);
      expect(delta('pacs_http_request_duration_seconds_count', { ...route, status_code: '200' })).toBe(2);
    });
  });

  describe('job durations and ingestion lag, recorded by the worker', () => {
    // Queues of the same names as the service's, under a prefix of their own, worked by this test.
    let study: Queue;
    let index: Queue;

    beforeAll(() => {
      const options = { redis: t.config.REDIS_URL, prefix: `${t.config.QUEUE_PREFIX}_jobs:bull` };
      study = new Bull(STUDY_QUEUE, options);
      index = new Bull(INDEX_QUEUE, options);
      const recorder = new JobMetricsRecorder(t.app.get(MetricsService), t.app.get(REDIS), study, index, study);
      recorder.watchDurations(study);
      recorder.watchDurations(index);
      recorder.watchIngestion(study, index);
    });
    afterAll(async () => {
      await study.close();
      await index.close();
    });

    async function until(probe: (samples: Sample[]) => boolean): Promise<Sample[]> {
      const deadline = Date.now() + 5000;
      for (;;) {
        const samples = await scrape();
        if (probe(samples) || Date.now() > deadline) return samples;
        await delay(50);
      }
    }

    it('observes run times per queue and outcome, and the lag from the study job to the end of its index job', async () => {
      const before = await scrape();
      const count = (samples: Sample[], name: string, labels: Record<string, string>) =>
        valueOf(samples, `${name}_count`, labels);
      const sum = (samples: Sample[], name: string, labels: Record<string, string>) => valueOf(samples, `${name}_sum`, labels);

      void study.process(async (job) => {
        await delay(120);
        if (job.data.fail) throw new Error('image server down');
        // As the study job does: the index job is queued before the study job ends.
        await index.add({ imgsrvStudyId: job.data.imgsrvStudyId }, { jobId: randomUUID() });
      });
      void index.process(async () => delay(250));
      const imgsrvStudyId = randomUUID();
      await study.add({ imgsrvStudyId }, { jobId: randomUUID() });
      await study.add({ imgsrvStudyId: randomUUID(), fail: true }, { jobId: randomUUID(), attempts: 1 });

      const after = await until(
        (s) =>
          count(s, 'pacs_ingestion_lag_seconds', { stage: 'indexed' }) >
            count(before, 'pacs_ingestion_lag_seconds', { stage: 'indexed' }) &&
          count(s, 'pacs_job_duration_seconds', { queue: STUDY_QUEUE, outcome: 'failed' }) >
            count(before, 'pacs_job_duration_seconds', { queue: STUDY_QUEUE, outcome: 'failed' }),
      );
      const grew = (name: string, labels: Record<string, string>) => ({
        count: count(after, name, labels) - count(before, name, labels),
        sum: sum(after, name, labels) - sum(before, name, labels),
      });

      const studyDone = grew('pacs_job_duration_seconds', { queue: STUDY_QUEUE, outcome: 'completed' });
      expect(studyDone.count).toBe(1);
      expect(studyDone.sum).toBeGreaterThanOrEqual(0.1);
      const studyFailed = grew('pacs_job_duration_seconds', { queue: STUDY_QUEUE, outcome: 'failed' });
      expect(studyFailed.count).toBe(1);
      const indexDone = grew('pacs_job_duration_seconds', { queue: INDEX_QUEUE, outcome: 'completed' });
      expect(indexDone.count).toBe(1);
      expect(indexDone.sum).toBeGreaterThanOrEqual(0.2);

      const listed = grew('pacs_ingestion_lag_seconds', { stage: 'listed' });
      const indexed = grew('pacs_ingestion_lag_seconds', { stage: 'indexed' });
      expect(listed.count).toBe(1);
      expect(indexed.count).toBe(1);
      expect(listed.sum).toBeGreaterThanOrEqual(0.1);
      // Measured from the study job's enqueue time: it covers both jobs.
      expect(indexed.sum).toBeGreaterThanOrEqual(0.35);
      expect(indexed.sum).toBeLessThan(5);
      // Buckets are cumulative: the sub-second lag is in le=1 and every bucket above it.
      expect(
        valueOf(after, 'pacs_ingestion_lag_seconds_bucket', { stage: 'indexed', le: '1' }) -
          valueOf(before, 'pacs_ingestion_lag_seconds_bucket', { stage: 'indexed', le: '1' }),
      ).toBe(1);
      expect(valueOf(after, 'pacs_ingestion_lag_seconds_bucket', { stage: 'indexed', le: '+Inf' })).toBe(
        count(after, 'pacs_ingestion_lag_seconds', { stage: 'indexed' }),
      );
    });
  });
});
