import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { AccessLogRepository, AccessLogRow } from './access-log.repository';

/** Every act the access trail records (decisions.md 3e); `GET /api/audit/access?action=` takes these. */
export const ACCESS_ACTIONS = [
  'study.search',
  'study.view',
  'patient.search',
  'patient.view',
  'study.image',
  'study.thumbnail',
  'series.thumbnail',
  'viewer_token.issue',
  'report.read',
  'report.write',
  'report.sign',
  'study.download',
  'study.upload',
  'share.create',
  'share.open',
  'share.revoke',
] as const;
export type AccessAction = (typeof ACCESS_ACTIONS)[number];

/** What a caller tells the access log; ids that are not uuids are stored as null. */
export interface AccessEntry {
  action: AccessAction;
  userId: string | null | undefined;
  /** The caller's tenant; replaced by the study's own tenant when the study is known. */
  tenantId?: string | null;
  studyId?: unknown;
  /** The instance or series opened inside the study. */
  targetId?: unknown;
  /** The share through which the act happened (a share's viewer token, a share opened or revoked). */
  shareId?: unknown;
  /** The study's DICOM Patient ID when the caller knows it; else taken from the study when it is written. */
  patientId?: string | null;
  /** For a search: how many studies (or patients) it returned (the search text itself is never recorded). */
  count?: number | null;
  ip?: string | null;
  requestId?: string | null;
}

export const AUDIT_FLUSH_INTERVAL_MS = 1000;
export const AUDIT_BATCH_SIZE = 100;
/** Rows per INSERT when a backlog is drained after an outage. */
const MAX_ROWS_PER_INSERT = 1000;
/** While PostgreSQL is down entries wait in memory, up to this many (the oldest go first). */
export const AUDIT_MAX_BUFFERED = 50_000;
const WARN_EVERY_MS = 30_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const uuidOrNull = (value: unknown): string | null =>
  typeof value === 'string' && UUID.test(value) ? value.toLowerCase() : null;
const clip = (value: unknown, max: number): string | null =>
  typeof value === 'string' && value.length > 0 ? value.slice(0, max) : null;

/**
 * The access trail: who searched, opened, wrote or shared which study. `record` only appends to a
 * buffer: it never waits for PostgreSQL and never throws into the request. The buffer is written
 * every second, or as soon as it holds a batch, with one multi-row INSERT, and once more when
 * the application shuts down, after the HTTP server has closed and before the database has.
 */
@Injectable()
export class AuditService implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger('AccessLog');
  private buffer: AccessLogRow[] = [];
  private flushing: Promise<void> | null = null;
  private timer: NodeJS.Timeout | null = null;
  private flushQueued = false;
  private dropped = 0;
  private lastWarning = 0;
  /** Entries not known yet (recordWhen): the last flush waits for them. */
  private readonly deciding = new Set<Promise<void>>();
  private closing: Promise<void> | null = null;

  constructor(private readonly repository: AccessLogRepository) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), AUDIT_FLUSH_INTERVAL_MS);
    this.timer.unref();
    this.repository.beforeClose(() => this.close());
  }

  /**
   * Not onModuleDestroy: Nest runs that before it closes the HTTP server, and the requests Fastify
   * still lets finish then record too. By here the server is closed; the database is closed only
   * after `close` (AccessLogRepository.beforeClose), whichever of the two shutdown hooks runs first.
   */
  onApplicationShutdown(): Promise<void> {
    return this.close();
  }

  /** The last flush, once: the timer stops, and everything recorded or being decided is written. */
  close(): Promise<void> {
    this.closing ??= this.writeRemaining();
    return this.closing;
  }

  record(entry: AccessEntry): void {
    try {
      this.buffer.push({
        occurred_at: new Date(),
        action: entry.action,
        user_id: uuidOrNull(entry.userId),
        tenant_id: uuidOrNull(entry.tenantId),
        study_id: uuidOrNull(entry.studyId),
        target_id: uuidOrNull(entry.targetId),
        share_id: uuidOrNull(entry.shareId),
        patient_id: clip(entry.patientId, 64),
        result_count: Number.isSafeInteger(entry.count) ? (entry.count as number) : null,
        ip: clip(entry.ip, 64),
        request_id: clip(entry.requestId, 128),
      });
      if (this.buffer.length > AUDIT_MAX_BUFFERED) {
        const excess = this.buffer.length - AUDIT_MAX_BUFFERED;
        this.buffer.splice(0, excess);
        this.dropped += excess;
      }
      if (this.buffer.length >= AUDIT_BATCH_SIZE && !this.flushQueued) {
        this.flushQueued = true;
        setImmediate(() => {
          this.flushQueued = false;
          void this.flush();
        });
      }
    } catch (error) {
      // The request that opened the study must succeed even if the log cannot take the entry.
      this.warn(`access log entry not recorded: ${(error as Error)?.message}`);
    }
  }

  /**
   * An entry known only once `decided` settles (a study.view once its window is checked in Redis),
   * or none if it settles with null.
   */
  recordWhen(decided: Promise<AccessEntry | null>): void {
    const pending: Promise<void> = decided
      .then(
        (entry) => {
          if (entry) this.record(entry);
        },
        (error: unknown) => this.warn(`access log entry not recorded: ${(error as Error)?.message}`),
      )
      .finally(() => this.deciding.delete(pending));
    this.deciding.add(pending);
  }

  /** Entries waiting to be written (for tests and metrics). */
  get pending(): number {
    return this.buffer.length;
  }

  /** Writes everything buffered; never rejects. Concurrent calls share one run. */
  flush(): Promise<void> {
    if (this.flushing) return this.flushing;
    if (this.buffer.length === 0) return Promise.resolve();
    this.flushing = this.drain().finally(() => {
      this.flushing = null;
    });
    return this.flushing;
  }

  private async writeRemaining(): Promise<void> {
    while (this.deciding.size > 0) await Promise.all([...this.deciding]);
    if (this.timer) clearInterval(this.timer);
    this.timer = null;
    // A flush may be running: wait for it, then write what arrived meanwhile.
    await this.flush();
    await this.flush();
    if (this.buffer.length > 0) {
      this.logger.error(`${this.buffer.length} access log entries could not be written before shutdown`);
    }
  }

  private async drain(): Promise<void> {
    while (this.buffer.length > 0) {
      const batch = this.buffer.splice(0, MAX_ROWS_PER_INSERT);
      try {
        await this.repository.insertBatch(batch);
      } catch (error) {
        // Put the batch back in front, in order, and try again at the next tick.
        this.buffer.unshift(...batch);
        if (this.buffer.length > AUDIT_MAX_BUFFERED) {
          const excess = this.buffer.length - AUDIT_MAX_BUFFERED;
          this.buffer.splice(0, excess);
          this.dropped += excess;
        }
        this.warn(`${this.buffer.length} access log entries waiting: ${(error as Error)?.message}`);
        return;
      }
    }
    if (this.dropped > 0) {
      this.logger.error(`${this.dropped} access log entries were dropped while the database was unavailable`);
      this.dropped = 0;
    }
  }

  private warn(message: string): void {
    const now = Date.now();
    if (now - this.lastWarning < WARN_EVERY_MS) return;
    this.lastWarning = now;
    this.logger.warn(message);
  }
}
