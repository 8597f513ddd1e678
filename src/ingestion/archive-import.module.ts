import { Module } from '@nestjs/common';
import { QueuesModule } from '../common/queues/queues.module';
import { ImgsrvModule } from '../imgsrv';
import { ArchiveImportService } from './archive-import.service';
import { IngestionQueue } from './ingestion-queue.service';
import { IngestionRepository } from './ingestion.repository';

/** The archive import (`npm run cli -- import`): walks the image server and queues what is not indexed. */
@Module({
  imports: [ImgsrvModule, QueuesModule],
  providers: [IngestionQueue, IngestionRepository, ArchiveImportService],
  exports: [ArchiveImportService],
})
export class ArchiveImportFeatureModule {}
