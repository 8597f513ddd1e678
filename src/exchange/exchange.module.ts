import { Module } from '@nestjs/common';
import { ImgsrvModule } from '../imgsrv';
import { StudiesModule } from '../studies';
import { ArchiveController } from './archive.controller';
import { ArchiveService } from './archive.service';

/** Studies leaving and entering the archive as files: the ZIP download and the STOW-RS upload. */
@Module({
  imports: [ImgsrvModule, StudiesModule],
  controllers: [ArchiveController],
  providers: [ArchiveService],
})
export class ExchangeModule {}
