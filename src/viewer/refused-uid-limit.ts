import { Inject, Injectable, Logger } from '@nestjs/common';
import Redis from 'ioredis';
import { TtlCache } from '../common/cache/ttl-cache';
import { REDIS } from '../common/redis/redis.module';
import { APP_CONFIG } from '../config/config.module';
import { AppConfig } from '../config/environment';

export const REFUSED_UID_WINDOW_SECONDS = 60;
const MAX_BLOCKED = 20_000;

/**
 * The limit on study UIDs a credential names that it cannot read (unknown, or another unit's or
 * clinic's): VIEWER_REFUSED_UIDS_PER_MINUTE per credential in a window of a minute from its first
 * refusal, counted in Redis so that it holds across API processes. Past it, the credential is
 * refused outright (before any lookup) until the window is over. Only refusals are counted, so a
 * viewer reading what it may read never waits on this; the check on each request is in memory.
 */
@Injectable()
export class RefusedUidLimit {
  private readonly logger = new Logger(RefusedUidLimit.name);
  /** Credential -> blocked until (the window's end, as Redis told it). */
  private readonly blockedUntil = new TtlCache<true>(MAX_BLOCKED);

  constructor(
    @Inject(APP_CONFIG) private readonly config: AppConfig,
    @Inject(REDIS) private readonly redis: Redis,
  ) {}

  /** Whether this credential used up its refusals of the minute (in this process's knowledge). */
  blocked(credentialId: string): boolean {
    return this.blockedUntil.get(credentialId) === true;
  }

  /** Counts `uids` refusals of the credential; resolves once counted, never rejects. */
  async refused(credentialId: string, uids: number): Promise<void> {
    const key = `viewer:refused:${credentialId}`;
    try {
      const replies = await this.redis
        .multi()
        .set(key, 0, 'EX', REFUSED_UID_WINDOW_SECONDS, 'NX')
        .incrby(key, uids)
        .pttl(key)
        .exec();
      const count = Number(replies?.[1]?.[1]);
      const ttl = Number(replies?.[2]?.[1]);
      if (count > this.config.VIEWER_REFUSED_UIDS_PER_MINUTE) {
        this.blockedUntil.set(credentialId, true, Date.now() + (ttl > 0 ? ttl : REFUSED_UID_WINDOW_SECONDS * 1000));
      }
    } catch (error) {
      // Unreachable Redis: the refusal stands; only the count is lost.
      this.logger.warn(`Refused UIDs not counted: ${(error as Error)?.message ?? error}`);
    }
  }
}
