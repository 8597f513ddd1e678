import { Injectable, Logger } from '@nestjs/common';
import { isUUID } from 'class-validator';
import { Readable } from 'stream';
import { DataScope } from '../common/auth/data-scope';
import { Errors } from '../common/errors/api-errors';
import { ImgsrvClient } from '../imgsrv';
import { StudiesRepository, ThumbnailImage } from './studies.repository';

export interface ImageStream {
  contentType: string;
  body: Readable;
}

/** Thumbnails (stored in PostgreSQL by the worker) and rendered frames (from the image server). */
@Injectable()
export class StudyImagesService {
  private readonly logger = new Logger(StudyImagesService.name);

  constructor(
    private readonly studies: StudiesRepository,
    private readonly imgsrv: ImgsrvClient,
  ) {}

  /**
   * Every 404 of the thumbnail routes is `{message: "Thumbnail not ready"}` (interface.md, Errors):
   * a study missing or outside the scope as much as a thumbnail the worker has not made.
   */
  async studyThumbnail(scope: DataScope, studyId: string): Promise<ThumbnailImage> {
    if (!(await this.studies.studyExists(scope, studyId))) throw Errors.thumbnailNotReady();
    const thumbnail = await this.studies.findThumbnail(studyId, null);
    if (!thumbnail) throw Errors.thumbnailNotReady();
    return thumbnail;
  }

  /** The series' thumbnail, else the study's; a series that is not of this study has none (never another study's). */
  async seriesThumbnail(scope: DataScope, studyId: string, seriesId: string): Promise<ThumbnailImage> {
    const found = await this.studies.seriesOfStudy(scope, studyId, seriesId);
    if (!found.study || !found.series) throw Errors.thumbnailNotReady();
    const thumbnail = await this.studies.findThumbnail(studyId, seriesId);
    if (!thumbnail) throw Errors.thumbnailNotReady();
    return thumbnail;
  }

  /**
   * The image server's JPEG rendering of an instance of the study. Any failure (ids that are not
   * uuids, a study or instance outside the scope, the image server down, slow past 20 s, or refusing
   * the instance) is the same 404, and so is an instance whose attributes the image server's decoders
   * fail on (ImgsrvClient.decodeRefusal: one metadata call first). The body is streamed: only its
   * first chunk is awaited, so that an upstream failure before any byte still becomes a 404 rather
   * than a broken 200.
   */
  async rendered(scope: DataScope, studyId: string, instanceId: string): Promise<ImageStream> {
    if (!isUUID(studyId) || !isUUID(instanceId)) throw Errors.imageNotAvailable();
    const instance = await this.studies.findRenderedInstance(scope, studyId, instanceId);
    if (!instance) throw Errors.imageNotAvailable();
    try {
      // The contract's 20 s bound covers the whole exchange with the image server, the check included.
      const deadline = AbortSignal.timeout(this.imgsrv.renderedTimeoutMs);
      const refusal = await this.imgsrv.decodeRefusal(instance, deadline);
      if (refusal) throw new Error(`not decoded: ${refusal}`);
      const image = await this.imgsrv.renderedJpeg(instance.imgsrvInstanceId, {}, deadline);
      return { contentType: image.contentType, body: await startedStream(image.stream) };
    } catch (error) {
      this.logger.warn(`Rendering instance ${instanceId} failed: ${(error as Error)?.message ?? error}`);
      throw Errors.imageNotAvailable();
    }
  }
}

/**
 * Waits for the first chunk of `source` (rejecting if it fails or ends empty first), then returns a
 * stream that yields that chunk and the rest of `source` with back-pressure. Destroying the returned
 * stream (client gone) destroys `source`, which closes the upstream connection.
 */
export async function startedStream(source: Readable): Promise<Readable> {
  const iterator = source[Symbol.asyncIterator]() as AsyncIterator<Buffer>;
  let first: IteratorResult<Buffer>;
  try {
    first = await iterator.next();
  } catch (error) {
    source.destroy();
    throw error;
  }
  if (first.done) throw new Error('empty image');
  async function* rest(): AsyncGenerator<Buffer> {
    try {
      yield first.value;
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) yield next.value;
    } finally {
      source.destroy();
    }
  }
  return Readable.from(rest(), { objectMode: false });
}
