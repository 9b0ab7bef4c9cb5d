/**
 * Retention of the levels' files: the metadata of files that were imported
 * long enough ago, or that never got imported, is deleted with their slices. The caller removes
 * their local and staged files.
 */
import type { MetadataStore } from '../ports/metadata-store.js';
import { levelKeys, type FileEntry, type SinkKey, type SliceEntry } from '../model/levels.js';
import { archiveIn, resetMarker } from './statistics-archive.js';

export interface RetentionPolicy {
  /** A file that is not imported (and not writing) expires this long after its last state change. */
  activeFileExpirationMs: number;
  /** An imported file expires this long after its import ... */
  archivedFileExpirationMs: number;
  /** ... but the newest this many imported files of each sink are kept. */
  archivedFileRetentionPerSink: number;
}

/** The reference's retention: 168 h, 1 h, 30 files. */
export const REFERENCE_RETENTION: RetentionPolicy = {
  activeFileExpirationMs: 168 * 3_600_000,
  archivedFileExpirationMs: 3_600_000,
  archivedFileRetentionPerSink: 30,
};

export class FileExpiry {
  private readonly now: () => Date;

  constructor(
    private readonly store: MetadataStore,
    /** `now`: the clock for the default time (tests). */
    options: { now?: () => Date } = {},
  ) {
    this.now = options.now ?? (() => new Date());
  }

  /**
   * Deletes the metadata of expired files with their slices, one transaction per file: files
   * that are neither writing nor imported, `activeFileExpirationMs` after their last state change;
   * imported files `archivedFileExpirationMs` after import, beyond the newest
   * `archivedFileRetentionPerSink` of their sink. The target statistics of a deleted imported file
   * are added to the sink's statistics archive in the same transaction, so totals stay. Returns
   * what was deleted, so that the caller can remove local and staged files.
   */
  deleteExpired(now: Date = this.now(), policy: RetentionPolicy = REFERENCE_RETENTION): { files: FileEntry[]; slices: SliceEntry[] } {
    const nowMs = now.getTime();
    const expired: FileEntry[] = [];
    let sinkFiles: FileEntry[] = [];
    const flush = () => {
      const imported = sinkFiles.filter((f) => f.state === 'imported').sort((a, b) => cmp(b.openedAt, a.openedAt));
      for (const f of imported.slice(policy.archivedFileRetentionPerSink)) {
        if (Date.parse(f.importedAt ?? f.openedAt) + policy.archivedFileExpirationMs <= nowMs) expired.push(f);
      }
      for (const f of sinkFiles) {
        if (f.state === 'imported' || f.state === 'writing') continue;
        if (Date.parse(lastStateChange(f)) + policy.activeFileExpirationMs <= nowMs) expired.push(f);
      }
      sinkFiles = [];
    };
    for (const { value } of this.store.list<FileEntry>('storage/file/')) {
      if (sinkFiles.length > 0 && !sameSink(sinkFiles[0], value)) flush();
      sinkFiles.push(value);
    }
    flush();

    const deletedSlices: SliceEntry[] = [];
    const deletedFiles: FileEntry[] = [];
    for (const file of expired) {
      this.store.transact((tx) => {
        const fileKey = levelKeys.file(file, file.openedAt);
        const current = tx.get<FileEntry>(fileKey);
        if (!current || current.state !== file.state) return; // changed meanwhile: next run decides
        const slices = tx.list<SliceEntry>(levelKeys.slices(file, file.openedAt));
        if (current.state === 'imported' && current.openedAt > resetMarker(tx, file)) {
          archiveIn(tx, file, slices.map((e) => e.value));
        }
        for (const s of slices) tx.delete(s.key);
        tx.delete(fileKey);
        deletedFiles.push(current);
        deletedSlices.push(...slices.map((e) => e.value));
      });
    }
    return { files: deletedFiles, slices: deletedSlices };
  }
}

function lastStateChange(f: FileEntry): string {
  return [f.openedAt, f.closingAt, f.importingAt, f.importedAt].reduce<string>((a, b) => (b !== undefined && b > a ? b : a), '');
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sameSink(a: SinkKey, b: SinkKey): boolean {
  return a.branchId === b.branchId && a.sourceId === b.sourceId && a.sinkId === b.sinkId;
}
