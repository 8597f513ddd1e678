import { IngestionQueue } from '../../src/ingestion/ingestion-queue.service';
import { IndexWrite, IngestionRepository } from '../../src/ingestion/ingestion.repository';
import { createTestApp, TestApp } from '../support/app';
import { createStudy, dicomUid, imgsrvId } from '../support/clinical-factories';
import { createTenant, createUnit } from '../support/factories';

/**
 * Two index runs of one study overlap when a follow-up starts while a long run is still going; the
 * run that read the image server first may finish last. Its write must not put back the older
 * listing (it would delete the instances the later run wrote, and the sync marker would keep
 * reconciliation from ever queueing the study again). Real Redis (the run numbers) and PostgreSQL.
 */
describe('Index runs of one study: an older listing never overwrites a newer one', () => {
  let t: TestApp;
  let queue: IngestionQueue;
  let repository: IngestionRepository;

  beforeAll(async () => {
    t = await createTestApp();
    queue = t.app.get(IngestionQueue);
    repository = new IngestionRepository(t.db);
  });
  afterAll(() => t.close());

  async function newStudy(): Promise<string> {
    const tenant = await createTenant(t.db);
    const unit = await createUnit(t.db, tenant.id);
    return (await createStudy(t.db, { tenant_id: tenant.id, unit_id: unit.id })).imgsrv_study_id;
  }

  /** The index write of a listing of one series with `count` instances. */
  function listing(imgsrvStudyId: string, seriesId: string, count: number, changeSeq: number): IndexWrite {
    return {
      imgsrvStudyId,
      series: [
        {
          imgsrv_series_id: seriesId,
          series_instance_uid: `${dicomUid()}`,
          modality: 'CT',
          series_number: 1,
          manufacturer: null,
          instance_count: count,
        },
      ],
      instances: Array.from({ length: count }, (_, n) => ({
        imgsrv_instance_id: `${seriesId}-${n}`,
        imgsrv_series_id: seriesId,
        sop_instance_uid: `${dicomUid()}.${n}`,
        instance_number: n + 1,
        rows: 512,
        columns: 512,
        slice_thickness: 1,
      })),
      modalities: ['CT'],
      studyThumbnail: null,
      seriesThumbnails: new Map(),
      changeSeq,
      lastUpdate: null,
    };
  }

  async function stored(imgsrvStudyId: string) {
    const [row] = await t.db.query(
      `SELECT (SELECT count(*)::int FROM instances i JOIN series se ON se.id = i.series_id WHERE se.study_id = s.id) AS instances,
              y.indexed_seq::int AS indexed_seq
         FROM studies s LEFT JOIN imgsrv_study_sync y ON y.imgsrv_study_id = s.imgsrv_study_id
        WHERE s.imgsrv_study_id = $1`,
      [imgsrvStudyId],
    );
    return row;
  }

  it('a run that started before another and writes after it writes nothing: the later listing stays', async () => {
    const study = await newStudy();
    const series = imgsrvId();
    const first = await queue.startIndexRun(study);
    const second = await queue.startIndexRun(study);
    expect(second).toBeGreaterThan(first);

    expect(await repository.saveIndex(listing(study, series, 3, 20), () => queue.indexRunSuperseded(study, second))).toBe(
      'written',
    );
    expect(await repository.saveIndex(listing(study, series, 1, 10), () => queue.indexRunSuperseded(study, first))).toBe(
      'superseded',
    );
    expect(await stored(study)).toEqual({ instances: 3, indexed_seq: 20 });
  });

  it('runs that write in the order they started both write: the later listing is the one kept', async () => {
    const study = await newStudy();
    const series = imgsrvId();
    const first = await queue.startIndexRun(study);
    expect(await repository.saveIndex(listing(study, series, 1, 10), () => queue.indexRunSuperseded(study, first))).toBe(
      'written',
    );
    const second = await queue.startIndexRun(study);
    expect(await repository.saveIndex(listing(study, series, 3, 20), () => queue.indexRunSuperseded(study, second))).toBe(
      'written',
    );
    expect(await stored(study)).toEqual({ instances: 3, indexed_seq: 20 });
  });

  it("an older run waiting on the study's lock while the later one writes finds it superseded once it has the lock", async () => {
    const study = await newStudy();
    const series = imgsrvId();
    const first = await queue.startIndexRun(study);
    const second = await queue.startIndexRun(study);
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let entered!: () => void;
    const inside = new Promise<void>((resolve) => (entered = resolve));
    // The later run holds the lock (its check done) while the older one asks for it.
    const later = repository.saveIndex(listing(study, series, 3, 20), async () => {
      entered();
      await held;
      return queue.indexRunSuperseded(study, second);
    });
    await inside;
    const older = repository.saveIndex(listing(study, series, 1, 10), () => queue.indexRunSuperseded(study, first));
    release();
    expect(await Promise.all([later, older])).toEqual(['written', 'superseded']);
    expect(await stored(study)).toEqual({ instances: 3, indexed_seq: 20 });
  });

  it('runs of other studies are numbered apart: one study never supersedes another', async () => {
    const [a, b] = [await newStudy(), await newStudy()];
    const runOfA = await queue.startIndexRun(a);
    await queue.startIndexRun(b);
    await queue.startIndexRun(b);
    expect(await queue.indexRunSuperseded(a, runOfA)).toBe(false);
    expect(await repository.saveIndex(listing(a, imgsrvId(), 2, 5), () => queue.indexRunSuperseded(a, runOfA))).toBe('written');
  });

  it('a study row that does not exist is told apart from a superseded run', async () => {
    const missing = imgsrvId();
    const run = await queue.startIndexRun(missing);
    expect(await repository.saveIndex(listing(missing, imgsrvId(), 1, 1), () => queue.indexRunSuperseded(missing, run))).toBe(
      'unknown-study',
    );
  });
});
