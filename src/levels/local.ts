/**
 * The local level of a sink's data: one header-less CSV file per slice
 * on local disk. A SinkWriter appends a micro-batch of rows, `fdatasync`s, and then commits the
 * new byte length with the log offsets in one metadata transaction (FilesRepository.commitBatch).
 * Bytes beyond the committed length belong to a batch whose commit did not happen; after a crash
 * `recoverSlice` cuts them off, and the batch is written again from the committed offsets.
 */
import { mkdir, open, rm, stat, type FileHandle } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { csvRows, type Cell } from '../pipeline/csv-rows.js';
import type { SliceEntry } from '../model/levels.js';
import { syncDir } from '../sync-dir.js';

export { csvRows, type Cell } from '../pipeline/csv-rows.js';

export interface SliceAppenderOptions {
  /** fdatasync after every append (sync mode "disk", the default); false: page cache only ("cache"). */
  sync?: boolean;
}

/**
 * Appends batches of rows to one local slice file. Opening recovers the file to its committed
 * length. Appends run one after another in call order; if an append fails the appender refuses
 * further appends (the file's tail is unknown): reopen it with the committed length.
 */
const EMPTY = new Uint8Array(0);

export class SliceAppender {
  private queue: Promise<unknown> = Promise.resolve();
  private broken?: Error;
  private closed = false;

  private constructor(
    readonly path: string,
    private readonly handle: FileHandle,
    private bytes: number,
    private readonly sync: boolean,
  ) {}

  /** Opens (creating directories and the file as needed) after truncating to `committedLength`. */
  static async open(path: string, committedLength: number, options: SliceAppenderOptions = {}): Promise<SliceAppender> {
    await recoverSlice(path, committedLength);
    const handle = await open(path, 'a');
    return new SliceAppender(path, handle, committedLength, options.sync ?? true);
  }

  /** Byte length of the file after the last successful append. */
  get length(): number {
    return this.bytes;
  }

  /**
   * Appends the rows and (by default) fdatasyncs; resolves with the new byte length of the file,
   * the value to commit with the batch. An empty batch writes nothing.
   */
  append(rows: readonly (readonly Cell[])[]): Promise<number> {
    return this.appendBytes(rows.length === 0 ? EMPTY : Buffer.from(csvRows(rows), 'utf8'));
  }

  /** As append(), for rows already encoded as CSV (the render worker's output). */
  appendBytes(data: Uint8Array): Promise<number> {
    const run = this.queue.then(async () => {
      if (this.closed) throw new Error(`the slice appender of ${this.path} is closed`);
      if (this.broken) throw new Error(`an earlier append to ${this.path} failed; reopen the slice: ${this.broken.message}`);
      if (data.length === 0) return this.bytes;
      try {
        let offset = 0;
        while (offset < data.length) {
          const { bytesWritten } = await this.handle.write(data, offset, data.length - offset);
          offset += bytesWritten;
        }
        if (this.sync) await this.handle.datasync();
      } catch (err) {
        this.broken = err as Error;
        throw err;
      }
      this.bytes += data.length;
      return this.bytes;
    });
    this.queue = run.catch(() => undefined);
    return run;
  }

  /** Waits for pending appends and closes the file; repeated calls are fine. */
  close(): Promise<void> {
    const run = this.queue.then(async () => {
      if (this.closed) return;
      this.closed = true;
      await this.handle.close();
    });
    this.queue = run.catch(() => undefined);
    return run;
  }
}

/**
 * Brings a slice file to its committed length after a crash: bytes beyond it (an uncommitted
 * batch) are cut off and the cut is synced. A missing file is created when nothing was committed.
 * Resolves with the number of bytes removed. Throws when committed bytes are missing, which
 * means data the metadata counts is gone: the caller must not continue writing that slice.
 */
export async function recoverSlice(path: string, committedLength: number): Promise<number> {
  if (!Number.isSafeInteger(committedLength) || committedLength < 0) {
    throw new Error(`invalid committed length ${committedLength} of slice ${path}`);
  }
  let size: number;
  try {
    size = (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    if (committedLength > 0) {
      throw new Error(`slice ${path} is missing but ${committedLength} bytes of it were committed`);
    }
    await mkdir(dirname(path), { recursive: true });
    const handle = await open(path, 'a');
    try {
      await handle.sync();
    } finally {
      await handle.close();
    }
    await syncDir(dirname(path));
    return 0;
  }
  if (size < committedLength) {
    throw new Error(`slice ${path} has ${size} bytes but ${committedLength} bytes were committed`);
  }
  if (size === committedLength) return 0;
  const handle = await open(path, 'r+');
  try {
    await handle.truncate(committedLength);
    await handle.sync();
  } finally {
    await handle.close();
  }
  return size - committedLength;
}

/** Removes the local files of slices whose entries are gone (a missing file is fine). */
export async function removeLocalFiles(dataDir: string, slices: readonly SliceEntry[]): Promise<void> {
  for (const slice of slices) await rm(join(dataDir, slice.localPath), { force: true });
}

/** Removes everything on the local level of a sink instance (a deleted sink being purged). */
export async function removeLocalSink(dataDir: string, branchId: number, sourceId: string, instance: string): Promise<void> {
  await rm(join(dataDir, 'local', String(branchId), sourceId, instance), { recursive: true, force: true });
}
