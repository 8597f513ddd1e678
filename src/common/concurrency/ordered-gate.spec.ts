import { OrderedGate } from './ordered-gate';

/** A task that records when it starts and ends when `finish` is called. */
function deferredTask(log: string[], name: string) {
  let finish!: () => void;
  let fail!: (error: Error) => void;
  const done = new Promise<string>((resolve, reject) => {
    finish = () => resolve(name);
    fail = reject;
  });
  const task = () => {
    log.push(name);
    return done;
  };
  return { task, finish: () => finish(), fail: (error: Error) => fail(error) };
}

const turnOfTheLoop = () => new Promise((resolve) => setImmediate(resolve));

describe('OrderedGate', () => {
  it('runs at most `limit` tasks at once and the next one as soon as one ends', async () => {
    const gate = new OrderedGate(2);
    const log: string[] = [];
    const tasks = ['a', 'b', 'c', 'd'].map((name) => deferredTask(log, name));
    const results = tasks.map((t) => gate.run(t.task));
    await turnOfTheLoop();
    expect(log).toEqual(['a', 'b']);
    expect(gate.queued).toBe(2);
    tasks[1].finish();
    await turnOfTheLoop();
    expect(log).toEqual(['a', 'b', 'c']);
    tasks[0].finish();
    tasks[2].finish();
    tasks[3].finish();
    await expect(Promise.all(results)).resolves.toEqual(['a', 'b', 'c', 'd']);
    expect(gate.queued).toBe(0);
  });

  it('gives the next turn to the work that began first, and equals in the order they asked', async () => {
    const gate = new OrderedGate(1);
    const log: string[] = [];
    const running = deferredTask(log, 'running');
    const first = gate.run(running.task, 100);
    const waiting = [
      ['new request', 300],
      ['second statement of an older request', 150],
      ['another new request', 300],
      ['oldest', 50],
    ] as const;
    const tasks = waiting.map(([name]) => deferredTask(log, name));
    const results = tasks.map((t, n) => gate.run(t.task, waiting[n][1]));
    running.finish();
    for (const t of tasks) {
      await turnOfTheLoop();
      t.finish();
    }
    await Promise.all([first, ...results]);
    expect(log).toEqual(['running', 'oldest', 'second statement of an older request', 'new request', 'another new request']);
  });

  it('frees the turn of a task that failed', async () => {
    const gate = new OrderedGate(1);
    const log: string[] = [];
    const failing = deferredTask(log, 'failing');
    const next = deferredTask(log, 'next');
    const failed = gate.run(failing.task);
    const after = gate.run(next.task);
    failing.fail(new Error('statement failed'));
    await expect(failed).rejects.toThrow('statement failed');
    await turnOfTheLoop();
    next.finish();
    await expect(after).resolves.toBe('next');
    expect(log).toEqual(['failing', 'next']);
  });

  it('rejects a task that waited past the timeout with the message, without running it, and keeps the others in turn', async () => {
    jest.useFakeTimers();
    try {
      const gate = new OrderedGate(1, 5000, 'timeout exceeded when trying to connect');
      const log: string[] = [];
      const stuck = deferredTask(log, 'stuck');
      const late = deferredTask(log, 'late');
      const after = deferredTask(log, 'after');
      const running = gate.run(stuck.task);
      const timedOut = gate.run(late.task);
      jest.advanceTimersByTime(4000);
      const next = gate.run(after.task);
      jest.advanceTimersByTime(1000);
      await expect(timedOut).rejects.toThrow('timeout exceeded when trying to connect');
      expect(gate.queued).toBe(1);
      stuck.finish();
      await running;
      await Promise.resolve();
      await Promise.resolve();
      after.finish();
      await expect(next).resolves.toBe('after');
      expect(log).toEqual(['stuck', 'after']);
      expect(gate.queued).toBe(0);
    } finally {
      jest.useRealTimers();
    }
  });
});
