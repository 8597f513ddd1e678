import { InjectQueue } from '@nestjs/bull';
import { Inject, Injectable } from '@nestjs/common';
import type { Job, Queue } from 'bull';
import Redis from 'ioredis';
import { collectDefaultMetrics, Counter, Gauge, Registry } from 'prom-client';
import { INDEX_QUEUE, RECONCILE_QUEUE, REPORT_FILING_QUEUE, STUDY_QUEUE } from '../../common/queues/queues.module';
import { REDIS } from '../../common/redis/redis.module';
import { withTimeout } from '../../common/with-timeout';
import { ProcessCounter, ProcessHistogram } from './process-metrics';
import { SharedCounter, SharedHistogram } from './shared-histogram';

export type ViewerValidationResult = 'allowed' | 'missing_token' | 'invalid_token' | 'forbidden';
export type JobOutcome = 'completed' | 'failed';
/** `listed`: the study is in the API's lists; `indexed`: series, instances and thumbnails are done. */
export type IngestionStage = 'listed' | 'indexed';
/**
 * Why a study job's sender did not decide where the study is: `unknown_aet` and `address_mismatch`
 * leave it in quarantine; `other_clinic`: the study already belongs to a clinic, which keeps it.
 */
export type UntrustedSenderReason = 'unknown_aet' | 'address_mismatch' | 'invalid_uid' | 'other_clinic';

/** Why the study's door refused an instance a device sent (see DoorRefusal in src/ingestion/door). */
export type DicomDoorRefusal =
  'replaces_instance' | 'other_patient' | 'unregistered_sender' | 'other_clinic' | 'quarantined_study';

export const QUEUE_STATES = ['waiting', 'active', 'delayed', 'failed'] as const;

const HTTP_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
const JOB_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600];
const LAG_BUCKETS = [0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1800, 3600];
// A scrape must answer even when Redis does not: queue depths are then left out, not stale.
const QUEUE_COUNT_TIMEOUT_MS = 2000;

/**
 * The service's Prometheus metrics. Request and viewer counters are per process (Prometheus sums
 * the API processes); job durations and ingestion lag are observed by the worker, which serves no
 * HTTP, so they are kept in Redis and read by whichever API process is scraped (cluster-wide series:
 * aggregate them with max(), not sum(), across API processes). Queue depths are read on scrape.
 */
@Injectable()
export class MetricsService {
  readonly registry = new Registry();
  private readonly httpDuration = new ProcessHistogram(
    'pacs_http_request_duration_seconds',
    'HTTP request latency by route pattern (not raw URL), method and status code.',
    HTTP_BUCKETS,
  );
  private readonly viewerValidations = new ProcessCounter(
    'pacs_viewer_validations_total',
    'Viewer token validations (the proxy subrequest) by result.',
  );
  private readonly viewerCache = new ProcessCounter(
    'pacs_viewer_validation_cache_total',
    'Study-to-tenant lookups of viewer validations: hit (cache) or miss (database).',
  );
  private readonly dicomDoorRefusals: Counter<'reason'>;
  private readonly jobDuration: SharedHistogram;
  private readonly ingestionLagHistogram: SharedHistogram;
  private readonly untrustedSenders: SharedCounter;

  constructor(
    @Inject(REDIS) redis: Redis,
    @InjectQueue(STUDY_QUEUE) studyQueue: Queue,
    @InjectQueue(INDEX_QUEUE) indexQueue: Queue,
    @InjectQueue(RECONCILE_QUEUE) reconcileQueue: Queue,
    @InjectQueue(REPORT_FILING_QUEUE) reportFilingQueue: Queue,
  ) {
    const registers = [this.registry];
    collectDefaultMetrics({ register: this.registry, prefix: 'pacs_' });
    this.registry.registerMetric(this.httpDuration as never);
    this.registry.registerMetric(
      this.httpDuration.counter(
        'pacs_http_requests_total',
        'HTTP requests answered, by route pattern, method and status code.',
      ) as never,
    );
    this.registry.registerMetric(this.viewerValidations as never);
    this.registry.registerMetric(this.viewerCache as never);
    this.dicomDoorRefusals = new Counter({
      name: 'pacs_dicom_door_refused_total',
      help: "Instances a device sent that the study's door refused (C-STORE 0xA700), by reason.",
      labelNames: ['reason'],
      registers,
    });
    const queues = [studyQueue, indexQueue, reconcileQueue, reportFilingQueue];
    new Gauge({
      name: 'pacs_queue_jobs',
      help: 'Jobs per queue and state, read from Redis at scrape time.',
      labelNames: ['queue', 'state'],
      registers,
      async collect() {
        this.reset();
        await Promise.all(
          queues.map(async (queue) => {
            const counts = await withTimeout(queue.getJobCounts(), QUEUE_COUNT_TIMEOUT_MS).catch(() => null);
            if (!counts) return;
            for (const state of QUEUE_STATES) this.set({ queue: queue.name, state }, counts[state] ?? 0);
          }),
        );
      },
    });
    this.jobDuration = new SharedHistogram(
      redis,
      'pacs_job_duration_seconds',
      'Queue job run time (processedOn to finishedOn), by queue and outcome, across all workers.',
      ['queue', 'outcome'],
      JOB_BUCKETS,
    );
    this.ingestionLagHistogram = new SharedHistogram(
      redis,
      'pacs_ingestion_lag_seconds',
      "Time from the image server's stable-study event to the study being listed, then fully indexed.",
      ['stage'],
      LAG_BUCKETS,
    );
    this.untrustedSenders = new SharedCounter(
      redis,
      'pacs_ingestion_untrusted_sender_total',
      'Study jobs whose sender did not place the study, by reason: unknown_aet, address_mismatch and invalid_uid (quarantine), other_clinic (kept in its clinic).',
      ['reason'],
    );
    this.registry.registerMetric(this.jobDuration as never);
    this.registry.registerMetric(this.ingestionLagHistogram as never);
    this.registry.registerMetric(this.untrustedSenders as never);
  }

  get contentType(): string {
    return this.registry.contentType;
  }

  render(): Promise<string> {
    return this.registry.metrics();
  }

  httpRequest(method: string, route: string, statusCode: number, seconds: number): void {
    if (!Number.isFinite(seconds)) return;
    this.httpDuration.observe(
      `${method} ${statusCode} ${route}`,
      () => ({ method, route, status_code: String(statusCode) }),
      seconds,
    );
  }

  /** For the viewer's validate endpoint; `cacheHit` when a study-to-tenant lookup was made. */
  viewerValidation(result: ViewerValidationResult, cacheHit?: boolean): void {
    this.viewerValidations.inc(result, () => ({ result }));
    if (cacheHit !== undefined) {
      const hit = cacheHit ? 'hit' : 'miss';
      this.viewerCache.inc(hit, () => ({ result: hit }));
    }
  }

  /** Counted by the API process that answered the image server's door question. */
  dicomDoorRefusal(reason: DicomDoorRefusal): void {
    this.dicomDoorRefusals.inc({ reason });
  }

  /** A job's run time from its own timestamps; jobs that never started are ignored. */
  async jobFinished(queue: string, job: Pick<Job, 'processedOn' | 'finishedOn'>, outcome: JobOutcome): Promise<void> {
    if (!job.processedOn) return;
    const finishedOn = job.finishedOn ?? Date.now();
    await this.jobDuration.observe({ queue, outcome }, (finishedOn - job.processedOn) / 1000);
  }

  async ingestionLag(stage: IngestionStage, seconds: number): Promise<void> {
    await this.ingestionLagHistogram.observe({ stage }, seconds);
  }

  async untrustedSender(reason: UntrustedSenderReason): Promise<void> {
    await this.untrustedSenders.inc({ reason });
  }
}
