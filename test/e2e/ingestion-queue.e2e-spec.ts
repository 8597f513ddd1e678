import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { randomUUID } from 'crypto';
import { INDEX_QUEUE, STUDY_QUEUE } from '../../src/common/queues/queues.module';
import { IngestionQueue } from '../../src/ingestion/ingestion-queue.service';
import { createTestApp, TestApp } from '../support/app';

/**
 * What reconciliation queues again (IngestionQueue.retryFailed), on real Bull queues in Redis.
 * The app has its own queue prefix, so no other test file's worker takes these jobs.
 */
describe('Ingestion queue: studies whose last job failed all its attempts, queued again', () => {
  let t: TestApp;
  let ingestion: IngestionQueue;
  let studies: Queue;
  let indexes: Queue;

  /** Takes the next job of the queue and fails it for good, as a worker does after its last attempt. */
  async function failNext(queue: Queue): Promise<void> {
    const job = await queue.getNextJob();
    if (!job) throw new Error('no job to take');
    await job.discard();
    await job.moveToFailed({ message: 'image server down' }, true);
    await job.releaseLock();
  }

  beforeAll(async () => {
    t = await createTestApp({ QUEUE_PREFIX: `${process.env.QUEUE_PREFIX}_failed` });
    ingestion = t.app.get(IngestionQueue);
    studies = t.app.get<Queue>(getQueueToken(STUDY_QUEUE));
    indexes = t.app.get<Queue>(getQueueToken(INDEX_QUEUE));
  });
  afterAll(() => t.close());

  /** The study ids of the queue's jobs in these states. */
  const studiesIn = async (queue: Queue, states: Array<'waiting' | 'failed' | 'delayed'>) =>
    (await queue.getJobs(states)).map((job) => job.data.imgsrvStudyId as string);

  afterEach(async () => {
    for (const queue of [studies, indexes]) {
      await queue.empty();
      await queue.clean(0, 'failed');
    }
  });

  it('queues a study whose study job failed once it has been failed long enough, and takes that failure off the list', async () => {
    const study = randomUUID();
    expect(await ingestion.queueStudy(study, 'webhook')).toMatchObject({ created: true });
    await failNext(studies);

    expect(await ingestion.retryFailed(60_000, 100)).toBe(0);
    expect(await studiesIn(studies, ['failed'])).toEqual([study]);
    expect(await studiesIn(studies, ['waiting'])).toEqual([]);

    expect(await ingestion.retryFailed(0, 100)).toBe(1);
    expect(await studiesIn(studies, ['failed'])).toEqual([]);
    const [again] = await studies.getWaiting();
    expect(again.data).toEqual({ imgsrvStudyId: study, source: 'reconcile' });
    expect(await ingestion.retryFailed(0, 100)).toBe(0);
  });

  it('queues the study of a failed index job; a failure whose study was queued again since is only taken off the list', async () => {
    const indexed = randomUUID();
    await ingestion.queueIndex({ imgsrvStudyId: indexed, changeSeq: 1, lastUpdate: null });
    await failNext(indexes);
    const superseded = randomUUID();
    await ingestion.queueStudy(superseded, 'webhook');
    await failNext(studies);
    await ingestion.queueStudy(superseded, 'webhook');

    expect(await ingestion.retryFailed(0, 100)).toBe(1);
    expect((await studiesIn(studies, ['waiting'])).sort()).toEqual([indexed, superseded].sort());
    expect(await studiesIn(studies, ['failed'])).toEqual([]);
    expect(await studiesIn(indexes, ['failed'])).toEqual([]);
  });

  it('leaves a failure whose study was queued again since listed until it is as old, and a job added by hand as it is', async () => {
    const byHand = randomUUID();
    await studies.add('study', { imgsrvStudyId: byHand, source: 'webhook' }, { jobId: `manual-${byHand}`, attempts: 1 });
    await failNext(studies);
    const superseded = randomUUID();
    await ingestion.queueStudy(superseded, 'webhook');
    await failNext(studies);
    await ingestion.queueStudy(superseded, 'webhook');

    expect(await ingestion.retryFailed(60_000, 100)).toBe(0);
    expect((await studiesIn(studies, ['failed'])).sort()).toEqual([superseded, byHand].sort());
    expect(await ingestion.retryFailed(0, 100)).toBe(0);
    expect(await studiesIn(studies, ['failed'])).toEqual([byHand]);
  });

  it('looks at the oldest failures first, `limit` of them a run', async () => {
    const [first, second, third] = [randomUUID(), randomUUID(), randomUUID()];
    for (const study of [first, second, third]) {
      await ingestion.queueStudy(study, 'webhook');
      await failNext(studies);
      // Bull orders failures by the millisecond they failed in, and one millisecond's by job id.
      await new Promise((resolve) => setTimeout(resolve, 2));
    }
    expect(await ingestion.retryFailed(0, 2)).toBe(2);
    expect(await studiesIn(studies, ['failed'])).toEqual([third]);
    expect((await studiesIn(studies, ['waiting'])).sort()).toEqual([first, second].sort());
  });
});
