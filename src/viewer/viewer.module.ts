import { Module } from '@nestjs/common';
import { AuthModule } from '../auth';
import { ImgsrvModule } from '../imgsrv';
import { MetricsModule } from '../operations';
import { StudiesModule } from '../studies';
import { StudyPlacesCache } from './study-places.cache';
import { ViewerController } from './viewer.controller';
import { ViewerService } from './viewer.service';
import { ValidateRawRoute } from './validate.raw-route';
import { RefusedUidLimit } from './refused-uid-limit';
import { RenderingGate } from './rendering-gate';

@Module({
  imports: [AuthModule, ImgsrvModule, MetricsModule, StudiesModule],
  controllers: [ViewerController],
  providers: [ViewerService, StudyPlacesCache, ValidateRawRoute, RefusedUidLimit, RenderingGate],
  // ViewerService.issueToken: the shares feature issues its tokens through it.
  exports: [ViewerService],
})
export class ViewerModule {}
