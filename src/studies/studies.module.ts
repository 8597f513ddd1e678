import { Module } from '@nestjs/common';
import { ImgsrvModule } from '../imgsrv';
import { ListTotals } from './list-totals';
import { SeriesController } from './series.controller';
import { StudiesController } from './studies.controller';
import { StudiesRepository } from './studies.repository';
import { StudiesService } from './studies.service';
import { StudyImagesService } from './study-images.service';

@Module({
  imports: [ImgsrvModule],
  controllers: [StudiesController, SeriesController],
  providers: [StudiesRepository, StudiesService, StudyImagesService, ListTotals],
  exports: [StudiesRepository, StudiesService, ListTotals],
})
export class StudiesModule {}
