/**
 * The staging level (reference §17.5): a closed slice's committed bytes, gzipped, under
 * `<dataDir>/staging/` in the same layout as the local level. The embedded Staging adapter is
 * this local directory; an object store would take the same file.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { fsTime, sliceDir, syncDir } from './local-slices.js';
import type { SliceEntry, SliceKey } from './model.js';

/** The staged gzip of a slice, relative to the data directory. */
export function stagingSlicePath(slice: SliceKey): string {
  return join('staging', sliceDir(slice), `${fsTime(slice.openedAt)}.csv.gz`);
}

export interface StagedSlice {
  /** Relative to the data directory (SliceEntry.stagingPath). */
  stagingPath: string;
  /** Bytes of the gzip file (SliceEntry.compressedSize). */
  compressedSize: number;
}

export interface StageOptions {
  /** gzip level, 1 (default, as the reference's local encoding) to 9. */
  level?: number;
}

/**
 * Gzips exactly the committed bytes (`slice.uncompressedSize`) of the local slice into its
 * staging path: written under a temporary name, fsynced, renamed, and the directory fsynced, so
 * the staging path holds either nothing or the complete file. Idempotent: re-running after a
 * crash (before the `uploaded` state was committed) writes the same file again; if the local
 * file is gone but the staged file exists (it was removed after an earlier success), the staged
 * file is kept. The caller commits `uploaded` with the result and may then remove the local file.
 */
export async function stageSlice(dataDir: string, slice: SliceEntry, options: StageOptions = {}): Promise<StagedSlice> {
  const stagingPath = stagingSlicePath(slice);
  const source = join(dataDir, slice.localPath);
  const target = join(dataDir, stagingPath);
  const committed = slice.uncompressedSize;

  let localSize: number | undefined;
  try {
    localSize = (await stat(source)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
  }
  if (localSize === undefined) {
    const staged = await sizeOf(target);
    if (staged !== undefined) return { stagingPath, compressedSize: staged };
    if (committed > 0) throw new Error(`slice ${source} is missing and was never staged, ${committed} committed bytes are lost`);
  } else if (localSize < committed) {
    throw new Error(`slice ${source} has ${localSize} bytes but ${committed} bytes were committed`);
  }

  await mkdir(dirname(target), { recursive: true });
  const temporary = `${target}.tmp`;
  const input = committed > 0 ? createReadStream(source, { start: 0, end: committed - 1 }) : emptyStream();
  await pipeline(input, createGzip({ level: options.level ?? 1 }), createWriteStream(temporary));
  const handle = await open(temporary, 'r+');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, target);
  await syncDir(dirname(target));
  return { stagingPath, compressedSize: (await stat(target)).size };
}

async function sizeOf(path: string): Promise<number | undefined> {
  try {
    return (await stat(path)).size;
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
}

async function* emptyStream(): AsyncGenerator<Buffer> {
  // Nothing: a slice without committed bytes stages as an empty gzip member.
}
