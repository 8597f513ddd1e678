import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable } from '@nestjs/common';
import type { Job, JobOptions, Queue } from 'bull';
import { randomBytes } from 'crypto';
import Redis from 'ioredis';
import { INDEX_QUEUE, STUDY_QUEUE } from '../common/queues/queues.module';
import { REDIS } from '../common/redis/redis.module';

export const STUDY_JOB = 'study';
export const INDEX_JOB = 'index';
export const RECONCILE_JOB = 'reconcile';

export type IngestionSource = 'webhook' | 'reconcile' | 'import';

/** Jobs carry ids only; the handlers re-read everything. */
export interface StudyJobData {
  imgsrvStudyId: string;
  source: IngestionSource;
}

export interface IndexJobData {
  imgsrvStudyId: string;
  /** The image server's change sequence number read before the study was: the index reflects every change up to it. */
  changeSeq: number;
  /** The study's LastUpdate as the study job saw it. */
  lastUpdate: string | null;
}

export interface QueuedJob {
  jobId: string;
  /** False when the request joined a job that was already waiting. */
  created: boolean;
}

/** States in which a job has not started yet: a new request for the same study can join it. */
const NOT_STARTED = new Set(['waiting', 'delayed', 'paused']);

/** How long the follow-up of a running job waits before it may start. */
export const FOLLOW_UP_DELAY_MS = 2000;

/** A generation key lives this long after its last use; when it expires, the job-state check still holds. */
const GENERATION_TTL_SECONDS = 30 * 24 * 3600;

const generationKey = (kind: string, imgsrvStudyId: string) => `ingest:generation:${kind}:${imgsrvStudyId}`;
const indexRunKey = (imgsrvStudyId: string) => `ingest:index-run:${imgsrvStudyId}`;
/** Longer than any index run; an expired key only lets a run write, as before any key existed. */
const INDEX_RUN_TTL_SECONDS = 24 * 3600;
const jobIdOf = (kind: string, imgsrvStudyId: string, generation: string | null) =>
  `${kind}:${imgsrvStudyId}:${generation || '0'}`;

/** Moves the generation on only if nobody else did in the meantime; returns the current one. */
const ADVANCE_GENERATION = `
local current = redis.call('GET', KEYS[1]) or ''
if current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
  return ARGV[2]
end
return current`;

/**
 * Adds ingestion jobs so that duplicates collapse but nothing is lost.
 *
 * Job ids are `<kind>:<study id>:<generation>`. A burst of requests for a study whose job is still
 * waiting lands on the same id, and Bull keeps one job. Once a job has started (or finished: Bull
 * keeps completed and failed jobs and silently ignores an add with their id), a request that finds
 * it there moves the study's generation on (atomically, so a burst moves it once) and adds a fresh
 * job: a request that arrives after a run started always leads to a new run, which re-reads the
 * image server. A job that came into being, or started, after the request arrived serves it too
 * (idle workers take a job at once, while the rest of a burst is still arriving). That comparison
 * uses the API's and the worker's clocks; skew between them only costs an extra run, or joins a
 * run that began that much earlier, on data that Orthanc had already kept still for StableAge.
 */
@Injectable()
export class IngestionQueue {
  constructor(
    @InjectQueue(STUDY_QUEUE) private readonly studyQueue: Queue,
    @InjectQueue(INDEX_QUEUE) private readonly indexQueue: Queue,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  queueStudy(imgsrvStudyId: string, source: IngestionSource): Promise<QueuedJob> {
    const data: StudyJobData = { imgsrvStudyId, source };
    return this.add(this.studyQueue, STUDY_JOB, imgsrvStudyId, data);
  }

  queueIndex(data: IndexJobData): Promise<QueuedJob> {
    return this.add(this.indexQueue, INDEX_JOB, data.imgsrvStudyId, data);
  }

  /**
   * Numbers an index run of the study, taken before it reads the image server. Two runs of one
   * study can overlap (a follow-up starts while a long run is still going), and the one that read
   * first may finish last: its write would put back a listing older than the one already written.
   */
  async startIndexRun(imgsrvStudyId: string): Promise<number> {
    const [[, run]] = (await this.redis
      .multi()
      .incr(indexRunKey(imgsrvStudyId))
      .expire(indexRunKey(imgsrvStudyId), INDEX_RUN_TTL_SECONDS)
      .exec()) as [[Error | null, number]];
    return run;
  }

  /**
   * Whether a later run of the study has started since `run` did: its write is at least as recent,
   * and anything the image server received after its read leads to another run (add).
   */
  async indexRunSuperseded(imgsrvStudyId: string, run: number): Promise<boolean> {
    return Number(await this.redis.get(indexRunKey(imgsrvStudyId))) > run;
  }

  /**
   * Queues again each study whose latest study or index job failed all its attempts at least
   * `failedForMs` ago, looking at the `limit` oldest failures of each queue, and then takes off the
   * failed list those jobs and any as old whose study has been queued again since: every failure
   * stays listed for `failedForMs`, then only until something retries it. A job added by hand
   * (under another id) is left as it is. Returns how many studies it queued.
   */
  async retryFailed(failedForMs: number, limit: number): Promise<number> {
    const studies = new Set<string>();
    const done: Job[] = [];
    for (const [queue, kind] of [
      [this.studyQueue, STUDY_JOB],
      [this.indexQueue, INDEX_JOB],
    ] as const) {
      const failed = (await queue.getJobs(['failed'], 0, limit - 1, true)).filter(
        (job) =>
          job &&
          typeof job.data?.imgsrvStudyId === 'string' &&
          String(job.id).startsWith(`${kind}:`) &&
          Date.now() - (job.finishedOn ?? 0) >= failedForMs,
      );
      if (failed.length === 0) continue;
      const generations = await this.redis.mget(failed.map((job) => generationKey(kind, job.data.imgsrvStudyId)));
      failed.forEach((job, n) => {
        if (String(job.id) === jobIdOf(kind, job.data.imgsrvStudyId, generations[n])) studies.add(job.data.imgsrvStudyId);
        done.push(job);
      });
    }
    // Queued first, taken off after: a stop in between leaves a failure listed, never a study lost.
    for (const imgsrvStudyId of studies) await this.queueStudy(imgsrvStudyId, 'reconcile');
    for (const job of done) await job.remove();
    return studies.size;
  }

  private async add(
    queue: Queue,
    kind: string,
    imgsrvStudyId: string,
    data: object,
    options: JobOptions = {},
  ): Promise<QueuedJob> {
    const arrivedAt = Date.now();
    const key = generationKey(kind, imgsrvStudyId);
    let generation = (await this.redis.get(key)) ?? '';
    for (let tries = 0; tries < 5; tries++) {
      const jobId = jobIdOf(kind, imgsrvStudyId, generation);
      const existing = await queue.getJob(jobId);
      if (!existing) {
        // Either this creates the job, or joins one another request created a moment ago: both
        // came into being after this request arrived, so their run reads what it announced.
        await queue.add(kind, data, { ...options, jobId });
        return { jobId, created: true };
      }
      const state = await existing.getState();
      if (NOT_STARTED.has(state)) return { jobId, created: false };
      // A run that began after this request arrived (an idle worker took a job of the same burst)
      // reads what this request announced: no need for another. One that began in the same
      // millisecond may have read the image server before the request's change: it counts as
      // begun before, so the request gets a run of its own (an extra run, never a missed one).
      const startedAfterArrival = (existing.processedOn ?? 0) > arrivedAt;
      if ((state === 'active' || state === 'completed') && startedAfterArrival) return { jobId, created: false };
      // While a run is in progress, its follow-up waits a moment, so the rest of a burst joins it
      // instead of each request that arrives after a worker picked the last one starting its own.
      if (state === 'active') options = { ...options, delay: FOLLOW_UP_DELAY_MS };
      const next = `${Date.now().toString(36)}${randomBytes(3).toString('hex')}`;
      generation = String(await this.redis.eval(ADVANCE_GENERATION, 1, key, generation, next, GENERATION_TTL_SECONDS));
    }
    // Only reachable if other requests keep racing ahead: a unique id is always a new run.
    const jobId = `${kind}:${imgsrvStudyId}:${randomBytes(8).toString('hex')}`;
    await queue.add(kind, data, { ...options, jobId });
    return { jobId, created: true };
  }
}
