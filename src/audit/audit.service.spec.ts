import { AccessLogRow } from './access-log.repository';
import { AccessEntry, AUDIT_BATCH_SIZE, AUDIT_FLUSH_INTERVAL_MS, AUDIT_MAX_BUFFERED, AuditService } from './audit.service';

const USER = '11111111-1111-4111-8111-111111111111';
const STUDY = '22222222-2222-4222-8222-222222222222';

class FakeRepository {
  batches: AccessLogRow[][] = [];
  failures = 0;
  /** Resolves the pending insert when set; lets a test hold an INSERT open. */
  gate: Promise<void> | null = null;
  /** What the DataSource runs before its connections close (AccessLogRepository.beforeClose). */
  beforeDatabaseClose: Array<() => Promise<void>> = [];

  beforeClose(write: () => Promise<void>): void {
    this.beforeDatabaseClose.push(write);
  }

  async insertBatch(rows: AccessLogRow[]): Promise<void> {
    if (this.gate) await this.gate;
    if (this.failures > 0) {
      this.failures--;
      throw new Error('connect ECONNREFUSED 127.0.0.1:5432');
    }
    this.batches.push(rows);
  }

  get rows(): AccessLogRow[] {
    return this.batches.flat();
  }
}

const entry = (i = 0) => ({
  action: 'study.view' as const,
  userId: USER,
  tenantId: null,
  studyId: STUDY,
  ip: `10.0.0.${i % 250}`,
  requestId: `req-${i}`,
});

describe('AuditService', () => {
  let repository: FakeRepository;
  let audit: AuditService;

  beforeEach(() => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick'] });
    repository = new FakeRepository();
    audit = new AuditService(repository as never);
    audit.onModuleInit();
    jest.spyOn((audit as any).logger, 'warn').mockImplementation(() => undefined);
    jest.spyOn((audit as any).logger, 'error').mockImplementation(() => undefined);
  });

  afterEach(async () => {
    repository.gate = null;
    repository.failures = 0;
    await audit.onApplicationShutdown();
    jest.useRealTimers();
  });

  const settle = () => new Promise((resolve) => setImmediate(resolve));

  it('returns at once without touching the database, and writes within the flush interval', async () => {
    audit.record(entry(1));
    expect(repository.batches).toHaveLength(0);
    expect(audit.pending).toBe(1);
    await jest.advanceTimersByTimeAsync(AUDIT_FLUSH_INTERVAL_MS);
    expect(repository.batches).toHaveLength(1);
    expect(repository.rows[0]).toMatchObject({
      action: 'study.view',
      user_id: USER,
      study_id: STUDY,
      tenant_id: null,
      target_id: null,
      ip: '10.0.0.1',
      request_id: 'req-1',
    });
    expect(repository.rows[0].occurred_at).toBeInstanceOf(Date);
    expect(audit.pending).toBe(0);
  });

  it('writes a full batch as one INSERT without waiting for the timer', async () => {
    for (let i = 0; i < AUDIT_BATCH_SIZE; i++) audit.record(entry(i));
    await settle();
    await settle();
    expect(repository.batches).toHaveLength(1);
    expect(repository.batches[0]).toHaveLength(AUDIT_BATCH_SIZE);
    expect(repository.batches[0].map((r) => r.request_id)).toEqual(
      Array.from({ length: AUDIT_BATCH_SIZE }, (_, i) => `req-${i}`),
    );
  });

  it('keeps entries while the database is down and writes them, in order, once it is back', async () => {
    repository.failures = 3;
    audit.record(entry(1));
    audit.record(entry(2));
    for (let i = 0; i < 3; i++) await jest.advanceTimersByTimeAsync(AUDIT_FLUSH_INTERVAL_MS);
    expect(repository.batches).toHaveLength(0);
    audit.record(entry(3));
    await jest.advanceTimersByTimeAsync(AUDIT_FLUSH_INTERVAL_MS);
    expect(repository.rows.map((r) => r.request_id)).toEqual(['req-1', 'req-2', 'req-3']);
  });

  it('never throws into the caller, whatever it is given', () => {
    expect(() =>
      audit.record({ action: 'study.image', userId: 'not-a-uuid', studyId: { $ne: 1 }, targetId: 42, ip: 'x'.repeat(500) }),
    ).not.toThrow();
    expect(() => audit.record(undefined as never)).not.toThrow();
  });

  it('stores ids that are not uuids as null and clips long strings', async () => {
    audit.record({
      action: 'study.image',
      userId: 'not-a-uuid',
      studyId: "'; DROP TABLE studies; --",
      targetId: STUDY.toUpperCase(),
      ip: 'x'.repeat(500),
      requestId: 'r'.repeat(1000),
    });
    await audit.flush();
    const [row] = repository.rows;
    expect(row).toMatchObject({ user_id: null, study_id: null, target_id: STUDY });
    expect(row.ip).toHaveLength(64);
    expect(row.request_id).toHaveLength(128);
  });

  it('bounds memory while the database stays down, dropping the oldest entries', async () => {
    repository.failures = Number.MAX_SAFE_INTEGER;
    for (let i = 0; i < AUDIT_MAX_BUFFERED + 10; i++) audit.record(entry(i));
    await jest.advanceTimersByTimeAsync(AUDIT_FLUSH_INTERVAL_MS);
    expect(audit.pending).toBe(AUDIT_MAX_BUFFERED);
    repository.failures = 0;
    await audit.flush();
    expect(repository.rows[0].request_id).toBe('req-10');
    expect(repository.rows).toHaveLength(AUDIT_MAX_BUFFERED);
    expect(Math.max(...repository.batches.map((b) => b.length))).toBeLessThanOrEqual(1000);
  });

  it('writes what arrived during a running INSERT, and everything on shutdown', async () => {
    let open!: () => void;
    repository.gate = new Promise<void>((resolve) => (open = resolve));
    audit.record(entry(1));
    const first = audit.flush();
    audit.record(entry(2));
    expect(audit.flush()).toBe(first);
    open();
    repository.gate = null;
    await first;
    audit.record(entry(3));
    await audit.onApplicationShutdown();
    expect(repository.rows.map((r) => r.request_id)).toEqual(['req-1', 'req-2', 'req-3']);
    expect(audit.pending).toBe(0);
  });

  it('records an entry once it is decided, and none when it is decided against', async () => {
    let decide!: (decided: AccessEntry | null) => void;
    audit.recordWhen(new Promise((resolve) => (decide = resolve)));
    audit.recordWhen(Promise.resolve(null));
    audit.recordWhen(Promise.reject(new Error('Connection is closed.')));
    await settle();
    expect(audit.pending).toBe(0);
    decide(entry(1));
    await settle();
    expect(audit.pending).toBe(1);
    await audit.flush();
    expect(repository.rows.map((r) => r.request_id)).toEqual(['req-1']);
  });

  it('keeps writing on its timer until the application shuts down, then writes what is still being decided', async () => {
    // What a request still running while Nest closes the HTTP server records: after onModuleDestroy.
    audit.record(entry(1));
    await jest.advanceTimersByTimeAsync(AUDIT_FLUSH_INTERVAL_MS);
    expect(repository.rows).toHaveLength(1);
    let decide!: (decided: AccessEntry | null) => void;
    audit.recordWhen(new Promise((resolve) => (decide = resolve)));
    audit.record(entry(2));
    const closed = audit.onApplicationShutdown();
    await settle();
    expect(repository.rows).toHaveLength(1);
    decide(entry(3));
    await closed;
    expect(repository.rows.map((r) => r.request_id)).toEqual(['req-1', 'req-2', 'req-3']);
  });

  it('writes its last entries before the database closes, whichever shutdown hook comes first, once', async () => {
    expect(repository.beforeDatabaseClose).toHaveLength(1);
    audit.record(entry(1));
    // TypeOrmModule's onApplicationShutdown destroying the DataSource before this service's hook ran.
    await Promise.all(repository.beforeDatabaseClose.map((write) => write()));
    expect(repository.rows.map((r) => r.request_id)).toEqual(['req-1']);
    await audit.onApplicationShutdown();
    expect(repository.batches).toHaveLength(1);
  });
});
