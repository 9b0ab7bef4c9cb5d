/**
 * How the sink writers log records they could not map (kept as mapping failures,
 * levels/mapping-failures.ts) without flooding the log when a mapping breaks under load:
 * per sink, the first failure opens a window of a minute and is logged with its details (offset,
 * column, reason); the failures after it within the window are only counted, and one line says
 * how many there were once the window has ended (on the writer's next tick, or with the sink's
 * next failure, whichever comes first). At most two lines per sink and minute, however many
 * records fail. Every failure is kept and counted anyway (GET .../failures, the
 * sluice_sink_records_failed_total metric): the log is only the alarm bell.
 *
 * The limiter is pure (it decides, events.ts logs) and takes its clock, for tests. Keyed by
 * sink, not by writer: the writers of a multi-partition sink share one window.
 */

export const FAILURE_LOG_WINDOW_MS = 60_000;

export interface FailureLogDecision {
  /** Failures of the sink's previous window that were not logged one by one: to be logged (as a count) before this one. */
  moreBefore?: number;
  /** Whether this failure is to be logged with its details (it opens a new window). */
  logThis: boolean;
}

interface Window {
  openedAt: number;
  /** Failures in the window after the one logged. */
  more: number;
}

export class FailureLogLimiter {
  /** Open windows by sink; a window is dropped when it has ended and been reported (a sink with no failures holds nothing). */
  private readonly windows = new Map<string, Window>();
  private readonly windowMs: number;
  private readonly now: () => number;

  constructor(options: { windowMs?: number; now?: () => number } = {}) {
    this.windowMs = options.windowMs ?? FAILURE_LOG_WINDOW_MS;
    this.now = options.now ?? Date.now;
  }

  /** A record of `sink` failed its mapping: what to log for it now. */
  failed(sink: string): FailureLogDecision {
    const window = this.windows.get(sink);
    const now = this.now();
    if (window && now - window.openedAt < this.windowMs) {
      window.more++;
      return { logThis: false };
    }
    this.windows.set(sink, { openedAt: now, more: 0 });
    return window && window.more > 0 ? { moreBefore: window.more, logThis: true } : { logThis: true };
  }

  /**
   * The count of the sink's failures not logged one by one, once its window has ended (then
   * the window is closed: the next failure is logged with its details); undefined while the
   * window lasts, or when it ended with nothing more to report.
   */
  ended(sink: string): number | undefined {
    const window = this.windows.get(sink);
    if (!window || this.now() - window.openedAt < this.windowMs) return undefined;
    this.windows.delete(sink);
    return window.more > 0 ? window.more : undefined;
  }
}

/**
 * The column a failure names, from the reason when the renderer did not give it separately:
 * reasons read `Invalid value for column "<name>": <why>.` (columns/errors.ts formatColumnError).
 */
export function failedColumn(failure: { reason: string; column?: string }): string | undefined {
  if (failure.column) return failure.column;
  const named = /^Invalid value for column "(.*?)": /.exec(failure.reason);
  return named?.[1] || undefined;
}
