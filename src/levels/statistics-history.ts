/**
 * A short history of every sink's statistics, kept in memory, so that a page opened now can draw
 * the last hours instead of starting empty (the API's totals have no history). Every `interval`
 * it takes one sample of each sink: records received and imported (its statistics total) and
 * records that failed to map; it keeps `keep` of them. A restart starts a new history.
 */
export interface HistoryPoint {
  /** Unix seconds. */
  t: number;
  received: number;
  imported: number;
  failed: number;
}

/** One sink's numbers now, keyed by "<branchId>/<sourceId>/<sinkId>". */
export type HistorySampler = () => Iterable<readonly [key: string, numbers: Omit<HistoryPoint, 't'>]>;

export interface StatisticsHistoryOptions {
  /** Time between samples (default 30 s). */
  intervalMs?: number;
  /** How far back the history goes (default 6 h). */
  keepMs?: number;
  now?: () => number;
  /** Called when a sample fails (the history goes on with the next one). */
  onError?: (err: unknown) => void;
}

export class StatisticsHistory {
  readonly intervalMs: number;
  private readonly keepPoints: number;
  private readonly now: () => number;
  private readonly series = new Map<string, HistoryPoint[]>();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly sampler: HistorySampler,
    private readonly options: StatisticsHistoryOptions = {},
  ) {
    this.intervalMs = options.intervalMs ?? 30_000;
    this.keepPoints = Math.max(1, Math.ceil((options.keepMs ?? 6 * 3_600_000) / this.intervalMs));
    this.now = options.now ?? Date.now;
  }

  /** Samples now and then every interval, until stop(). */
  start(): void {
    if (this.timer) return;
    this.sample();
    this.timer = setInterval(() => this.sample(), this.intervalMs);
    this.timer.unref();
  }

  stop(): void {
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** One sample of every sink; sinks that are gone lose their history. */
  sample(): void {
    const t = this.now() / 1000;
    const seen = new Set<string>();
    try {
      for (const [key, numbers] of this.sampler()) {
        seen.add(key);
        let points = this.series.get(key);
        if (!points) this.series.set(key, (points = []));
        points.push({ t, ...numbers });
        if (points.length > this.keepPoints) points.splice(0, points.length - this.keepPoints);
      }
    } catch (err) {
      this.options.onError?.(err);
      return;
    }
    for (const key of this.series.keys()) if (!seen.has(key)) this.series.delete(key);
  }

  /** The sink's points, oldest first (empty for a sink not sampled yet). */
  points(branchId: number, sourceId: string, sinkId: string): readonly HistoryPoint[] {
    return this.series.get(historyKey(branchId, sourceId, sinkId)) ?? [];
  }

  /** Forgets a sink's points (its statistics were cleared). */
  clear(branchId: number, sourceId: string, sinkId?: string): void {
    const prefix = sinkId === undefined ? `${branchId}/${sourceId}/` : historyKey(branchId, sourceId, sinkId);
    for (const key of [...this.series.keys()]) if (sinkId === undefined ? key.startsWith(prefix) : key === prefix) this.series.delete(key);
  }
}

export function historyKey(branchId: number, sourceId: string, sinkId: string): string {
  return `${branchId}/${sourceId}/${sinkId}`;
}
