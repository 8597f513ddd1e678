import { Module } from '@nestjs/common';
import { ListModule } from '../database/list';
import { ReportsModule } from '../reports';
import { StudiesModule } from '../studies';
import { ViewerModule } from '../viewer';
import { SharesController } from './shares.controller';
import { SharesRepository } from './shares.repository';
import { SharesService } from './shares.service';
import { StudySharesController } from './study-shares.controller';

/** Share links of a study: created by whoever sees it, opened by anyone with the token. */
@Module({
  imports: [ListModule, StudiesModule, ViewerModule, ReportsModule],
  controllers: [StudySharesController, SharesController],
  providers: [SharesRepository, SharesService],
})
export class SharesModule {}
