import { Injectable, Logger } from '@nestjs/common';
import { Readable } from 'stream';
import { DataScope } from '../common/auth/data-scope';
import { Errors } from '../common/errors/api-errors';
import { ImgsrvClient } from '../imgsrv';
import { startedStream, StudiesRepository } from '../studies';

export interface StudyArchive {
  fileName: string;
  body: Readable;
}

/** A study's DICOM files as one ZIP, made by the image server and streamed through. */
@Injectable()
export class ArchiveService {
  private readonly logger = new Logger(ArchiveService.name);

  constructor(
    private readonly studies: StudiesRepository,
    private readonly imgsrv: ImgsrvClient,
  ) {}

  /**
   * 404 `{message: "Study not found."}` outside the scope. The image server's ZIP is passed on
   * chunk by chunk with back-pressure; its first chunk is awaited so that an upstream failure before
   * any byte is a 404 `{message: "Archive not available"}` (as for a rendered image), never a broken 200. `signal` (the client went away) aborts the upstream.
   */
  async open(scope: DataScope, studyId: string, signal: AbortSignal): Promise<StudyArchive> {
    const study = await this.studies.findStudyToExchange(scope, studyId);
    if (!study) throw Errors.notFound('Study');
    try {
      const upstream = await this.imgsrv.studyArchive(study.imgsrv_study_id, signal);
      return {
        fileName: `${study.study_instance_uid.replace(/[^0-9A-Za-z.-]/g, '_')}.zip`,
        body: await startedStream(upstream),
      };
    } catch (error) {
      if (signal.aborted) throw error;
      this.logger.warn(`Archive of study ${studyId} failed: ${(error as Error)?.message ?? error}`);
      throw Errors.archiveNotAvailable();
    }
  }
}
