import { Module } from '@nestjs/common';
import { QidoController } from './dicom-web/qido.controller';
import { QidoRepository } from './dicom-web/qido.repository';
import { ListTotals } from './list-totals';
import { SeriesController } from './series.controller';
import { StudiesController } from './studies.controller';
import { StudiesRepository } from './studies.repository';
import { StudiesService } from './studies.service';
import { StudyImagesService } from './study-images.service';

@Module({
  controllers: [StudiesController, SeriesController, QidoController],
  providers: [StudiesRepository, StudiesService, StudyImagesService, ListTotals, QidoRepository],
  exports: [StudiesRepository, StudiesService, ListTotals],
})
export class StudiesModule {}
