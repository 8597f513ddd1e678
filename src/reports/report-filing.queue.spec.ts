import { ReportFilingQueue } from './report-filing.queue';

/** A queue holding at most one job, in `state` (null: no job). */
function queueWith(state: string | null) {
  const calls: string[] = [];
  const job = {
    getState: async () => state,
    retry: async () => void calls.push('retry'),
    remove: async () => void calls.push('remove'),
  };
  const queue = {
    getJob: async () => (state === null ? null : job),
    add: async (_name: string, data: { pdfId: string }, options: { jobId: string }) =>
      void calls.push(`add ${data.pdfId} as ${options.jobId}`),
  };
  return { filing: new ReportFilingQueue(queue as never), calls };
}

describe('ReportFilingQueue.fileAgain', () => {
  it('queues a PDF whose job is gone', async () => {
    const { filing, calls } = queueWith(null);
    expect(await filing.fileAgain('p1')).toBe(true);
    expect(calls).toEqual(['add p1 as report-pdf:p1']);
  });

  it('retries a job that gave up', async () => {
    const { filing, calls } = queueWith('failed');
    expect(await filing.fileAgain('p1')).toBe(true);
    expect(calls).toEqual(['retry']);
  });

  it('queues anew a PDF whose job completed (unfiled since)', async () => {
    const { filing, calls } = queueWith('completed');
    expect(await filing.fileAgain('p1')).toBe(true);
    expect(calls).toEqual(['remove', 'add p1 as report-pdf:p1']);
  });

  it.each(['waiting', 'active', 'delayed', 'paused'])('leaves a job that is %s alone', async (state) => {
    const { filing, calls } = queueWith(state);
    expect(await filing.fileAgain('p1')).toBe(false);
    expect(calls).toEqual([]);
  });
});
