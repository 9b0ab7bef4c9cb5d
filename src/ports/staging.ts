/**
 * The Staging port (docs/architecture.md, "Ports and adapters"): where a closed slice waits,
 * gzipped, until its file is imported into the target. The level operator stages slices and
 * removes staged ones through this port; the import reads them through it. The embedded
 * adapter is a directory on this node (adapters/staging/local-directory-staging.ts); an object
 * store would implement the same four calls with the same object names.
 */
import type { SliceEntry } from '../model/levels.js';

export interface StagedSlice {
  /** The staged object's name (SliceEntry.stagingPath). */
  stagingPath: string;
  /** Bytes of the gzip object (SliceEntry.compressedSize). */
  compressedSize: number;
}

export interface Staging {
  /** Where the staged data is, for the start-up log ("directory /data/staging"). */
  readonly description: string;
  /**
   * Stages exactly the committed bytes (`slice.uncompressedSize`) of the slice's local CSV at
   * `localFile`, gzipped, under stagingSlicePath(slice): either the complete object is there
   * afterwards or nothing is. Idempotent: staging a slice again (after a crash before `uploaded`
   * was committed) gives the same object; when the local file is gone but the object exists
   * (an earlier success removed the local file), the object is kept and returned.
   */
  stage(slice: SliceEntry, localFile: string): Promise<StagedSlice>;
  /** A file on this node that the target's import reads the staged object from. */
  readablePath(stagingPath: string): string;
  /** Removes staged objects; one that is missing is fine. */
  remove(stagingPaths: readonly string[]): Promise<void>;
  /** Removes everything staged for a sink instance (a deleted sink being purged). */
  removeSink(branchId: number, sourceId: string, instance: string): Promise<void>;
}
