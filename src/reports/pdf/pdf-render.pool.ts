import { Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import { availableParallelism } from 'os';
import { extname, join } from 'path';
import { Worker } from 'worker_threads';
import type { ReportDocument } from './report-document';

interface Pending {
  id: number;
  document: ReportDocument;
  resolve: (pdf: Buffer) => void;
  reject: (error: Error) => void;
}

interface Slot {
  worker: Worker;
  busy: Pending | null;
  timer: NodeJS.Timeout | null;
}

/** A render that takes longer is abandoned (its thread replaced): a document never holds a slot forever. */
const RENDER_TIMEOUT_MS = 30_000;

/**
 * Renders report PDFs on worker threads, so that laying out a document (tens of milliseconds of
 * CPU) never holds the API's event loop. One thread per core but one, at least 1 and at most 2,
 * started on first use; requests beyond that wait in order.
 */
@Injectable()
export class PdfRenderPool implements OnModuleDestroy {
  private readonly logger = new Logger('PdfRenderPool');
  // One core is left to the event loop: on 2 cores, two render threads under 8 concurrent renders
  // took the list's p99 from 47 to 320 ms (bench/reports.ts).
  private readonly size = Math.max(1, Math.min(2, availableParallelism() - 1));
  private readonly slots: Slot[] = [];
  private readonly waiting: Pending[] = [];
  private nextId = 1;
  private closed = false;

  render(document: ReportDocument): Promise<Buffer> {
    if (this.closed) return Promise.reject(new Error('the PDF render pool is closed'));
    return new Promise<Buffer>((resolve, reject) => {
      this.waiting.push({ id: this.nextId++, document, resolve, reject });
      this.dispatch();
    });
  }

  async onModuleDestroy(): Promise<void> {
    this.closed = true;
    for (const pending of this.waiting.splice(0)) pending.reject(new Error('the PDF render pool is closed'));
    await Promise.all(this.slots.splice(0).map((slot) => slot.worker.terminate()));
  }

  private dispatch(): void {
    while (this.waiting.length > 0) {
      let slot = this.slots.find((s) => !s.busy);
      if (!slot && this.slots.length < this.size) slot = this.spawn();
      if (!slot) return;
      const pending = this.waiting.shift() as Pending;
      slot.busy = pending;
      const worker = slot.worker;
      slot.timer = setTimeout(() => void worker.terminate(), RENDER_TIMEOUT_MS);
      worker.postMessage({ id: pending.id, document: pending.document });
    }
  }

  private spawn(): Slot {
    // Under ts-node or ts-jest this file is TypeScript: the thread compiles its file the same way.
    const typescript = extname(__filename) === '.ts';
    const worker = new Worker(join(__dirname, `render.worker${extname(__filename)}`), {
      execArgv: typescript ? ['-r', 'ts-node/register/transpile-only'] : [],
    });
    worker.unref();
    const slot: Slot = { worker, busy: null, timer: null };
    const finish = (settle: (pending: Pending) => void) => {
      if (slot.timer) clearTimeout(slot.timer);
      slot.timer = null;
      const pending = slot.busy;
      slot.busy = null;
      if (pending) settle(pending);
      this.dispatch();
    };
    worker.on('message', (message: { id: number; pdf?: Uint8Array; error?: string; warnings?: string[] }) => {
      for (const warning of message.warnings ?? []) this.logger.warn(warning);
      if (slot.busy?.id !== message.id) return;
      finish((pending) =>
        message.pdf ? pending.resolve(Buffer.from(message.pdf)) : pending.reject(new Error(message.error ?? 'render failed')),
      );
    });
    const replace = (error: Error) => {
      this.logger.error(`PDF render thread stopped: ${error.message}`);
      const index = this.slots.indexOf(slot);
      if (index >= 0) this.slots.splice(index, 1);
      finish((pending) => pending.reject(error));
    };
    worker.on('error', replace);
    worker.on('exit', (code) => {
      if (this.slots.includes(slot)) replace(new Error(`render thread exited (${code})`));
    });
    this.slots.push(slot);
    return slot;
  }
}
