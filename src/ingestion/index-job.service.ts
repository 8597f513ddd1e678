import { Injectable, Logger } from '@nestjs/common';
import { ImgsrvClient, ImgsrvError, ImageGeometry, OrthancInstance, OrthancSeries } from '../imgsrv';
import { mapWithConcurrency } from './concurrency';
import {
  geometryFromQido,
  geometryFromSimplifiedTags,
  GEOMETRY_TAGS,
  InstanceFields,
  mapInstance,
  mapSeries,
  NO_GEOMETRY,
  SeriesFields,
} from './dicom-mapping';
import { IndexJobData, IngestionQueue } from './ingestion-queue.service';
import { IndexedInstance, IndexedSeries, IngestionRepository } from './ingestion.repository';
import { makeThumbnail } from './thumbnails';

/** Parallel calls to the image server within one job: enough to hide latency, not enough to flood it. */
const QIDO_CONCURRENCY = 4;
/**
 * QIDO-RS pages: the instances to read, in two halves at least (a series is cut into pages of the
 * same size, 100 at least). The DICOMweb plugin answers an instance-level QIDO-RS by reading every
 * matching file on one of Orthanc's HTTP threads. On 2 cores a 500-slice series took 506-591 ms in
 * one call, 281-327 ms in two pages, 356 in three, 391-411 in four and 498 in eight (each call
 * also looks the series up); four series of 250 took 545-752 ms as four calls and 660-705 as eight.
 */
const QIDO_PAGES_PER_STUDY = 2;
const QIDO_MIN_PAGE = 100;
const PER_INSTANCE_CONCURRENCY = 8;
const RENDER_CONCURRENCY = 3;

export interface IndexJobResult {
  /** superseded: a later run of the study read the image server after this one; it writes instead. */
  outcome: 'indexed' | 'gone' | 'unknown-study' | 'superseded';
  series?: number;
  instances?: number;
  thumbnails?: number;
  geometryCalls?: { qido: number; perInstance: number };
  /** Where the time went: image-server listings, geometry, thumbnails, the database transaction. */
  timingsMs?: { listings: number; geometry: number; thumbnails: number; write: number };
}

/** Each call returns the milliseconds since the previous one. */
function stopwatch(): () => number {
  let last = performance.now();
  return () => {
    const now = performance.now();
    const elapsed = Math.round(now - last);
    last = now;
    return elapsed;
  };
}

interface SeriesPlan {
  fields: SeriesFields;
  /** Instances ordered by instance number (then position in the series). */
  instances: InstanceFields[];
}

/**
 * The heavy part of ingestion: series, instances, `modalities` and thumbnails of one study.
 * Orthanc is read with listings (`?expand`: 2 calls for the whole study), Rows/Columns/SliceThickness
 * with QIDO-RS calls in pages of each series, thumbnails with one render per series; then everything is
 * written in one transaction.
 */
@Injectable()
export class IndexJobService {
  private readonly logger = new Logger('IndexJob');

  constructor(
    private readonly imgsrv: ImgsrvClient,
    private readonly repository: IngestionRepository,
    private readonly queue: IngestionQueue,
  ) {}

  async run(data: IndexJobData): Promise<IndexJobResult> {
    const study = await this.repository.findStudy(data.imgsrvStudyId);
    if (!study) return { outcome: 'unknown-study' };
    const run = await this.queue.startIndexRun(data.imgsrvStudyId);

    const clock = stopwatch();
    let seriesList: OrthancSeries[];
    let instanceList: OrthancInstance[];
    try {
      [seriesList, instanceList] = await Promise.all([
        this.imgsrv.listStudySeries(data.imgsrvStudyId),
        this.imgsrv.listStudyInstances(data.imgsrvStudyId),
      ]);
    } catch (error) {
      if ((error as ImgsrvError).status === 404) {
        this.logger.warn(`study ${data.imgsrvStudyId} left the image server before it was indexed`);
        return { outcome: 'gone' };
      }
      throw error;
    }

    const listings = clock();
    const plans = this.plan(seriesList, instanceList);
    const counters = { qido: 0, perInstance: 0 };
    const geometry = await this.geometry(
      study.study_instance_uid,
      plans,
      counters,
      await this.repository.knownGeometry(study.id),
    );
    const geometryMs = clock();
    const { studyThumbnail, seriesThumbnails } = await this.thumbnails(study.study_instance_uid, plans, geometry);
    const thumbnailsMs = clock();

    const series: IndexedSeries[] = plans.map((p) => ({ ...p.fields, instance_count: p.instances.length }));
    const instances: IndexedInstance[] = plans.flatMap((p) =>
      p.instances.map((i) => {
        const g = geometry.get(i.imgsrv_instance_id) ?? NO_GEOMETRY;
        return {
          imgsrv_instance_id: i.imgsrv_instance_id,
          imgsrv_series_id: i.imgsrv_series_id,
          sop_instance_uid: i.sop_instance_uid,
          instance_number: i.instance_number,
          rows: g.rows,
          columns: g.columns,
          slice_thickness: g.sliceThickness,
        };
      }),
    );
    const modalities = [...new Set(plans.map((p) => p.fields.modality))];

    const written = await this.repository.saveIndex(
      {
        imgsrvStudyId: data.imgsrvStudyId,
        series,
        instances,
        modalities,
        studyThumbnail,
        seriesThumbnails,
        changeSeq: data.changeSeq,
        lastUpdate: data.lastUpdate,
      },
      () => this.queue.indexRunSuperseded(data.imgsrvStudyId, run),
    );
    if (written !== 'written') return { outcome: written };
    const write = clock();
    return {
      outcome: 'indexed',
      series: series.length,
      instances: instances.length,
      thumbnails: seriesThumbnails.size + (studyThumbnail ? 1 : 0),
      geometryCalls: counters,
      timingsMs: { listings, geometry: geometryMs, thumbnails: thumbnailsMs, write },
    };
  }

  /** Series in display order (number, then UID), each with its instances in display order. */
  private plan(seriesList: OrthancSeries[], instanceList: OrthancInstance[]): SeriesPlan[] {
    const bySeries = new Map<string, InstanceFields[]>();
    for (const instance of instanceList) {
      const fields = mapInstance(instance);
      const list = bySeries.get(fields.imgsrv_series_id) ?? [];
      list.push(fields);
      bySeries.set(fields.imgsrv_series_id, list);
    }
    return seriesList
      .map((s) => ({
        fields: mapSeries(s),
        instances: (bySeries.get(s.ID) ?? []).sort(
          (a, b) =>
            a.instance_number - b.instance_number ||
            a.index_in_series - b.index_in_series ||
            a.sop_instance_uid.localeCompare(b.sop_instance_uid),
        ),
      }))
      .sort(
        (a, b) =>
          a.fields.series_number - b.fields.series_number ||
          a.fields.series_instance_uid.localeCompare(b.fields.series_instance_uid),
      );
  }

  /**
   * Rows, Columns and SliceThickness by imgsrv instance id. Instances indexed before keep what was
   * read then. For the others Orthanc 1.10 keeps these tags out of its listings: QIDO-RS calls in
   * pages of each series that has new instances, when the DICOMweb plugin answers; whatever that leaves out
   * (no plugin, a series it does not find) is read per instance, a few at a time.
   */
  private async geometry(
    studyUid: string,
    plans: SeriesPlan[],
    counters: { qido: number; perInstance: number },
    known: Map<string, ImageGeometry>,
  ) {
    const result = new Map<string, ImageGeometry>();
    for (const instance of plans.flatMap((p) => p.instances)) {
      const found = known.get(instance.imgsrv_instance_id);
      if (found) result.set(instance.imgsrv_instance_id, found);
    }
    const unread = plans.filter((p) => p.instances.some((i) => !result.has(i.imgsrv_instance_id)));
    if (studyUid && unread.length > 0 && (await this.imgsrv.hasDicomWeb())) {
      // Pages of every series that has new instances, read side by side: a page of a series Orthanc
      // holds more instances of than we know of is merely short, and whatever no page brings back is
      // read per instance below.
      const toRead = unread.filter((plan) => plan.fields.series_instance_uid);
      const total = toRead.reduce((sum, plan) => sum + plan.instances.length, 0);
      const limit = Math.max(QIDO_MIN_PAGE, Math.ceil(total / QIDO_PAGES_PER_STUDY));
      const pages = toRead.flatMap((plan) =>
        Array.from({ length: Math.ceil(plan.instances.length / limit) }, (_, k) => ({ plan, offset: k * limit })),
      );
      await mapWithConcurrency(pages, QIDO_CONCURRENCY, async ({ plan, offset }) => {
        let bySop: Map<string, ImageGeometry>;
        try {
          counters.qido++;
          bySop = geometryFromQido(
            await this.imgsrv.qidoSeriesInstances(
              studyUid,
              plan.fields.series_instance_uid,
              [GEOMETRY_TAGS.rows, GEOMETRY_TAGS.columns, GEOMETRY_TAGS.sliceThickness],
              { offset, limit },
            ),
          );
        } catch (error) {
          if ((error as ImgsrvError).transient) throw error;
          this.logger.warn(`QIDO-RS failed for series ${plan.fields.imgsrv_series_id}: ${(error as Error).message}`);
          return;
        }
        for (const instance of plan.instances) {
          const found = bySop.get(instance.sop_instance_uid);
          if (found) result.set(instance.imgsrv_instance_id, found);
        }
      });
    }
    const missing = plans.flatMap((p) => p.instances).filter((i) => !result.has(i.imgsrv_instance_id));
    await mapWithConcurrency(missing, PER_INSTANCE_CONCURRENCY, async (instance) => {
      counters.perInstance++;
      const tags = await this.imgsrv.getSimplifiedTags(instance.imgsrv_instance_id);
      result.set(instance.imgsrv_instance_id, geometryFromSimplifiedTags(tags));
    });
    return result;
  }

  /**
   * One thumbnail per image series, from its middle instance; the study's is the first image
   * series' one. A series without pixel data, or whose image the server cannot render (415 for a
   * PDF or an SR, another 4xx/5xx for an unsupported encoding), simply has none: a broken image
   * must not keep the study out of the archive. Nor does one whose attributes would take the image
   * server's decoder where it is unsafe (ImgsrvClient.checkedRenderedBuffer): it is not asked to decode it. Only a
   * server that does not answer fails the job.
   */
  private async thumbnails(studyUid: string, plans: SeriesPlan[], geometry: Map<string, ImageGeometry>) {
    const seriesThumbnails = new Map<string, Buffer>();
    const made = await mapWithConcurrency(plans, RENDER_CONCURRENCY, async (plan) => {
      const middle = plan.instances[Math.floor(plan.instances.length / 2)];
      if (!middle || !geometry.get(middle.imgsrv_instance_id)?.rows) return null;
      let rendered: Buffer;
      try {
        const checked = await this.imgsrv.checkedRenderedBuffer(
          {
            imgsrvInstanceId: middle.imgsrv_instance_id,
            studyInstanceUid: studyUid,
            seriesInstanceUid: plan.fields.series_instance_uid,
            sopInstanceUid: middle.sop_instance_uid,
          },
          { quality: 90 },
        );
        if ('refusal' in checked) {
          this.logger.warn(`no thumbnail for series ${plan.fields.imgsrv_series_id}: not decoded (${checked.refusal})`);
          return null;
        }
        rendered = checked.image;
      } catch (error) {
        if ((error as ImgsrvError).status === undefined) throw error;
        this.logger.warn(`no thumbnail for series ${plan.fields.imgsrv_series_id}: ${(error as Error).message}`);
        return null;
      }
      try {
        return await makeThumbnail(rendered);
      } catch (error) {
        this.logger.warn(`unreadable rendering of instance ${middle.imgsrv_instance_id}: ${(error as Error).message}`);
        return null;
      }
    });
    plans.forEach((plan, index) => {
      const thumbnail = made[index];
      if (thumbnail) seriesThumbnails.set(plan.fields.imgsrv_series_id, thumbnail);
    });
    const studyThumbnail = made.find((t): t is Buffer => t !== null) ?? null;
    return { studyThumbnail, seriesThumbnails };
  }
}
