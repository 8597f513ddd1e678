import { Injectable } from '@nestjs/common';

/** What a guarded request costs: a search the index serves, or one it cannot narrow (wildcard-only). */
export type Cost = 'expensive' | 'wildcard';

/**
 * At most this many expensive requests (list searches, QIDO, PDFs, downloads) of one user run at a
 * time in an API process, and of one clinic; a search the index cannot narrow counts against its
 * own, lower limits too. A clinic holds at most 6 of the pool's 20 connections (data-source-options)
 * with expensive requests, so the other clinics always find some, whatever one clinic sends. Four
 * of one user keep both the API and PostgreSQL busy where three left a core idle between them
 * (first searches of one clinic admin at 32 connections: 550 -> 600 per second, the other clinic's
 * list beside 40 worst-case searches unchanged).
 */
export const FAIR_SHARE_LIMITS: Readonly<Record<Cost, { user: number; tenant: number }>> = {
  expensive: { user: 4, tenant: 6 },
  wildcard: { user: 1, tenant: 1 },
};
/** A request past a limit waits its turn this long at most (it holds no connection meanwhile), then 429. */
export const FAIR_SHARE_MAX_WAIT_MS = 2_000;
/** Past this many waiting under one limit, a request is refused at once. */
export const FAIR_SHARE_MAX_WAITING = 64;

/** A slot held by a request; `release` is idempotent. */
export interface FairShareSlot {
  release(): void;
}

interface Turn {
  running: number;
  waiting: Array<() => void>;
}

/**
 * The turns of the expensive requests of this process, per user and per clinic (and per cost).
 * `take` resolves with a slot once every limit the request falls under has room, in the order the
 * requests came; null when it would wait longer than FAIR_SHARE_MAX_WAIT_MS or behind more than
 * FAIR_SHARE_MAX_WAITING others (the caller answers 429). Per process: each API process has its own
 * connection pools, which are what the limits protect.
 */
@Injectable()
export class FairShareCounters {
  private readonly turns = new Map<string, Turn>();

  async take(userId: string, tenantId: string | null, cost: Cost): Promise<FairShareSlot | null> {
    const limits: Array<[key: string, limit: number]> = [[`user:${userId}:expensive`, FAIR_SHARE_LIMITS.expensive.user]];
    // A super admin has no clinic: only their own limits apply.
    if (tenantId !== null) limits.push([`tenant:${tenantId}:expensive`, FAIR_SHARE_LIMITS.expensive.tenant]);
    if (cost === 'wildcard') {
      limits.push([`user:${userId}:wildcard`, FAIR_SHARE_LIMITS.wildcard.user]);
      if (tenantId !== null) limits.push([`tenant:${tenantId}:wildcard`, FAIR_SHARE_LIMITS.wildcard.tenant]);
    }
    const deadline = Date.now() + FAIR_SHARE_MAX_WAIT_MS;
    const held: string[] = [];
    const release = () => held.splice(0).forEach((key) => this.leave(key));
    // Always in the same order (user, clinic), so two requests never wait on each other.
    for (const [key, limit] of limits) {
      if (!(await this.enter(key, limit, deadline))) {
        release();
        return null;
      }
      held.push(key);
    }
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        release();
      },
    };
  }

  /** Requests running under this key (for tests and metrics). */
  count(key: string): number {
    return this.turns.get(key)?.running ?? 0;
  }

  private enter(key: string, limit: number, deadline: number): Promise<boolean> {
    let turn = this.turns.get(key);
    if (!turn) this.turns.set(key, (turn = { running: 0, waiting: [] }));
    if (turn.running < limit && turn.waiting.length === 0) {
      turn.running++;
      return Promise.resolve(true);
    }
    if (turn.waiting.length >= FAIR_SHARE_MAX_WAITING) return Promise.resolve(false);
    const queue = turn;
    return new Promise<boolean>((resolve) => {
      const granted = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(
        () => {
          const at = queue.waiting.indexOf(granted);
          if (at !== -1) queue.waiting.splice(at, 1);
          this.forgetIfIdle(key);
          resolve(false);
        },
        Math.max(0, deadline - Date.now()),
      );
      queue.waiting.push(granted);
    });
  }

  private leave(key: string): void {
    const turn = this.turns.get(key);
    if (!turn) return;
    const next = turn.waiting.shift();
    // The slot passes to the next in line, or is given back.
    if (next) next();
    else turn.running--;
    this.forgetIfIdle(key);
  }

  private forgetIfIdle(key: string): void {
    const turn = this.turns.get(key);
    if (turn && turn.running <= 0 && turn.waiting.length === 0) this.turns.delete(key);
  }
}

const WILDCARDS = /[*?%_]/;
const LETTERS_OR_DIGITS = /[\p{L}\p{N}]/gu;

/**
 * Whether a search text is one no index narrows: it holds a wildcard (`*`, `?`, or `%`/`_`, which
 * the list search takes literally but matches nearly every name anyway) and fewer than three letters
 * or digits, e.g. `*`, `%`, `a*`, `%_%`. Such a search reads the whole clinic.
 */
export function isWildcardOnly(text: unknown): boolean {
  if (typeof text !== 'string' || !WILDCARDS.test(text)) return false;
  return (text.match(LETTERS_OR_DIGITS)?.length ?? 0) < 3;
}
