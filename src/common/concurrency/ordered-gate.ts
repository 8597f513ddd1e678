interface Waiter {
  since: number;
  /** When it asked, for the timeout. */
  asked: number;
  grant: () => void;
  refuse: (error: Error) => void;
}

/**
 * Runs at most `limit` tasks at once. The others wait ordered by when the work they belong to
 * began (`since`, a performance.now() time; by default, when they asked), the earliest first, and
 * equals in the order they asked: a request's second statement goes before the first statements of
 * requests that came after it, so a request that needs three statements waits about once behind
 * the others, not three times. A task that waits longer than `timeoutMs` (when given; checked
 * every fifth of it) is not run: `run` rejects with `timeoutMessage`.
 */
export class OrderedGate {
  private running = 0;
  private readonly waiting: Waiter[] = [];
  private sweeper?: NodeJS.Timeout;

  constructor(
    private readonly limit: number,
    private readonly timeoutMs = 0,
    private readonly timeoutMessage = 'timeout exceeded while waiting for a turn',
  ) {}

  async run<T>(task: () => Promise<T>, since = performance.now()): Promise<T> {
    if (this.running < this.limit) this.running++;
    else await this.turn(since);
    try {
      return await task();
    } finally {
      const next = this.waiting.shift();
      if (next) next.grant();
      else this.running--;
    }
  }

  /** Tasks waiting for a turn. */
  get queued(): number {
    return this.waiting.length;
  }

  private turn(since: number): Promise<void> {
    return new Promise<void>((grant, refuse) => {
      // Most work began last: the place is found from the end.
      let at = this.waiting.length;
      while (at > 0 && this.waiting[at - 1].since > since) at--;
      this.waiting.splice(at, 0, { since, asked: performance.now(), grant, refuse });
      if (this.timeoutMs > 0) this.sweeper ??= setInterval(() => this.refuseLate(), Math.max(1, this.timeoutMs / 5)).unref();
    });
  }

  /**
   * Refuses the tasks that waited past the timeout. One timer for all while any wait, not one per
   * task (most statements wait for a turn): the timeout is kept within a fifth of itself.
   */
  private refuseLate(): void {
    const late = performance.now() - this.timeoutMs;
    for (let at = this.waiting.length - 1; at >= 0; at--) {
      const waiter = this.waiting[at];
      if (waiter.asked > late) continue;
      this.waiting.splice(at, 1);
      waiter.refuse(new Error(this.timeoutMessage));
    }
    if (this.waiting.length === 0 && this.sweeper) {
      clearInterval(this.sweeper);
      this.sweeper = undefined;
    }
  }
}
