import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { randomBytes } from 'crypto';
import { STUDY_QUEUE } from '../../src/common/queues/queues.module';
import { FOLLOW_UP_DELAY_MS } from '../../src/ingestion/ingestion-queue.service';
import { createTestApp, TestApp } from '../support/app';

/** An id in Orthanc's format, new for every test so queue state never leaks between tests. */
const newStudyId = () => Array.from({ length: 5 }, () => randomBytes(4).toString('hex')).join('-');

describe('POST /api/imgsrv/webhook', () => {
  let t: TestApp;
  let queue: Queue;
  let secret: string;

  beforeAll(async () => {
    // A queue prefix of its own: no other test file's worker takes these jobs, and counts are exact.
    t = await createTestApp({ QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}:webhook` });
    queue = t.app.get<Queue>(getQueueToken(STUDY_QUEUE));
    secret = t.config.WEBHOOK_SECRET;
  });
  afterAll(() => t.close());

  const post = (body: unknown, headers: Record<string, string> = {}) =>
    t.http.post('/api/imgsrv/webhook', { body, headers: { 'x-webhook-secret': secret, ...headers } });
  const postRaw = (raw: string, contentType: string, headers: Record<string, string> = {}) =>
    t.http.post('/api/imgsrv/webhook', {
      raw,
      headers: { 'x-webhook-secret': secret, 'content-type': contentType, ...headers },
    });

  async function jobsFor(id: string, states: Array<'waiting' | 'active' | 'completed' | 'failed' | 'delayed'> = ['waiting']) {
    const jobs = await queue.getJobs(states);
    return jobs.filter((job) => job?.data?.imgsrvStudyId === id);
  }

  describe('authentication', () => {
    it('answers 401 {error: Unauthorized} without the secret header, and queues nothing', async () => {
      const id = newStudyId();
      const res = await t.http.post('/api/imgsrv/webhook', { body: { ID: id } });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized' });
      expect(await jobsFor(id)).toHaveLength(0);
    });

    it('answers 401 for a wrong, empty, truncated, extended or differently cased secret', async () => {
      const id = newStudyId();
      for (const wrong of ['wrong-secret', '', secret.slice(0, -1), `${secret}x`, secret.toUpperCase()]) {
        const res = await post({ ID: id }, { 'x-webhook-secret': wrong });
        expect({ wrong, status: res.status, body: res.body }).toEqual({ wrong, status: 401, body: { error: 'Unauthorized' } });
      }
      expect(await jobsFor(id)).toHaveLength(0);
    });

    it('checks the secret before the body: a bad secret with no ID is still 401', async () => {
      const res = await post({}, { 'x-webhook-secret': 'nope' });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized' });
    });

    it('does not accept a bearer token instead of the secret', async () => {
      const res = await t.http.post('/api/imgsrv/webhook', { body: { ID: newStudyId() }, token: secret });
      expect(res.status).toBe(401);
      expect(res.body).toEqual({ error: 'Unauthorized' });
    });
  });

  describe('reading the ID', () => {
    it('queues a JSON body and answers 200 {status: queued, ID}', async () => {
      const id = newStudyId();
      const res = await post({ ID: id, Path: `/studies/${id}`, ChangeType: 'StableStudy' });
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'queued', ID: id });
      const [job] = await jobsFor(id);
      expect(job.data).toEqual({ imgsrvStudyId: id, source: 'webhook' });
      expect(job.name).toBe('study');
      expect(job.opts.attempts).toBeGreaterThan(1);
      expect(job.opts.backoff).toEqual({ type: 'exponential', delay: expect.any(Number) });
      expect(job.opts.removeOnFail).toBe(false);
    });

    it('recovers the ID from a form body whose key is the JSON text (Orthanc Lua without Content-Type)', async () => {
      const id = newStudyId();
      const res = await postRaw(JSON.stringify({ ID: id }), 'application/x-www-form-urlencoded');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'queued', ID: id });
      expect(await jobsFor(id)).toHaveLength(1);
    });

    it('reads a plain form field ID=...', async () => {
      const id = newStudyId();
      const res = await postRaw(`ID=${id}&ChangeType=StableStudy`, 'application/x-www-form-urlencoded');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'queued', ID: id });
    });

    it('reads a JSON text sent as text/plain', async () => {
      const id = newStudyId();
      const res = await postRaw(JSON.stringify({ ID: id }), 'text/plain');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'queued', ID: id });
      expect(await jobsFor(id)).toHaveLength(1);
    });

    it('reads the body of a JSON content type with a charset', async () => {
      const id = newStudyId();
      const res = await postRaw(JSON.stringify({ ID: id }), 'application/json; charset=utf-8');
      expect(res.status).toBe(200);
      expect(res.body).toEqual({ status: 'queued', ID: id });
    });

    it('answers 400 {error: ID not provided} for malformed JSON it cannot recover, never 500', async () => {
      for (const raw of ['{"ID": "abc"', '{not json', '[', '"just a string"', 'null']) {
        const res = await postRaw(raw, 'application/json');
        expect({ raw, status: res.status, body: res.body }).toEqual({ raw, status: 400, body: { error: 'ID not provided' } });
      }
    });

    it('answers 400 {error: ID not provided} when ID is absent, empty or not a usable id', async () => {
      for (const body of [
        {},
        { id: newStudyId() },
        { ID: '' },
        { ID: '   ' },
        { ID: 42 },
        { ID: null },
        { ID: ['a'] },
        [{ ID: 'a' }],
        { ID: '../../tools/reset' },
      ]) {
        const res = await post(body);
        expect({ body, status: res.status, answer: res.body }).toEqual({
          body,
          status: 400,
          answer: { error: 'ID not provided' },
        });
      }
    });

    it('answers 400 for an empty body, an empty form and plain text without JSON', async () => {
      for (const [raw, type] of [
        ['', 'application/json'],
        ['', 'application/x-www-form-urlencoded'],
        ['a=b&c=d', 'application/x-www-form-urlencoded'],
        ['hello', 'text/plain'],
      ]) {
        const res = await postRaw(raw, type);
        expect({ raw, type, status: res.status, body: res.body }).toEqual({
          raw,
          type,
          status: 400,
          body: { error: 'ID not provided' },
        });
      }
      const none = await t.http.post('/api/imgsrv/webhook', { headers: { 'x-webhook-secret': secret } });
      expect(none.status).toBe(400);
      expect(none.body).toEqual({ error: 'ID not provided' });
    });

    it('reads the body whatever its content type, or with none (decisions.md 3)', async () => {
      for (const type of ['application/xml', 'application/octet-stream', 'multipart/form-data; boundary=x', undefined]) {
        const id = newStudyId();
        const res = await t.http.post('/api/imgsrv/webhook', {
          raw: JSON.stringify({ ID: id }),
          headers: { 'x-webhook-secret': secret, ...(type ? { 'content-type': type } : {}) },
        });
        expect({ type, status: res.status, body: res.body }).toEqual({ type, status: 200, body: { status: 'queued', ID: id } });
        expect(await jobsFor(id)).toHaveLength(1);
      }
      const form = newStudyId();
      const pairs = await postRaw(`ID=${form}`, 'application/octet-stream');
      expect({ status: pairs.status, body: pairs.body }).toEqual({ status: 200, body: { status: 'queued', ID: form } });
    });

    it('answers 400 to a body of another type without an ID, and 401 without the secret, whatever the type', async () => {
      const bad = await postRaw('<ID>x</ID>', 'application/xml');
      expect({ status: bad.status, body: bad.body }).toEqual({ status: 400, body: { error: 'ID not provided' } });
      const id = newStudyId();
      const stranger = await t.http.post('/api/imgsrv/webhook', {
        raw: JSON.stringify({ ID: id }),
        headers: { 'content-type': 'application/octet-stream' },
      });
      expect({ status: stranger.status, body: stranger.body }).toEqual({ status: 401, body: { error: 'Unauthorized' } });
      expect(await jobsFor(id)).toHaveLength(0);
    });

    it('accepts only POST', async () => {
      const res = await t.http.get('/api/imgsrv/webhook', { headers: { 'x-webhook-secret': secret } });
      expect(res.status).toBe(404);
    });
  });

  describe('de-duplication', () => {
    // The earlier tests left waiting jobs behind; these tests take jobs off the queue in order.
    beforeEach(() => queue.empty());

    it('collapses 10 simultaneous webhooks for one study into one waiting job', async () => {
      const id = newStudyId();
      const answers = await Promise.all(Array.from({ length: 10 }, () => post({ ID: id })));
      expect(answers.map((r) => r.status)).toEqual(Array(10).fill(200));
      expect(answers.every((r) => r.body.ID === id && r.body.status === 'queued')).toBe(true);
      expect(await jobsFor(id)).toHaveLength(1);
    });

    it('keeps separate jobs for separate studies', async () => {
      const [a, b] = [newStudyId(), newStudyId()];
      await Promise.all([post({ ID: a }), post({ ID: b }), post({ ID: a }), post({ ID: b })]);
      expect(await jobsFor(a)).toHaveLength(1);
      expect(await jobsFor(b)).toHaveLength(1);
    });

    it('queues a new run for a webhook that arrives after the job started', async () => {
      const id = newStudyId();
      await post({ ID: id });
      const [waiting] = await jobsFor(id);
      // Play the worker: take the job (it becomes active), as a processor would.
      const started = await takeJob(queue, waiting.id);
      expect(await started.getState()).toBe('active');

      await Promise.all(Array.from({ length: 5 }, () => post({ ID: id })));
      // One follow-up for the five, held back a moment so that later duplicates still join it.
      const rerun = await jobsFor(id, ['waiting', 'delayed']);
      expect(rerun).toHaveLength(1);
      expect(rerun[0].id).not.toBe(waiting.id);
      expect(await rerun[0].getState()).toBe('delayed');
      expect(rerun[0].opts.delay).toBe(FOLLOW_UP_DELAY_MS);
      await post({ ID: id });
      expect(await jobsFor(id, ['waiting', 'delayed'])).toHaveLength(1);
      await started.moveToCompleted('done', true, true);
    });

    it('gives a request that arrives in the millisecond a run began a run of its own', async () => {
      const id = newStudyId();
      await post({ ID: id });
      const [first] = await jobsFor(id);
      const running = await takeJob(queue, first.id);
      const began = (await queue.getJob(first.id))!.processedOn as number;
      // The request's clock reads the run's start: the run may have read the image server first.
      const clock = jest.spyOn(Date, 'now').mockReturnValue(began);
      try {
        expect((await post({ ID: id })).status).toBe(200);
      } finally {
        clock.mockRestore();
      }
      const rerun = await jobsFor(id, ['waiting', 'delayed']);
      expect(rerun).toHaveLength(1);
      expect(rerun[0].id).not.toBe(first.id);
      await running.moveToCompleted('done', true, true);
    });

    it('queues a new run after a completed job and after a failed one, whose ids Bull keeps', async () => {
      const id = newStudyId();
      await post({ ID: id });
      const [first] = await jobsFor(id);
      const running = await takeJob(queue, first.id);
      await running.moveToCompleted('done', true, true);
      expect(await (await queue.getJob(first.id))!.getState()).toBe('completed');

      await post({ ID: id });
      const [second] = await jobsFor(id);
      expect(second).toBeDefined();
      expect(second.id).not.toBe(first.id);

      const failing = await takeJob(queue, second.id);
      await failing.discard();
      await failing.moveToFailed({ message: 'image server down' }, true);
      expect(await (await queue.getJob(second.id))!.getState()).toBe('failed');

      await post({ ID: id });
      const [third] = await jobsFor(id);
      expect(third).toBeDefined();
      expect([first.id, second.id]).not.toContain(third.id);
      expect(await jobsFor(id, ['completed'])).toHaveLength(1);
      expect(await jobsFor(id, ['failed'])).toHaveLength(1);
    });
  });
});

describe('POST /api/imgsrv/webhook while the queue (Redis) is down', () => {
  let t: TestApp;
  afterAll(() => t?.close().catch(() => undefined));

  it('answers 503 {message: Service unavailable.} at once, never 500 (the reconciliation queues the study later)', async () => {
    t = await createTestApp({ REDIS_URL: 'redis://127.0.0.1:1' });
    const started = Date.now();
    const res = await t.http.post('/api/imgsrv/webhook', {
      body: { ID: newStudyId() },
      headers: { 'x-webhook-secret': t.config.WEBHOOK_SECRET },
    });
    expect({ status: res.status, body: res.body }).toEqual({ status: 503, body: { message: 'Service unavailable.' } });
    // Orthanc's Lua callbacks wait on this answer (HttpTimeout 10 s): it must not hang.
    expect(Date.now() - started).toBeLessThan(5_000);
    const stranger = await t.http.post('/api/imgsrv/webhook', {
      body: { ID: newStudyId() },
      headers: { 'x-webhook-secret': 'x' },
    });
    expect({ status: stranger.status, body: stranger.body }).toEqual({ status: 401, body: { error: 'Unauthorized' } });
  }, 30_000);
});

/** Plays the worker: takes the next waiting job (it becomes active and locked), which must be `jobId`. */
async function takeJob(queue: Queue, jobId: string | number) {
  const job = await queue.getNextJob();
  if (!job || job.id !== jobId) throw new Error(`expected job ${jobId} to be next, got ${job?.id}`);
  return job;
}
