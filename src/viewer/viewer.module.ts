import { Module } from '@nestjs/common';
import { StudiesModule } from '../studies/studies.module';
import { StudyPlacesCache } from './study-places.cache';
import { ViewerController } from './viewer.controller';
import { ViewerService } from './viewer.service';
import { ValidateRawRoute } from './validate.raw-route';

@Module({
  imports: [StudiesModule],
  controllers: [ViewerController],
  providers: [ViewerService, StudyPlacesCache, ValidateRawRoute],
})
export class ViewerModule {}
