/**
 * A small in-process cache: entries expire at their own time (or never), and past `maxEntries` the
 * oldest insertion is dropped (a Map keeps insertion order), so memory stays bounded whatever is
 * asked. `load` shares one load among concurrent misses of a key.
 */
export class TtlCache<V> {
  private readonly entries = new Map<string, { value: V; until: number }>();
  private readonly loading = new Map<string, Promise<V>>();

  constructor(
    private readonly maxEntries: number,
    private readonly now: () => number = Date.now,
  ) {}

  get(key: string): V | undefined {
    const entry = this.entries.get(key);
    if (!entry) return undefined;
    if (entry.until <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  /**
   * Keeps `value` until the absolute time `until` (ms; by default for as long as the bound allows);
   * a time already past stores nothing.
   */
  set(key: string, value: V, until = Infinity): void {
    if (until <= this.now()) return;
    this.entries.delete(key);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(key, { value, until });
  }

  /**
   * The value kept under `key`, else `loader()`'s; concurrent misses of one key share one call. The
   * loader keeps what it loaded with `set`, under `key` or under the key it knows the value is
   * exact for; a failed load keeps nothing, and the next miss loads again.
   */
  async load(key: string, loader: () => Promise<V>): Promise<V> {
    const hit = this.get(key);
    if (hit !== undefined) return hit;
    const inFlight = this.loading.get(key);
    if (inFlight) return inFlight;
    const run = loader().finally(() => this.loading.delete(key));
    this.loading.set(key, run);
    return run;
  }

  clear(): void {
    this.entries.clear();
  }

  get size(): number {
    return this.entries.size;
  }
}
