import { Injectable } from '@nestjs/common';
import { StudiesRepository, StudyPlace } from '../studies';
import { TtlCache } from '../common/cache/ttl-cache';

export type StudyPlaces = readonly StudyPlace[];

/**
 * How long a UID's answer is kept, known or unknown alike: two lifetimes would let a caller tell by
 * the timing of repeated requests whether a UID it may not read exists in another clinic. Short
 * enough that a study being ingested becomes viewable, and a moved study follows its clinic, within
 * seconds; long enough that a viewer's hundreds of requests per study do not reach PostgreSQL.
 */
export const UID_TTL_MS = 10_000;
const MAX_ENTRIES = 50_000;
/**
 * The flood guard. A token holder can name a new unknown UID in every request; whatever the rate,
 * PostgreSQL sees at most this many lookups at a time, each for every UID missed meanwhile (up to
 * MAX_BATCH_UIDS), and misses past MAX_QUEUED_UIDS are answered "unknown" (refused) at once.
 */
export const MAX_CONCURRENT_LOOKUPS = 2;
const MAX_BATCH_UIDS = 1_000;
export const MAX_QUEUED_UIDS = 10_000;
const UNKNOWN: StudyPlaces = [];

interface Waiting {
  uid: string;
  resolve: (places: StudyPlaces) => void;
  reject: (error: unknown) => void;
}

/** Study instance UID -> the study rows holding it (empty: unknown), cached in-process. */
@Injectable()
export class StudyPlacesCache {
  private readonly cache = new TtlCache<StudyPlaces>(MAX_ENTRIES);
  /** UIDs waiting for a lookup, in order; a UID is in `waiting` once, queued or in flight. */
  private readonly queue: Waiting[] = [];
  private readonly waiting = new Map<string, Promise<StudyPlaces>>();
  private running = 0;

  constructor(private readonly studies: StudiesRepository) {}

  /**
   * The places of each UID; PostgreSQL is asked only for UIDs not cached, together with the other
   * misses of the moment. `hit` tells whether the answer came from the cache alone.
   */
  async placesOf(uids: string[]): Promise<{ places: Map<string, StudyPlaces>; hit: boolean }> {
    const places = this.peek(uids);
    if (places) return { places, hit: true };
    const lookups = uids.map((uid) => this.cache.get(uid) ?? this.lookup(uid));
    this.drain();
    const found = await Promise.all(lookups);
    return { places: new Map(uids.map((uid, index) => [uid, found[index]])), hit: false };
  }

  /** The places of each UID when every one is cached, else undefined (then `placesOf`). */
  peek(uids: string[]): Map<string, StudyPlaces> | undefined {
    const places = new Map<string, StudyPlaces>();
    for (const uid of uids) {
      const cached = this.cache.get(uid);
      if (!cached) return undefined;
      places.set(uid, cached);
    }
    return places;
  }

  /** Seeds the cache (a token was just issued for this UID: its first validation should not miss). */
  remember(uid: string, places: StudyPlaces): void {
    this.cache.set(uid, places, Date.now() + UID_TTL_MS);
  }

  clear(): void {
    this.cache.clear();
  }

  private lookup(uid: string): Promise<StudyPlaces> {
    const pending = this.waiting.get(uid);
    if (pending) return pending;
    // Past the guard's queue, a miss is refused rather than remembered: memory and PostgreSQL stay bounded.
    if (this.queue.length >= MAX_QUEUED_UIDS) return Promise.resolve(UNKNOWN);
    const promise = new Promise<StudyPlaces>((resolve, reject) => this.queue.push({ uid, resolve, reject }));
    this.waiting.set(uid, promise);
    return promise;
  }

  /** Starts lookups while fewer than MAX_CONCURRENT_LOOKUPS run; each takes every UID queued so far. */
  private drain(): void {
    while (this.running < MAX_CONCURRENT_LOOKUPS && this.queue.length > 0) {
      const batch = this.queue.splice(0, MAX_BATCH_UIDS);
      this.running++;
      this.studies
        .placesOfStudyUids(batch.map(({ uid }) => uid))
        .then(
          (found) => {
            for (const { uid, resolve } of batch) {
              const places = found.get(uid) ?? UNKNOWN;
              this.remember(uid, places);
              this.waiting.delete(uid);
              resolve(places);
            }
          },
          (error: unknown) => {
            for (const { uid, reject } of batch) {
              this.waiting.delete(uid);
              reject(error);
            }
          },
        )
        .finally(() => {
          this.running--;
          this.drain();
        });
    }
  }
}
