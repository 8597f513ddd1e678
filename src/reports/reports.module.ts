import { Module } from '@nestjs/common';
import { QueuesModule } from '../common/queues/queues.module';
import { ImgsrvModule } from '../imgsrv';
import { StudiesModule } from '../studies';
import { PdfRenderPool } from './pdf/pdf-render.pool';
import { PresetsController } from './presets/presets.controller';
import { PresetsRepository } from './presets/presets.repository';
import { PresetsService } from './presets/presets.service';
import { ReportFilingQueue } from './report-filing.queue';
import { ReportFilingService } from './report-filing.service';
import { ReportFilingWorker } from './report-filing.worker';
import { ReportsController } from './reports.controller';
import { ReportsRepository } from './reports.repository';
import { ReportsService } from './reports.service';

/** The API side of reports: the endpoints, the PDF render threads, and the filing queue's producer. */
@Module({
  imports: [StudiesModule, QueuesModule],
  controllers: [ReportsController, PresetsController],
  providers: [ReportsRepository, ReportsService, PdfRenderPool, ReportFilingQueue, PresetsRepository, PresetsService],
  // SharesService serves a share's final report.
  exports: [ReportsService],
})
export class ReportsModule {}

/** The worker side: files each signed report's PDF in the image server. */
@Module({
  imports: [QueuesModule, ImgsrvModule],
  providers: [ReportsRepository, ReportFilingService, ReportFilingQueue, ReportFilingWorker],
  exports: [ReportFilingService],
})
export class ReportsWorkerModule {}
