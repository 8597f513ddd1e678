import type Redis from 'ioredis';

export type LabelValues = Record<string, string>;

/** What prom-client's Registry reads from a metric object (`registerMetric` accepts any such object). */
export interface CollectedMetric {
  name: string;
  help: string;
  type: 'histogram' | 'counter';
  aggregator: 'sum';
  values: Array<{ metricName: string; labels: Record<string, string | number>; value: number }>;
}

/**
 * A metric kept in one Redis hash, so that what one process records (a queue worker, which serves
 * no HTTP) is scraped from any API process.
 */
abstract class SharedMetric {
  protected readonly key: string;

  constructor(
    protected readonly redis: Redis,
    readonly name: string,
    readonly help: string,
    protected readonly labelNames: readonly string[],
  ) {
    // The client adds the deployment's QUEUE_PREFIX.
    this.key = `metrics:${name}`;
  }

  /** Called by the registry on each scrape. */
  abstract get(): Promise<CollectedMetric>;

  /** Only the declared label names, in a fixed order; values may not contain the separators. */
  protected seriesOf(labels: LabelValues): string {
    return this.labelNames.map((name) => String(labels[name] ?? '').replace(/[|=,]/g, '_')).join(',');
  }

  protected labelsOf(series: string): Record<string, string> | null {
    const parts = series.split(',');
    if (parts.length !== this.labelNames.length) return null;
    return Object.fromEntries(this.labelNames.map((name, index) => [name, parts[index]]));
  }
}

/**
 * A Prometheus histogram whose buckets live in one Redis hash. Cumulative bucket counts are kept as
 * Prometheus expects them: one observation increments every bucket whose bound is at or above the
 * value, plus `+Inf`, `_count` and `_sum`.
 */
export class SharedHistogram extends SharedMetric {
  constructor(
    redis: Redis,
    name: string,
    help: string,
    labelNames: readonly string[],
    private readonly buckets: readonly number[],
  ) {
    super(redis, name, help, labelNames);
  }

  /** Never throws: losing one observation is better than failing the job that reported it. */
  async observe(labels: LabelValues, value: number): Promise<void> {
    if (!Number.isFinite(value) || value < 0) return;
    const series = this.seriesOf(labels);
    const multi = this.redis.multi();
    for (const bound of this.buckets) {
      if (value <= bound) multi.hincrby(this.key, `${series}|${bound}`, 1);
    }
    multi.hincrby(this.key, `${series}|+Inf`, 1);
    multi.hincrby(this.key, `${series}|count`, 1);
    multi.hincrbyfloat(this.key, `${series}|sum`, value);
    await multi.exec().catch(() => undefined);
  }

  /** Called by the registry on each scrape. */
  async get(): Promise<CollectedMetric> {
    const fields = await this.redis.hgetall(this.key);
    const bySeries = new Map<string, Record<string, number>>();
    for (const [field, raw] of Object.entries(fields)) {
      const cut = field.lastIndexOf('|');
      if (cut < 0) continue;
      const series = field.slice(0, cut);
      const entry = bySeries.get(series) ?? {};
      entry[field.slice(cut + 1)] = Number(raw);
      bySeries.set(series, entry);
    }
    const values: CollectedMetric['values'] = [];
    for (const [series, entry] of [...bySeries.entries()].sort(([a], [b]) => a.localeCompare(b))) {
      const labels = this.labelsOf(series);
      if (!labels) continue;
      for (const bound of this.buckets) {
        values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: bound }, value: entry[String(bound)] ?? 0 });
      }
      values.push({ metricName: `${this.name}_bucket`, labels: { ...labels, le: '+Inf' }, value: entry['+Inf'] ?? 0 });
      values.push({ metricName: `${this.name}_sum`, labels, value: entry.sum ?? 0 });
      values.push({ metricName: `${this.name}_count`, labels, value: entry.count ?? 0 });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }
}

/** A Prometheus counter kept in one Redis hash: one field per label set. */
export class SharedCounter extends SharedMetric {
  /** Never throws, like SharedHistogram.observe. */
  async inc(labels: LabelValues): Promise<void> {
    await this.redis.hincrby(this.key, this.seriesOf(labels), 1).catch(() => undefined);
  }

  async get(): Promise<CollectedMetric> {
    const fields = await this.redis.hgetall(this.key);
    const values: CollectedMetric['values'] = [];
    for (const [series, raw] of Object.entries(fields).sort(([a], [b]) => a.localeCompare(b))) {
      const labels = this.labelsOf(series);
      if (labels) values.push({ metricName: this.name, labels, value: Number(raw) });
    }
    return { name: this.name, help: this.help, type: 'counter', aggregator: 'sum', values };
  }
}
