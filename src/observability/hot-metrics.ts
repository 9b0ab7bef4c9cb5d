/**
 * Counters and a histogram for the ingestion hot path, registered in a prom-client registry
 * as metrics of their own. prom-client hashes the label set on every labelled increment, even
 * through `labels()` children; at 20 k requests/s that was a few per cent of the ingest path's
 * CPU. Here a label set is looked up once and then is a plain object whose numbers the request
 * adds to; the registry reads them when it is scraped.
 */
import type { Registry } from 'prom-client';

type Labels<L extends string> = Record<L, string>;

interface Exported {
  name: string;
  help: string;
  type: 'counter' | 'histogram';
  values: { labels: Record<string, string | number>; value: number; metricName?: string }[];
  aggregator: 'sum';
}

/** What prom-client's Registry needs of a metric (registry.registerMetric, metrics(), getMetricsAsJSON()). */
abstract class HotMetric<L extends string, C> {
  private readonly cells = new Map<string, { labels: Labels<L>; cell: C }>();

  constructor(
    readonly name: string,
    readonly help: string,
    readonly labelNames: readonly L[],
    registry: Registry,
  ) {
    registry.registerMetric(this as never);
  }

  /** The cell of a label set, made on first use; keep it for the next requests. */
  cell(labels: Labels<L>): C {
    const key = this.labelNames.map((l) => labels[l]).join('\u0000');
    let entry = this.cells.get(key);
    if (!entry) this.cells.set(key, (entry = { labels: { ...labels }, cell: this.newCell() }));
    return entry.cell;
  }

  reset(): void {
    this.cells.clear();
  }

  protected entries(): { labels: Labels<L>; cell: C }[] {
    return [...this.cells.values()];
  }

  protected abstract newCell(): C;
  abstract get(): Promise<Exported>;
}

export class HotCounter<L extends string> extends HotMetric<L, { value: number }> {
  readonly type = 'counter';

  protected newCell(): { value: number } {
    return { value: 0 };
  }

  async get(): Promise<Exported> {
    return {
      name: this.name, help: this.help, type: 'counter', aggregator: 'sum',
      values: this.entries().map(({ labels, cell }) => ({ labels, value: cell.value })),
    };
  }
}

export class HistogramCell {
  readonly counts: Float64Array;
  sum = 0;
  count = 0;

  constructor(private readonly upperBounds: readonly number[]) {
    this.counts = new Float64Array(upperBounds.length);
  }

  observe(value: number): void {
    this.sum += value;
    this.count++;
    const bounds = this.upperBounds;
    for (let i = 0; i < bounds.length; i++) {
      if (value <= bounds[i]) {
        this.counts[i]++;
        return;
      }
    }
  }
}

export class HotHistogram<L extends string> extends HotMetric<L, HistogramCell> {
  readonly type = 'histogram';

  constructor(name: string, help: string, labelNames: readonly L[], readonly buckets: readonly number[], registry: Registry) {
    super(name, help, labelNames, registry);
  }

  protected newCell(): HistogramCell {
    return new HistogramCell(this.buckets);
  }

  async get(): Promise<Exported> {
    const values: Exported['values'] = [];
    for (const { labels, cell } of this.entries()) {
      let cumulative = 0;
      this.buckets.forEach((le, i) => {
        cumulative += cell.counts[i];
        values.push({ labels: { ...labels, le }, value: cumulative, metricName: `${this.name}_bucket` });
      });
      values.push({ labels: { ...labels, le: '+Inf' }, value: cell.count, metricName: `${this.name}_bucket` });
      values.push({ labels, value: cell.sum, metricName: `${this.name}_sum` });
      values.push({ labels, value: cell.count, metricName: `${this.name}_count` });
    }
    return { name: this.name, help: this.help, type: 'histogram', aggregator: 'sum', values };
  }
}
