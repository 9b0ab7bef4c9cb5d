/**
 * Keeps a job's log readable when the same line comes once per child job (or per request):
 * the first few lines of a kind are logged as they come, the rest only counted, and `flush()`
 * writes one summary line per kind that had more (`… and 147 more like this (150 in all) …`,
 * with the last one suppressed). The caller names the kind; `lineShape` helps it build one.
 */
export type LogLevel = 'info' | 'warning' | 'error';

/** How many lines of one kind are logged before the rest are only counted. */
export const SHOWN_PER_KIND = 3;

interface Kind {
  count: number;
  level: LogLevel;
  label: string;
  last: string;
}

/** A line with its varying parts (numbers) replaced, to group lines that differ only in them. */
export function lineShape(message: string): string {
  return message.replace(/\d+(\.\d+)?/g, '#');
}

export class RepeatedLines {
  private readonly kinds = new Map<string, Kind>();

  constructor(
    private readonly log: (message: string, level?: LogLevel) => void,
    private readonly shown = SHOWN_PER_KIND,
  ) {}

  /**
   * Logs `message` unless `shown` lines of `kind` were logged already; then only counts it.
   * `label` says in the summary what repeated (e.g. "child jobs of 'users/{id}/orders'").
   */
  line(kind: string, message: string, level: LogLevel = 'info', label = ''): void {
    let k = this.kinds.get(kind);
    if (!k) this.kinds.set(kind, (k = { count: 0, level, label, last: '' }));
    k.count++;
    if (k.count <= this.shown) this.log(message, level);
    else k.last = message;
  }

  /** One summary line per kind that had lines suppressed; then starts counting afresh. */
  flush(): void {
    for (const k of this.kinds.values()) {
      const more = k.count - this.shown;
      if (more <= 0) continue;
      const what = k.label ? ` for ${k.label}` : '';
      this.log(`… and ${more} more like this (${k.count} in all)${what}; the last: ${k.last}`, k.level);
    }
    this.kinds.clear();
  }
}
