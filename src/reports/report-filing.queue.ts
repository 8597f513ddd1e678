import { InjectQueue } from '@nestjs/bull';
import { Injectable } from '@nestjs/common';
import type { Queue } from 'bull';
import { REPORT_FILING_QUEUE } from '../common/queues/queues.module';

export const REPORT_FILING_JOB = 'file-report-pdf';
/** The worker's repeated look for kept PDFs that their own job did not file. */
export const REPORT_FILING_SWEEP_JOB = 'sweep-unfiled-report-pdfs';

const jobIdOf = (pdfId: string) => `report-pdf:${pdfId}`;

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
      jobId: jobIdOf(pdfId),
      attempts: 10,
      backoff: { type: 'exponential', delay: 1000 },
    });
  }

  /**
   * Files a kept PDF that is still not filed: queued when its job is gone or was never queued (Redis
   * failed after the signing's commit), retried when its job gave up (the image server down longer
   * than its ten attempts), queued anew when its job completed (the PDF was unfiled since); left
   * alone while its job waits or runs. True when it queued something.
   */
  async fileAgain(pdfId: string): Promise<boolean> {
    const job = await this.queue.getJob(jobIdOf(pdfId));
    const state = job ? await job.getState() : null;
    if (job && state === 'failed') {
      await job.retry();
      return true;
    }
    if (job && state !== 'completed') return false;
    await job?.remove();
    await this.fileReportPdf(pdfId);
    return true;
  }
}
