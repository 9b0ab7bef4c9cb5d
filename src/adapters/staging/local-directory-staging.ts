/**
 * The embedded Staging adapter: staged objects are gzip files under `<dataDir>/staging/`, in
 * the local level's layout. Node-local, like the local level: in a cluster, what a dead node
 * had staged but not imported its successor reads again from the event log.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdir, open, rename, rm, stat } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { syncDir } from '../../sync-dir.js';
import { stagingSlicePath, type SliceEntry } from '../../model/levels.js';
import type { StagedSlice, Staging } from '../../ports/staging.js';

export interface LocalDirectoryStagingOptions {
  /** gzip level, 1 (default, as the reference's local encoding) to 9. */
  level?: number;
}

export class LocalDirectoryStaging implements Staging {
  readonly description: string;

  /** `dataDir`: the data directory; objects live under its `staging/` folder. */
  constructor(private readonly dataDir: string, private readonly options: LocalDirectoryStagingOptions = {}) {
    this.description = `directory ${join(dataDir, 'staging')}`;
  }

  async stage(slice: SliceEntry, localFile: string): Promise<StagedSlice> {
    const stagingPath = stagingSlicePath(slice);
    const target = this.readablePath(stagingPath);
    const committed = slice.uncompressedSize;

    const localSize = await sizeOf(localFile);
    if (localSize === undefined) {
      const staged = await sizeOf(target);
      if (staged !== undefined) return { stagingPath, compressedSize: staged };
      if (committed > 0) throw new Error(`slice ${localFile} is missing and was never staged, ${committed} committed bytes are lost`);
    } else if (localSize < committed) {
      throw new Error(`slice ${localFile} has ${localSize} bytes but ${committed} bytes were committed`);
    }

    // Written under a temporary name, fsynced, renamed, and the directory fsynced: the staging
    // path holds either nothing or the complete file.
    await mkdir(dirname(target), { recursive: true });
    const temporary = `${target}.tmp`;
    const input = committed > 0 ? createReadStream(localFile, { start: 0, end: committed - 1 }) : emptyStream();
    await pipeline(input, createGzip({ level: this.options.level ?? 1 }), createWriteStream(temporary));
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

  readablePath(stagingPath: string): string {
    return join(this.dataDir, stagingPath);
  }

  async remove(stagingPaths: readonly string[]): Promise<void> {
    for (const path of stagingPaths) await rm(this.readablePath(path), { force: true });
  }

  async removeSink(branchId: number, sourceId: string, instance: string): Promise<void> {
    await rm(join(this.dataDir, 'staging', String(branchId), sourceId, instance), { recursive: true, force: true });
  }
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
