import { getQueueToken } from '@nestjs/bull';
import type { Queue } from 'bull';
import { randomUUID } from 'crypto';
import { INDEX_QUEUE, STUDY_QUEUE } from '../../src/common/queues/queues.module';
import { IngestionQueue } from '../../src/ingestion/ingestion-queue.service';
import { createTestApp, TestApp } from '../support/app';

/**
 * What reconciliation queues again (IngestionQueue.failedStudies), on real Bull queues in Redis.
 * The app has its own queue prefix, so no other test file's worker takes these jobs.
 */
describe('Ingestion queue: studies whose last job failed all its attempts', () => {
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

  it('names a study whose study job failed, once it has been failed long enough, until it is queued again', async () => {
    const study = randomUUID();
    expect(await ingestion.queueStudy(study, 'webhook')).toMatchObject({ created: true });
    await failNext(studies);
    expect(await ingestion.failedStudies(60_000, 100)).not.toContain(study);
    expect(await ingestion.failedStudies(0, 100)).toContain(study);

    expect(await ingestion.queueStudy(study, 'reconcile')).toMatchObject({ created: true });
    expect(await ingestion.failedStudies(0, 100)).not.toContain(study);
    // The failed job stays on the board; the new one waits for a worker.
    expect(await studies.getFailedCount()).toBeGreaterThanOrEqual(1);
    const waiting = await studies.getWaiting();
    expect(waiting.map((job) => job.data.imgsrvStudyId)).toContain(study);
    await studies.empty();
  });

  it('names a study whose index job failed; not one whose failed job a later request has superseded', async () => {
    const indexed = randomUUID();
    await ingestion.queueIndex({ imgsrvStudyId: indexed, changeSeq: 1, lastUpdate: null });
    await failNext(indexes);
    const superseded = randomUUID();
    await ingestion.queueStudy(superseded, 'webhook');
    await failNext(studies);
    await ingestion.queueStudy(superseded, 'webhook');

    const failed = await ingestion.failedStudies(0, 100);
    expect(failed).toContain(indexed);
    expect(failed).not.toContain(superseded);
  });
});
