/**
 * Whether the writer's open file or slice is to rotate now (levels/triggers.ts has the
 * triggers and their floors): the import trigger closes the file, else the upload trigger
 * closes the slice. A pure decision; the writer rotates.
 */
import { importReason, triggersOf, uploadReason } from '../../levels/triggers.js';
import type { FileEntry, LevelLimits, SliceEntry } from '../../model/levels.js';

export interface Rotation {
  /** `file`: the file is imported (its writing slice closes with it); `slice`: the slice is uploaded. */
  level: 'file' | 'slice';
  /** Which trigger fired (levels/triggers.ts ImportReason, UploadReason). */
  reason: string;
  /** Records of what rotates. */
  records: number;
}

/** `slices`: every slice of the open file; `slice`: its writing slice. */
export function dueRotation(file: FileEntry, slices: readonly SliceEntry[], slice: SliceEntry, limits: LevelLimits, now: number): Rotation | undefined {
  const triggers = triggersOf(file.settings);
  const fileAmounts = {
    openedAtMs: Date.parse(file.openedAt),
    slicesCount: slices.length,
    recordsCount: slices.reduce((n, s) => n + s.recordsCount, 0),
    sizeBytes: slices.reduce((n, s) => n + s.uncompressedSize, 0),
  };
  const importBecause = importReason(fileAmounts, triggers.import, limits, now);
  if (importBecause) return { level: 'file', reason: importBecause, records: fileAmounts.recordsCount };
  const uploadBecause = uploadReason(
    { openedAtMs: Date.parse(slice.openedAt), recordsCount: slice.recordsCount, sizeBytes: slice.uncompressedSize },
    triggers.upload,
    limits,
    now,
  );
  if (uploadBecause) return { level: 'slice', reason: uploadBecause, records: slice.recordsCount };
  return undefined;
}
