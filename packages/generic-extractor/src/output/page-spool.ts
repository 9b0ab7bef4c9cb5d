/**
 * An append-only scratch file for one extraction: what the end of the run needs from every page
 * (its body, its rows as CSV) is written here as the page arrives and read back at the end, so
 * that memory does not grow with the number of pages. Removed by `close()`.
 */
import { closeSync, mkdirSync, mkdtempSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';

/** Where a piece of text is in the spool: byte offset and length. */
export interface SpoolRange {
  at: number;
  bytes: number;
}

export class PageSpool {
  private readonly dir: string;
  private readonly fd: number;
  /** Bytes in the file. */
  private written = 0;
  /** Appended, not yet written (one write of about 1 MiB instead of one per piece). */
  private pending: Buffer[] = [];
  private pendingBytes = 0;

  /** Creates the spool in a fresh directory under `parentDir` (the run's data directory). */
  constructor(parentDir: string) {
    mkdirSync(parentDir, { recursive: true });
    this.dir = mkdtempSync(join(parentDir, '.extractor-spool-'));
    this.fd = openSync(join(this.dir, 'pages'), 'w+');
  }

  /**
   * Appends bytes (text as UTF-8). Synchronous: the writes are few and large, and go to the
   * page cache.
   */
  append(piece: Buffer | string): SpoolRange {
    const buf = typeof piece === 'string' ? Buffer.from(piece, 'utf8') : piece;
    const range = { at: this.written + this.pendingBytes, bytes: buf.length };
    this.pending.push(buf);
    this.pendingBytes += buf.length;
    if (this.pendingBytes >= 1 << 20) this.flush();
    return range;
  }

  private flush(): void {
    if (this.pendingBytes === 0) return;
    const buf = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending, this.pendingBytes);
    for (let done = 0; done < buf.length; ) done += writeSync(this.fd, buf, done, buf.length - done, this.written + done);
    this.written += buf.length;
    this.pending = [];
    this.pendingBytes = 0;
  }

  read(range: SpoolRange): Buffer {
    if (range.at + range.bytes > this.written) this.flush();
    const buf = Buffer.allocUnsafe(range.bytes);
    let done = 0;
    while (done < range.bytes) {
      const n = readSync(this.fd, buf, done, range.bytes - done, range.at + done);
      if (n === 0) throw new Error(`The extractor's spool ends before byte ${range.at + range.bytes}`);
      done += n;
    }
    return buf;
  }

  close(): void {
    closeSync(this.fd);
    rmSync(this.dir, { recursive: true, force: true });
  }
}
