import { Injectable } from '@nestjs/common';
import { ImgsrvClient } from '../imgsrv';
import { dicomDate, localDate } from './dicom-mapping';
import { IngestionQueue } from './ingestion-queue.service';
import { IngestionRepository } from './ingestion.repository';

/** Studies read per listing call. */
const PAGE_SIZE = 100;

export interface ImportOptions {
  /** YYYY-MM-DD: only studies dated on or after it (a study without a date counts as dated today). */
  since?: string;
  /** Called after every page: studies seen so far and the expected total. */
  onProgress?: (progress: ImportSummary) => void;
}

export interface ImportSummary {
  total: number;
  seen: number;
  queued: number;
  /** Indexed already, and unchanged on the image server since (same LastUpdate). */
  upToDate: number;
  /** Dated before --since. */
  older: number;
}

export class ImportOptionError extends Error {
  readonly userFacing = true;
}

/** Validates the --since option: a real calendar date written YYYY-MM-DD. */
export function parseSince(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const date = /^\d{4}-\d{2}-\d{2}$/.test(value.trim()) ? dicomDate(value.trim()) : null;
  if (!date) throw new ImportOptionError(`--since must be a date written YYYY-MM-DD, got ${JSON.stringify(value)}`);
  return date;
}

/**
 * Walks every study the image server holds (its own listing, 100 studies per call) and queues those
 * that are not indexed in their current state. Queuing goes through the same de-duplicating path as
 * the webhook, and indexing is an upsert, so running it twice, or while webhooks arrive, duplicates
 * nothing; the second run only queues what changed in between.
 */
@Injectable()
export class ArchiveImportService {
  constructor(
    private readonly imgsrv: ImgsrvClient,
    private readonly repository: IngestionRepository,
    private readonly queue: IngestionQueue,
  ) {}

  async run(options: ImportOptions = {}): Promise<ImportSummary> {
    const since = parseSince(options.since);
    const today = localDate();
    const summary: ImportSummary = { total: await this.imgsrv.countStudies(), seen: 0, queued: 0, upToDate: 0, older: 0 };
    for (let offset = 0; ; offset += PAGE_SIZE) {
      const page = await this.imgsrv.listStudies(offset, PAGE_SIZE);
      if (!Array.isArray(page) || page.length === 0) break;
      const markers = await this.repository.syncMarkers(page.map((s) => s.ID));
      for (const study of page) {
        summary.seen++;
        const studyDate = dicomDate(study.MainDicomTags?.StudyDate) ?? today;
        if (since && studyDate < since) {
          summary.older++;
          continue;
        }
        const marker = markers.get(study.ID);
        if (marker && marker.indexed_seq !== null && marker.last_update === (study.LastUpdate ?? null)) {
          summary.upToDate++;
          continue;
        }
        await this.queue.queueStudy(study.ID, 'import');
        summary.queued++;
      }
      summary.total = Math.max(summary.total, summary.seen);
      options.onProgress?.({ ...summary });
      if (page.length < PAGE_SIZE) break;
    }
    return summary;
  }
}

export function describeImport(summary: ImportSummary, since?: string): string {
  const older = since ? `, ${summary.older} dated before ${since}` : '';
  return (
    `Import finished: ${summary.seen} studies on the image server; ${summary.queued} queued for indexing, ` +
    `${summary.upToDate} already up to date${older}.`
  );
}
