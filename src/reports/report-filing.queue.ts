import { InjectQueue } from '@nestjs/bull';
import { Injectable } from '@nestjs/common';
import type { Queue } from 'bull';
import { REPORT_FILING_QUEUE } from '../common/queues/queues.module';

export const REPORT_FILING_JOB = 'file-report-pdf';

export interface ReportFilingJobData {
  pdfId: string;
}

/**
 * Queues the filing of a kept report PDF. The job id is fixed per PDF: a repeated request joins the
 * job (or is dropped once it is done: the PDF never changes, so there is nothing new to file).
 */
@Injectable()
export class ReportFilingQueue {
  constructor(@InjectQueue(REPORT_FILING_QUEUE) private readonly queue: Queue) {}

  async fileReportPdf(pdfId: string): Promise<void> {
    const data: ReportFilingJobData = { pdfId };
    await this.queue.add(REPORT_FILING_JOB, data, {
      jobId: `report-pdf:${pdfId}`,
      attempts: 10,
      backoff: { type: 'exponential', delay: 1000 },
    });
  }
}
