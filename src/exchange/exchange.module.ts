import { Module } from '@nestjs/common';
import { ClinicsModule } from '../clinics';
import { ImgsrvModule } from '../imgsrv';
import { StudiesModule } from '../studies';
import { ArchiveController } from './archive.controller';
import { ArchiveService } from './archive.service';
import { StowController } from './stow.controller';
import { StowService } from './stow.service';
import { UploadPlacementsRepository } from './upload-placements.repository';

/** Studies leaving and entering the archive as files: the ZIP download and the STOW-RS upload. */
@Module({
  imports: [ClinicsModule, ImgsrvModule, StudiesModule],
  controllers: [ArchiveController, StowController],
  providers: [ArchiveService, StowService, UploadPlacementsRepository],
})
export class ExchangeModule {}
