import { parentPort } from 'worker_threads';
import type { ReportDocument } from './report-document';
import { renderReport } from './render-report';

/** A render thread of PdfRenderPool: one document at a time, answered with its bytes or an error. */
parentPort?.on('message', (message: { id: number; document: ReportDocument }) => {
  renderReport(message.document).then(
    (pdf) => parentPort?.postMessage({ id: message.id, pdf }),
    (error: Error) => parentPort?.postMessage({ id: message.id, error: String(error?.message ?? error) }),
  );
});
