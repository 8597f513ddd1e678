import { parentPort } from 'worker_threads';
import type { ReportDocument } from './report-document';
import { renderReport } from './render-report';

/**
 * A render thread of PdfRenderPool: one document at a time, answered with its bytes or an error,
 * and what the renderer warned about (the pool logs it: this thread has no configured logger).
 */
parentPort?.on('message', (message: { id: number; document: ReportDocument }) => {
  const warnings: string[] = [];
  renderReport(message.document, (warning) => warnings.push(warning)).then(
    (pdf) => parentPort?.postMessage({ id: message.id, pdf, warnings }),
    (error: Error) => parentPort?.postMessage({ id: message.id, error: String(error?.message ?? error), warnings }),
  );
});
