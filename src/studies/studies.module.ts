import { Module } from '@nestjs/common';
import { ListModule } from '../database/list';
import { SeriesController } from './series.controller';
import { StudiesController } from './studies.controller';
import { StudiesRepository } from './studies.repository';
import { StudiesService } from './studies.service';
import { StudyImagesService } from './study-images.service';

@Module({
  imports: [ListModule],
  controllers: [StudiesController, SeriesController],
  providers: [StudiesRepository, StudiesService, StudyImagesService],
  exports: [StudiesRepository, StudiesService],
})
export class StudiesModule {}
