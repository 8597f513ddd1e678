import { Module } from '@nestjs/common';
import { ListModule } from '../database/list';
import { ImgsrvModule } from '../imgsrv';
import { QidoController } from './dicom-web/qido.controller';
import { QidoRepository } from './dicom-web/qido.repository';
import { SeriesController } from './series.controller';
import { StudiesController } from './studies.controller';
import { StudiesRepository } from './studies.repository';
import { StudiesService } from './studies.service';
import { StudyImagesService } from './study-images.service';

@Module({
  imports: [ListModule, ImgsrvModule],
  controllers: [StudiesController, SeriesController, QidoController],
  providers: [StudiesRepository, StudiesService, StudyImagesService, QidoRepository],
  exports: [StudiesRepository, StudiesService],
})
export class StudiesModule {}
