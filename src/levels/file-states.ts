/**
 * The states of files and slices and their one-step moves, inside the caller's transaction:
 *
 *   file:  writing -> closing -> importing -> imported
 *   slice: writing -> closing -> uploading -> uploaded -> imported
 *
 * A move that the current state does not allow throws (LevelStateError), so the transaction
 * writes nothing. A successful move clears the retry fields of a failed upload or import.
 */
import type { MetadataTx } from '../ports/metadata-store.js';
import { levelKeys, sinkPath, type FileEntry, type FileKey, type FileState, type Retry, type SliceEntry, type SliceKey, type SliceState } from '../model/levels.js';
import { compact } from './stored-values.js';

/** A state change or commit that the current state does not allow; nothing was written. */
export class LevelStateError extends Error {
  override name = 'LevelStateError';
}

const FILE_NEXT: Partial<Record<FileState, FileState>> = { writing: 'closing', closing: 'importing', importing: 'imported' };
const SLICE_NEXT: Partial<Record<SliceState, SliceState>> = {
  writing: 'closing', closing: 'uploading', uploading: 'uploaded', uploaded: 'imported',
};

/** Moves the file one state on, with the fields of its new state. */
export function advanceFile(tx: MetadataTx, key: FileKey, to: FileState, fields: Partial<FileEntry>): FileEntry {
  const k = levelKeys.file(key, key.openedAt);
  const file = tx.get<FileEntry>(k);
  if (!file) throw new LevelStateError(`file ${fileLabel(key)} does not exist`);
  if (FILE_NEXT[file.state] !== to) {
    throw new LevelStateError(`file ${fileLabel(key)} is ${file.state} and cannot become ${to}`);
  }
  const updated = compact({ ...withoutRetry(file), ...fields, state: to });
  tx.put(k, updated);
  return updated;
}

/** Moves the slice one state on, with the fields of its new state. */
export function advanceSlice(tx: MetadataTx, key: SliceKey, to: SliceState, fields: Partial<SliceEntry>): SliceEntry {
  const k = levelKeys.slice(key, key.fileOpenedAt, key.openedAt);
  const slice = tx.get<SliceEntry>(k);
  if (!slice) throw new LevelStateError(`slice ${sliceLabel(key)} does not exist`);
  if (SLICE_NEXT[slice.state] !== to) {
    throw new LevelStateError(`slice ${sliceLabel(key)} is ${slice.state} and cannot become ${to}`);
  }
  const updated = compact({ ...withoutRetry(slice), ...fields, state: to });
  tx.put(k, updated);
  return updated;
}

export function fileLabel(f: FileKey): string {
  return `${sinkPath(f)}/${f.openedAt}`;
}

export function sliceLabel(s: SliceKey): string {
  return `${sinkPath(s)}/${s.fileOpenedAt}/${s.openedAt}`;
}

function withoutRetry<T extends Retry>(entry: T): T {
  const copy = { ...entry };
  delete copy.retryAttempt;
  delete copy.retryReason;
  delete copy.firstFailedAt;
  delete copy.lastFailedAt;
  delete copy.retryAfter;
  return copy;
}
