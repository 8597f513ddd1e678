import { Injectable } from '@nestjs/common';
import { GENERIC_CONNECTIONS } from '../../database/list/prepared-queries';

/** What a guarded request costs: a search the index serves, or one it cannot narrow (wildcard-only). */
export type Cost = 'expensive' | 'wildcard';

/**
 * At most this many expensive requests (list searches, QIDO, PDFs, downloads) of one user run at a
 * time in an API process, and of one clinic; a search the index cannot narrow counts against its
 * own, lower limits too. The clinic's limit is half the search pool (GENERIC_CONNECTIONS), so that
 * one clinic never holds every connection the others' lists need.
 */
export const FAIR_SHARE_LIMITS: Readonly<Record<Cost, { user: number; tenant: number }>> = {
  expensive: { user: 3, tenant: Math.max(1, Math.floor(GENERIC_CONNECTIONS / 2)) },
  wildcard: { user: 1, tenant: 1 },
};

/** A slot held by a request; `release` is idempotent. */
export interface FairShareSlot {
  release(): void;
}

/**
 * Counts of the expensive requests running in this process, per user and per clinic. `take`
 * answers a slot, or null when one of the limits is reached (the caller answers 429). Per process:
 * each API process has its own connection pools, which are what the limits protect.
 */
@Injectable()
export class FairShareCounters {
  private readonly running = new Map<string, number>();

  take(userId: string, tenantId: string | null, cost: Cost): FairShareSlot | null {
    const keys = [`user:${userId}:expensive`, `tenant:${tenantId ?? 'none'}:expensive`];
    const limits = [FAIR_SHARE_LIMITS.expensive.user, FAIR_SHARE_LIMITS.expensive.tenant];
    if (cost === 'wildcard') {
      keys.push(`user:${userId}:wildcard`, `tenant:${tenantId ?? 'none'}:wildcard`);
      limits.push(FAIR_SHARE_LIMITS.wildcard.user, FAIR_SHARE_LIMITS.wildcard.tenant);
    }
    // A super admin has no clinic: only their own limits apply.
    const held = keys.map((key, i) => ({ key, limit: tenantId === null && key.startsWith('tenant:') ? Infinity : limits[i] }));
    if (held.some(({ key, limit }) => (this.running.get(key) ?? 0) >= limit)) return null;
    for (const { key } of held) this.running.set(key, (this.running.get(key) ?? 0) + 1);
    let released = false;
    return {
      release: () => {
        if (released) return;
        released = true;
        for (const { key } of held) {
          const left = (this.running.get(key) ?? 1) - 1;
          if (left > 0) this.running.set(key, left);
          else this.running.delete(key);
        }
      },
    };
  }

  /** Requests running under this key (for tests). */
  count(key: string): number {
    return this.running.get(key) ?? 0;
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
