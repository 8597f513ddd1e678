import { Module } from '@nestjs/common';
import { AuthModule } from '../auth';
import { MetricsModule } from '../operations';
import { StudiesModule } from '../studies';
import { StudyPlacesCache } from './study-places.cache';
import { ViewerController } from './viewer.controller';
import { ViewerService } from './viewer.service';
import { ValidateRawRoute } from './validate.raw-route';

@Module({
  imports: [AuthModule, MetricsModule, StudiesModule],
  controllers: [ViewerController],
  providers: [ViewerService, StudyPlacesCache, ValidateRawRoute],
  exports: [ViewerService],
})
export class ViewerModule {}
