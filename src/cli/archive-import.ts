import { Module } from '@nestjs/common';
import { NestFactory } from '@nestjs/core';
import { Presets, SingleBar } from 'cli-progress';
import { CoreModule } from '../core.module';
import { ArchiveImportFeatureModule } from '../ingestion/archive-import.module';
import { ArchiveImportService, describeImport, parseSince } from '../ingestion/archive-import.service';

/** The import command's application: the shared core and the import, nothing else. */
@Module({
  imports: [CoreModule, ArchiveImportFeatureModule],
})
export class ArchiveImportModule {}

/** `npm run cli -- import [--since DATE]`: a progress bar on stderr, the summary line returned. */
export async function importArchive(options: { since?: string }): Promise<string> {
  const since = parseSince(options.since);
  const app = await NestFactory.createApplicationContext(ArchiveImportModule, { logger: ['error'] });
  const bar = new SingleBar(
    {
      format: 'Importing |{bar}| {value}/{total} studies | queued {queued} | up to date {upToDate}',
      hideCursor: true,
    },
    Presets.shades_classic,
  );
  try {
    bar.start(0, 0, { queued: 0, upToDate: 0 });
    const summary = await app.get(ArchiveImportService).run({
      since,
      onProgress: (progress) => {
        bar.setTotal(progress.total);
        bar.update(progress.seen, { queued: progress.queued, upToDate: progress.upToDate });
      },
    });
    bar.stop();
    return describeImport(summary, since);
  } finally {
    bar.stop();
    await app.close();
  }
}
