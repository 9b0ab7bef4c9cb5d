/**
 * Stream helpers for CSV the targets read and write.
 */
import { Transform, type TransformCallback } from 'node:stream';

/**
 * Passes CSV bytes through and counts the records in them (a line break outside quotes ends a
 * record), for the progress of an export; `onRecords` gets the running count now and then.
 */
export class CsvRecordCounter extends Transform {
  records = 0;
  private quoted = false;
  private lastReport = 0;

  constructor(private readonly onRecords?: (records: number) => void) {
    super();
  }

  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    for (let i = 0; i < chunk.length; i++) {
      const byte = chunk[i];
      if (byte === 0x22) this.quoted = !this.quoted;
      else if (byte === 0x0a && !this.quoted) this.records++;
    }
    const now = Date.now();
    if (this.onRecords && now - this.lastReport >= 500) {
      this.lastReport = now;
      this.onRecords(this.records);
    }
    done(null, chunk);
  }
}

/**
 * PostgreSQL's text cannot hold the NUL character (DuckDB's can): it is replaced by U+FFFD in
 * the bytes sent to PostgreSQL, instead of failing the import of a whole file for ever. A NUL
 * byte in UTF-8 is always the character U+0000, so the replacement is safe byte by byte.
 */
export class NulReplacer extends Transform {
  override _transform(chunk: Buffer, _encoding: BufferEncoding, done: TransformCallback): void {
    done(null, chunk.indexOf(0) < 0 ? chunk : replaceNul(chunk));
  }
}

const REPLACEMENT = Buffer.from('\uFFFD');

function replaceNul(chunk: Buffer): Buffer {
  const parts: Buffer[] = [];
  let from = 0;
  for (let at = chunk.indexOf(0); at >= 0; at = chunk.indexOf(0, from)) {
    parts.push(chunk.subarray(from, at), REPLACEMENT);
    from = at + 1;
  }
  parts.push(chunk.subarray(from));
  return Buffer.concat(parts);
}
