/**
 * A progress line on stderr. On a terminal one line is rewritten in place (`\r`, then erase to
 * the end), at most every 100 ms (a download reports every chunk); otherwise (a log, CI) a new
 * line at most every 2 seconds, so that a long export leaves a readable trace rather than
 * thousands of lines.
 */
const REDRAW_EVERY_MS = 100;
const LOG_EVERY_MS = 2_000;

export class ProgressLine {
  private shown = '';
  private lastWritten: number | undefined;

  constructor(
    private readonly stderr: { write(text: string): unknown; isTTY?: boolean },
    private readonly now: () => number = Date.now,
  ) {}

  private get tty(): boolean {
    return Boolean(this.stderr.isTTY);
  }

  update(line: string): void {
    if (line === this.shown) return;
    const t = this.now();
    if (this.lastWritten !== undefined && t - this.lastWritten < (this.tty ? REDRAW_EVERY_MS : LOG_EVERY_MS)) return;
    this.lastWritten = t;
    this.shown = line;
    this.stderr.write(this.tty ? `\r${line}\x1b[K` : `${line}\n`);
  }

  /** Ends the rewritten line (on a terminal), so that what follows starts on a clean line. */
  clear(): void {
    if (this.tty && this.shown !== '') this.stderr.write('\r\x1b[K');
    this.shown = '';
  }
}
