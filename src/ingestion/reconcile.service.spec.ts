import { Logger } from '@nestjs/common';
import { ImgsrvClient, OrthancChange } from '../imgsrv';
import { IngestionQueue } from './ingestion-queue.service';
import { IngestionRepository, RECONCILE_POSITION_KEY, StudySyncMarker } from './ingestion.repository';
import { FAILED_RETRY_AFTER_MS, ReconcileService } from './reconcile.service';

/** An image server whose change feed is `feed`, answered in pages as Orthanc does. */
function fakeImgsrv(feed: OrthancChange[]) {
  const calls: Array<[number, number]> = [];
  const imgsrv = {
    lastChangeSeq: async () => feed.at(-1)?.Seq ?? 0,
    getChanges: async (since: number, limit: number) => {
      calls.push([since, limit]);
      const after = feed.filter((c) => c.Seq > since);
      const page = after.slice(0, limit);
      return { Changes: page, Done: after.length <= limit, Last: page.at(-1)?.Seq ?? feed.at(-1)?.Seq ?? 0 };
    },
  };
  return { imgsrv: imgsrv as unknown as ImgsrvClient, calls };
}

function fakeRepository(state: Record<string, string>, markers: Record<string, StudySyncMarker>, released: string[] = []) {
  return {
    exclusively: async <T>(_key: number, work: () => Promise<T>) => work(),
    getSyncState: async (key: string) => state[key] ?? null,
    setSyncState: async (key: string, value: string) => {
      state[key] = value;
    },
    syncMarkers: async (ids: string[]) => new Map(ids.filter((id) => markers[id]).map((id) => [id, markers[id]])),
    quarantinedWithRegisteredDevice: async () => released,
  } as unknown as IngestionRepository;
}

/** A queue where `failed` are the studies whose last job failed all its attempts long enough ago. */
function fakeQueue(failed: string[] = []) {
  const queued: string[] = [];
  const asked: Array<[number, number]> = [];
  const queue = {
    queueStudy: async (id: string) => queued.push(id),
    retryFailed: async (failedForMs: number, limit: number) => {
      asked.push([failedForMs, limit]);
      queued.push(...failed);
      return failed.length;
    },
  } as unknown as IngestionQueue;
  return { queue, queued, asked };
}

const stable = (seq: number, id: string): OrthancChange => ({
  ChangeType: 'StableStudy',
  ID: id,
  ResourceType: 'Study',
  Seq: seq,
});
const other = (seq: number, id: string): OrthancChange => ({
  ChangeType: 'NewInstance',
  ID: id,
  ResourceType: 'Instance',
  Seq: seq,
});
const created = (seq: number, id: string): OrthancChange => ({
  ChangeType: 'NewStudy',
  ID: id,
  ResourceType: 'Study',
  Seq: seq,
});

/** The image server's answer to GET /studies/{id}: stable, still arriving, or gone. */
function withStudies(imgsrv: ImgsrvClient, studies: Record<string, { IsStable: boolean } | null>) {
  const asked: string[] = [];
  Object.assign(imgsrv, {
    getStudy: async (id: string) => {
      asked.push(id);
      return studies[id] === null ? null : { ID: id, ...studies[id], MainDicomTags: {}, PatientMainDicomTags: {} };
    },
  });
  return asked;
}

describe('ReconcileService', () => {
  beforeAll(() => Logger.overrideLogger(false));
  it('queues the stable studies not indexed since their change, and stores the new position', async () => {
    const feed = [other(1, 'i1'), stable(2, 'a'), stable(3, 'b'), stable(4, 'c'), other(5, 'i2'), stable(6, 'a')];
    const { imgsrv } = fakeImgsrv(feed);
    const state: Record<string, string> = {};
    // b was indexed after its change; c before it; a never; a's latest change counts.
    const markers = { b: { indexed_seq: 3, last_update: 'x' }, c: { indexed_seq: 3, last_update: 'x' } };
    const { queue, queued } = fakeQueue();
    const result = await new ReconcileService(imgsrv, fakeRepository(state, markers), queue).run();
    expect(queued.sort()).toEqual(['a', 'c']);
    expect(result).toMatchObject({ from: 0, to: 6, stableEvents: 4, queued: 2, upToDate: 1, released: 0 });
    expect(state[RECONCILE_POSITION_KEY]).toBe('6');
  });

  it('resumes from the stored position and reads a long backlog in pages', async () => {
    const feed = Array.from({ length: 2500 }, (_, i) => stable(i + 1, `s${i + 1}`));
    const { imgsrv, calls } = fakeImgsrv(feed);
    const state = { [RECONCILE_POSITION_KEY]: '100' };
    const { queue, queued } = fakeQueue();
    const result = await new ReconcileService(imgsrv, fakeRepository(state, {}), queue).run();
    expect(calls.map((c) => c[0])).toEqual([100, 1100, 2100]);
    expect(queued).toHaveLength(2400);
    expect(queued[0]).toBe('s101');
    expect(result.to).toBe(2500);
    expect(state[RECONCILE_POSITION_KEY]).toBe('2500');
  });

  it('reads the feed from the start when the image server was replaced (its sequence is behind)', async () => {
    const { imgsrv, calls } = fakeImgsrv([stable(1, 'fresh')]);
    const state = { [RECONCILE_POSITION_KEY]: '9000' };
    const { queue, queued } = fakeQueue();
    await new ReconcileService(imgsrv, fakeRepository(state, {}), queue).run();
    expect(calls[0][0]).toBe(0);
    expect(queued).toEqual(['fresh']);
    expect(state[RECONCILE_POSITION_KEY]).toBe('1');
  });

  describe('new studies the image server never announced (it restarted while they arrived)', () => {
    it('queues a new study that is stable without a StableStudy change', async () => {
      const { imgsrv } = fakeImgsrv([created(1, 'lost'), other(2, 'i1'), other(3, 'i2')]);
      withStudies(imgsrv, { lost: { IsStable: true } });
      const state: Record<string, string> = {};
      const { queue, queued } = fakeQueue();
      const result = await new ReconcileService(imgsrv, fakeRepository(state, {}), queue).run();
      expect(queued).toEqual(['lost']);
      expect(result).toMatchObject({ recovered: 1, queued: 0, to: 3 });
      expect(state[RECONCILE_POSITION_KEY]).toBe('3');
    });

    it('keeps the position before a new study still arriving, and queues it once it is announced', async () => {
      const feed = [stable(1, 'done'), created(2, 'arriving'), other(3, 'i1'), stable(4, 'other')];
      const { imgsrv } = fakeImgsrv(feed);
      withStudies(imgsrv, { arriving: { IsStable: false } });
      const state: Record<string, string> = {};
      const { queue, queued } = fakeQueue();
      const service = new ReconcileService(imgsrv, fakeRepository(state, {}), queue);
      const first = await service.run();
      expect(queued.sort()).toEqual(['done', 'other']);
      expect(first.to).toBe(4);
      expect(state[RECONCILE_POSITION_KEY]).toBe('1');

      feed.push(other(5, 'i2'), stable(6, 'arriving'));
      queued.length = 0;
      await service.run();
      expect(queued).toContain('arriving');
      expect(state[RECONCILE_POSITION_KEY]).toBe('6');
    });

    it('does not ask the image server about a new study announced in the same page, or already indexed', async () => {
      const { imgsrv } = fakeImgsrv([created(1, 'a'), stable(2, 'a'), created(3, 'b')]);
      const asked = withStudies(imgsrv, {});
      const state: Record<string, string> = {};
      const { queue, queued } = fakeQueue();
      await new ReconcileService(imgsrv, fakeRepository(state, { b: { indexed_seq: 3, last_update: 'x' } }), queue).run();
      expect(asked).toEqual([]);
      expect(queued).toEqual(['a']);
      expect(state[RECONCILE_POSITION_KEY]).toBe('3');
    });

    it('forgets a new study the image server no longer holds', async () => {
      const { imgsrv } = fakeImgsrv([created(1, 'deleted'), other(2, 'i1')]);
      withStudies(imgsrv, { deleted: null });
      const state: Record<string, string> = {};
      const { queue, queued } = fakeQueue();
      await new ReconcileService(imgsrv, fakeRepository(state, {}), queue).run();
      expect(queued).toEqual([]);
      expect(state[RECONCILE_POSITION_KEY]).toBe('2');
    });
  });

  it('queues quarantined studies whose device has been registered since', async () => {
    const { imgsrv } = fakeImgsrv([]);
    const { queue, queued } = fakeQueue();
    const result = await new ReconcileService(imgsrv, fakeRepository({}, {}, ['q1', 'q2']), queue).run();
    expect(queued).toEqual(['q1', 'q2']);
    expect(result.released).toBe(2);
  });

  it('queues again the studies whose last job failed all its attempts 15 minutes ago or more (the feed has moved past them)', async () => {
    const { imgsrv } = fakeImgsrv([]);
    const { queue, queued, asked } = fakeQueue(['f1', 'f2']);
    const result = await new ReconcileService(imgsrv, fakeRepository({}, {}), queue).run();
    expect(asked).toEqual([[FAILED_RETRY_AFTER_MS, 100]]);
    expect(FAILED_RETRY_AFTER_MS).toBe(15 * 60_000);
    expect(queued).toEqual(['f1', 'f2']);
    expect(result.retried).toBe(2);
  });

  it('does nothing while another run holds the lock', async () => {
    const { imgsrv, calls } = fakeImgsrv([stable(1, 'a')]);
    const repository = { exclusively: async () => null } as unknown as IngestionRepository;
    const { queue, queued } = fakeQueue();
    const result = await new ReconcileService(imgsrv, repository, queue).run();
    expect(result.skipped).toBe('another run in progress');
    expect(calls).toHaveLength(0);
    expect(queued).toHaveLength(0);
  });
});
