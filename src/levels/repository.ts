/**
 * Files and slices of sinks in the metadata store (reference §17; model.ts). Every method that
 * writes runs in exactly one `transact`, so each state change, rotation and batch commit is
 * atomic and durable when the method returns. The repository does no file I/O.
 *
 *   file:  writing -> closing -> importing -> imported
 *   slice: writing -> closing -> uploading -> uploaded -> imported
 *
 * writing -> closing happens only by rotation (rotateSlice, rotateFile) or closeFile; the sink's
 * writing file and slice are found through the `levelKeys.open` pointer kept with them.
 * A slice in `closing` still accepts the commit of a batch that was in flight when it rotated;
 * from `uploading` on its length is frozen (commitBatch refuses).
 */
import type { Column, SettingValue } from '../model/definition.js';
import type { KeySpace, MetadataStore, MetadataTx } from '../ports/metadata-store.js';
import { retryDelayMs } from './triggers.js';
import { adoptedAt, restartAt, SEEN_EVERYTHING, type SeenOffsets } from '../pipeline/seen-offsets.js';
import { parseInstanceId, sinkInstances } from './instances.js';
import {
  levelKeys,
  localSlicePath,
  sinkPath,
  type ArchivedStatistics,
  type FileEntry,
  type FileKey,
  type FileState,
  type OpenPointer,
  type Retry,
  type SinkKey,
  type SinkRef,
  type SliceEntry,
  type SliceKey,
  type SliceState,
} from '../model/levels.js';

/** A state change or commit that the current state does not allow; nothing was written. */
export class LevelStateError extends Error {
  override name = 'LevelStateError';
}

/** What a new file is opened with: the sink, its table and a snapshot of its mapping and settings. */
export interface NewFile extends SinkRef {
  tableId: string;
  columns: Column[];
  /** Effective settings (defaults, source, sink) in force for the file. */
  settings: SettingValue[];
}

/** One micro-batch appended to the writing (or just rotated, `closing`) slice. */
export interface BatchCommit {
  /** Byte length of the local slice file after the batch (SliceAppender.append's result). */
  uncompressedSize: number;
  /** Records the batch appended to the slice (0 when every record of the batch went elsewhere). */
  recordsCount: number;
  /** Receive times of the batch's first and last written record (ISO). */
  firstRecordAt?: string;
  lastRecordAt?: string;
  /** Log offsets of the batch's first and last written record. */
  firstOffset?: number;
  lastOffset?: number;
  /**
   * The sink's consumer offset after the batch: the last log offset the batch covered, counting
   * records that were not written to this sink (other signal, mapping failure).
   */
  consumerOffset: number;
}

export interface RetentionPolicy {
  /** A file that is not imported (and not writing) expires this long after its last state change. */
  activeFileExpirationMs: number;
  /** An imported file expires this long after its import ... */
  archivedFileExpirationMs: number;
  /** ... but the newest this many imported files of each sink are kept. */
  archivedFileRetentionPerSink: number;
}

/** Reference §17.9: 168 h, 1 h, 30 files. */
export const REFERENCE_RETENTION: RetentionPolicy = {
  activeFileExpirationMs: 168 * 3_600_000,
  archivedFileExpirationMs: 3_600_000,
  archivedFileRetentionPerSink: 30,
};

export interface LevelRepositoryOptions {
  /** Clock for default timestamps (tests). */
  now?: () => Date;
}

const FILE_NEXT: Partial<Record<FileState, FileState>> = { writing: 'closing', closing: 'importing', importing: 'imported' };
const SLICE_NEXT: Partial<Record<SliceState, SliceState>> = {
  writing: 'closing', closing: 'uploading', uploading: 'uploaded', uploaded: 'imported',
};

/**
 * The levels' keys (model.ts levelKeys): a sink instance's files, slices, writing pointer,
 * positions (`offset`, `seen`) and archived statistics stay on its node; the statistics reset
 * markers are shared (a reset on one node counts on every node).
 */
export const LEVEL_KEY_SPACES: readonly KeySpace[] = [
  { prefix: 'storage/file/', shared: false },
  { prefix: 'storage/slice/', shared: false },
  { prefix: 'storage/open/', shared: false },
  { prefix: 'storage/offset/', shared: false },
  { prefix: 'storage/seen/', shared: false },
  { prefix: 'storage/statsArchive/', shared: false },
  { prefix: 'storage/statsReset/', shared: true },
];

export class LevelRepository {
  private readonly now: () => Date;

  constructor(
    private readonly store: MetadataStore,
    options: LevelRepositoryOptions = {},
  ) {
    this.now = options.now ?? (() => new Date());
  }

  // ---- reads ----

  getFile(key: FileKey): FileEntry | undefined {
    return this.store.get<FileEntry>(levelKeys.file(key, key.openedAt));
  }

  getSlice(key: SliceKey): SliceEntry | undefined {
    return this.store.get<SliceEntry>(levelKeys.slice(key, key.fileOpenedAt, key.openedAt));
  }

  /** Files of the sink by openedAt ascending. */
  listFiles(sink: SinkKey): FileEntry[] {
    return this.store.list<FileEntry>(levelKeys.files(sink)).map((e) => e.value);
  }

  /** Slices of a file by openedAt ascending. */
  listSlices(file: FileKey): SliceEntry[] {
    return this.store.list<SliceEntry>(levelKeys.slices(file, file.openedAt)).map((e) => e.value);
  }

  /** Slices of every file of the sink, by file and slice openedAt ascending. */
  listSinkSlices(sink: SinkKey): SliceEntry[] {
    return this.store.list<SliceEntry>(levelKeys.sinkSlices(sink)).map((e) => e.value);
  }

  /** The sink's `writing` file, if it has one. */
  writingFile(sink: SinkKey): FileEntry | undefined {
    const open = this.store.get<OpenPointer>(levelKeys.open(sink));
    return open && this.store.get<FileEntry>(levelKeys.file(sink, open.fileOpenedAt));
  }

  /** The sink's `writing` slice (of its writing file), if it has one. */
  writingSlice(sink: SinkKey): SliceEntry | undefined {
    const open = this.store.get<OpenPointer>(levelKeys.open(sink));
    return open && this.store.get<SliceEntry>(levelKeys.slice(sink, open.fileOpenedAt, open.sliceOpenedAt));
  }

  /** The offsets of its topic the sink has consumed (replay skips them unless they failed). */
  seenOffsets(sink: SinkKey): SeenOffsets {
    return this.store.get<SeenOffsets>(levelKeys.seen(sink)) ?? SEEN_EVERYTHING;
  }

  /** The committed consumer offset of the sink (the last log offset it has processed). */
  consumerOffset(sink: SinkKey): number | undefined {
    return this.store.get<number>(levelKeys.offset(sink));
  }

  /**
   * The last offset through which every record the sink consumed is in the target: before the
   * first record of the oldest file not imported yet, or the consumer offset when all is
   * imported. Cluster mode commits this as the topic's group offset, the point a node taking
   * the sink over reads from.
   */
  importedThrough(sink: SinkKey): number {
    let through = this.consumerOffset(sink) ?? 0;
    const pending = new Set(this.listFiles(sink).filter((f) => f.state !== 'imported').map((f) => f.openedAt));
    if (pending.size === 0) return through;
    for (const slice of this.listSinkSlices(sink)) {
      if (pending.has(slice.fileOpenedAt) && slice.recordsCount > 0 && slice.firstOffset !== undefined) through = Math.min(through, slice.firstOffset - 1);
    }
    return through;
  }

  /**
   * Forgets the sink's files that are not imported (with their slices) and its writing file:
   * this node gave the sink's topic up, or takes it over and reads again from what the target
   * has. Imported files (statistics) stay. Returns the slices, whose local and staged files
   * the caller removes.
   */
  discardUnimported(sink: SinkKey): SliceEntry[] {
    return this.store.transact((tx) => {
      const removed: SliceEntry[] = [];
      for (const { key, value: file } of tx.list<FileEntry>(levelKeys.files(sink))) {
        if (file.state === 'imported') continue;
        for (const e of tx.list<SliceEntry>(levelKeys.slices(sink, file.openedAt))) {
          removed.push(e.value);
          tx.delete(e.key);
        }
        tx.delete(key);
      }
      tx.delete(levelKeys.open(sink));
      return removed;
    });
  }

  /**
   * Forgets one file that is not imported, with its slices (cluster mode: another node claimed
   * its stream and reads its records again). Returns the slices, whose local and staged files
   * the caller removes.
   */
  discardFile(key: FileKey): SliceEntry[] {
    return this.store.transact((tx) => {
      const fileKey = levelKeys.file(key, key.openedAt);
      const file = tx.get<FileEntry>(fileKey);
      if (!file || file.state === 'imported' || file.state === 'writing') return [];
      const removed: SliceEntry[] = [];
      for (const e of tx.list<SliceEntry>(levelKeys.slices(key, key.openedAt))) {
        removed.push(e.value);
        tx.delete(e.key);
      }
      tx.delete(fileKey);
      return removed;
    });
  }

  // ---- sink positions (the `offset` and `seen` keys) ----

  /**
   * The sink instances of a branch that have a position on this node (a consumer offset), in
   * key order: what a purge of deleted sinks looks at.
   */
  positionedSinks(branchId: number): SinkKey[] {
    const prefix = levelKeys.branchOffsets(branchId);
    return this.store.list(prefix).map(({ key }) => {
      const [sourceId, sinkId] = key.slice(prefix.length).split('/');
      return { branchId, sourceId, sinkId };
    });
  }

  /**
   * The sink (re)starts consuming after `start` on this node (created, enabled again, or
   * started with its peers): what it consumed so far becomes seen (restartAt). A sink that
   * has an offset but no seen offsets (older than replay) counts everything as seen.
   */
  startAnewAt(sink: SinkKey, start: number): void {
    const committed = this.consumerOffset(sink);
    const seen = this.store.get<SeenOffsets>(levelKeys.seen(sink)) ?? (committed !== undefined ? SEEN_EVERYTHING : undefined);
    this.store.transact((tx) => {
      tx.put(levelKeys.offset(sink), start);
      tx.put(levelKeys.seen(sink), restartAt(seen, committed, start));
    });
  }

  /**
   * Cluster mode: the sink starts on this node after `start`, having consumed up to
   * `previous` here before (or never); everything up to `start` counts as seen (adoptedAt).
   */
  adoptAt(sink: SinkKey, start: number, previous: number | undefined): void {
    const seen = this.store.get<SeenOffsets>(levelKeys.seen(sink));
    this.store.transact((tx) => {
      tx.put(levelKeys.offset(sink), start);
      tx.put(levelKeys.seen(sink), adoptedAt(seen, previous, start));
    });
  }

  /** Sets the consumer offset when the sink has none yet (where a new sink starts); returns the offset in force. */
  seedConsumerOffset(sink: SinkKey, offset: number): number {
    return this.store.transact((tx) => {
      const current = tx.get<number>(levelKeys.offset(sink));
      if (current !== undefined) return current;
      tx.put(levelKeys.offset(sink), offset);
      return offset;
    });
  }

  // ---- opening and rotation (writing -> closing) ----

  /** Opens the sink's first (or next, after closeFile) file with its first slice. */
  openFile(input: NewFile, at: Date = this.now()): { file: FileEntry; slice: SliceEntry } {
    return this.store.transact((tx) => {
      const sink = sinkKey(input);
      if (tx.get<OpenPointer>(levelKeys.open(sink))) {
        throw new LevelStateError(`sink ${sinkPath(sink)} already has a writing file; rotate it instead`);
      }
      return this.openFileIn(tx, input, at);
    });
  }

  /** Closes the writing slice and opens the next slice of the same file. */
  rotateSlice(sink: SinkKey, at: Date = this.now()): { closed: SliceEntry; opened: SliceEntry } {
    return this.store.transact((tx) => {
      const open = requireOpen(tx, sink);
      const closed = this.closeSliceIn(tx, sink, open, at);
      const opened = this.openSliceIn(tx, { ...sinkRefOf(closed), fileOpenedAt: open.fileOpenedAt }, after(at, closed.openedAt));
      tx.put(levelKeys.open(sink), { fileOpenedAt: open.fileOpenedAt, sliceOpenedAt: opened.openedAt } satisfies OpenPointer);
      return { closed, opened };
    });
  }

  /**
   * Closes the writing file and its writing slice and opens a new file with a new snapshot
   * (mapping, settings, table) and its first slice, atomically (reference §17.6, §17.8).
   */
  rotateFile(input: NewFile, at: Date = this.now()): { closedFile: FileEntry; closedSlice: SliceEntry; file: FileEntry; slice: SliceEntry } {
    return this.store.transact((tx) => {
      const sink = sinkKey(input);
      const { file: closedFile, slice: closedSlice } = this.closeFileIn(tx, sink, requireOpen(tx, sink), at);
      const { file, slice } = this.openFileIn(tx, input, at);
      return { closedFile, closedSlice, file, slice };
    });
  }

  /** Closes the writing file and slice without opening new ones (sink disabled or deleted). */
  closeFile(sink: SinkKey, at: Date = this.now()): { closedFile: FileEntry; closedSlice: SliceEntry } | undefined {
    return this.store.transact((tx) => {
      const open = tx.get<OpenPointer>(levelKeys.open(sink));
      if (!open) return undefined;
      const closed = this.closeFileIn(tx, sink, open, at);
      tx.delete(levelKeys.open(sink));
      return { closedFile: closed.file, closedSlice: closed.slice };
    });
  }

  // ---- the exactly-once commit point ----

  /**
   * Commits a batch: the slice's committed byte length, record count, first/last record time and
   * offsets, and the sink's consumer offset, in one transaction. After a crash the slice file is
   * cut back to the committed length and consumption resumes after the committed offset, so each
   * record is in the slice exactly once. Refuses (writing nothing) when the slice is past
   * `closing`, the length shrinks, or offsets go back (the batch would be counted twice).
   */
  commitBatch(key: SliceKey, batch: BatchCommit): SliceEntry {
    if (!Number.isSafeInteger(batch.recordsCount) || batch.recordsCount < 0) {
      throw new LevelStateError(`invalid recordsCount ${batch.recordsCount}`);
    }
    return this.store.transact((tx) => {
      const sliceKey = levelKeys.slice(key, key.fileOpenedAt, key.openedAt);
      const slice = tx.get<SliceEntry>(sliceKey);
      if (!slice) throw new LevelStateError(`slice ${sliceLabel(key)} does not exist`);
      if (slice.state !== 'writing' && slice.state !== 'closing') {
        throw new LevelStateError(`slice ${sliceLabel(key)} is ${slice.state}; a batch can only be committed to a writing or closing slice`);
      }
      if (!Number.isSafeInteger(batch.uncompressedSize) || batch.uncompressedSize < slice.uncompressedSize) {
        throw new LevelStateError(
          `slice ${sliceLabel(key)} has ${slice.uncompressedSize} committed bytes; a batch cannot commit ${batch.uncompressedSize}`);
      }
      if (batch.recordsCount > 0 && batch.uncompressedSize === slice.uncompressedSize) {
        throw new LevelStateError(`a batch of ${batch.recordsCount} records must add bytes to slice ${sliceLabel(key)}`);
      }
      const offsetKey = levelKeys.offset(key);
      const previous = tx.get<number>(offsetKey) ?? 0;
      if (batch.firstOffset !== undefined && batch.firstOffset <= previous) {
        throw new LevelStateError(
          `batch starts at offset ${batch.firstOffset} but sink ${sinkPath(key)} already committed offset ${previous}`);
      }
      const covered = Math.max(batch.lastOffset ?? 0, batch.firstOffset ?? 0);
      if (batch.consumerOffset < previous || batch.consumerOffset < covered) {
        throw new LevelStateError(
          `consumer offset ${batch.consumerOffset} of sink ${sinkPath(key)} is behind ${Math.max(previous, covered)}`);
      }
      const updated: SliceEntry = compact({
        ...slice,
        uncompressedSize: batch.uncompressedSize,
        recordsCount: slice.recordsCount + batch.recordsCount,
        firstRecordAt: minIso(slice.firstRecordAt, batch.firstRecordAt),
        lastRecordAt: maxIso(slice.lastRecordAt, batch.lastRecordAt),
        firstOffset: slice.firstOffset ?? batch.firstOffset,
        lastOffset: batch.lastOffset ?? slice.lastOffset,
      });
      tx.put(sliceKey, updated);
      tx.put(offsetKey, batch.consumerOffset);
      return updated;
    });
  }

  // ---- later states ----

  /** Slice closing -> uploading: its length is frozen from now on. */
  sliceUploading(key: SliceKey, at: Date = this.now()): SliceEntry {
    return this.store.transact((tx) => this.advanceSlice(tx, key, 'uploading', { uploadingAt: iso(at) }));
  }

  /** Slice uploading -> uploaded with its staged file (stageSlice's result). */
  sliceUploaded(key: SliceKey, staged: { stagingPath: string; compressedSize: number }, at: Date = this.now()): SliceEntry {
    return this.store.transact((tx) =>
      this.advanceSlice(tx, key, 'uploaded', { uploadedAt: iso(at), stagingPath: staged.stagingPath, compressedSize: staged.compressedSize }));
  }

  /** File closing -> importing; every slice of the file must be uploaded. */
  fileImporting(key: FileKey, at: Date = this.now()): FileEntry {
    return this.store.transact((tx) => {
      const pending = tx.list<SliceEntry>(levelKeys.slices(key, key.openedAt)).filter((e) => e.value.state !== 'uploaded');
      if (pending.length > 0) {
        throw new LevelStateError(`file ${fileLabel(key)} has ${pending.length} slice(s) not uploaded yet ` +
          `(first: ${pending[0].value.openedAt}, ${pending[0].value.state})`);
      }
      return this.advanceFile(tx, key, 'importing', { importingAt: iso(at) });
    });
  }

  /** File importing -> imported, and all its slices uploaded -> imported, in one transaction. */
  fileImported(key: FileKey, at: Date = this.now()): { file: FileEntry; slices: SliceEntry[] } {
    return this.store.transact((tx) => {
      const file = this.advanceFile(tx, key, 'imported', { importedAt: iso(at) });
      const slices = tx.list<SliceEntry>(levelKeys.slices(key, key.openedAt)).map((e) =>
        this.advanceSlice(tx, e.value, 'imported', { importedAt: iso(at) }));
      return { file, slices };
    });
  }

  // ---- retries ----

  /**
   * Records a failed upload (slice) or import (file): attempt + 1, reason, first and last failure
   * time, and when to retry (default: now + the reference backoff of the new attempt). The state
   * does not change; the next successful state change clears the retry fields.
   */
  markFailed<E extends FileEntry | SliceEntry>(entry: E, reason: string, retryAfter?: Date | string, at: Date = this.now()): E {
    return this.store.transact((tx) => {
      const key = 'fileOpenedAt' in entry
        ? levelKeys.slice(entry, entry.fileOpenedAt, entry.openedAt)
        : levelKeys.file(entry, entry.openedAt);
      const current = tx.get<E>(key);
      if (!current) throw new LevelStateError(`${key} does not exist`);
      const attempt = (current.retryAttempt ?? 0) + 1;
      const after = retryAfter ?? new Date(at.getTime() + retryDelayMs(attempt));
      const updated = {
        ...current,
        retryAttempt: attempt,
        retryReason: reason,
        firstFailedAt: current.firstFailedAt ?? iso(at),
        lastFailedAt: iso(at),
        retryAfter: typeof after === 'string' ? after : iso(after),
      };
      tx.put(key, updated);
      return updated;
    });
  }

  // ---- retention (reference §17.9) ----

  /**
   * Forgets everything stored about a sink's data (the sink was deleted for good): files,
   * slices, the consumer offset and statistics, of the sink and of all its partition instances
   * (instances.ts), in one transaction. Given an instance id, only that instance. Returns the
   * slices (their sinkId is the instance id), whose local and staged files the caller removes.
   */
  purgeSink(sink: SinkKey): SliceEntry[] {
    return this.store.transact((tx) => {
      const slices: SliceEntry[] = [];
      for (const instance of sinkInstances(tx, sink)) {
        for (const e of tx.list<SliceEntry>(levelKeys.sinkSlices(instance))) {
          slices.push(e.value);
          tx.delete(e.key);
        }
        for (const e of tx.list(levelKeys.files(instance))) tx.delete(e.key);
        tx.delete(levelKeys.offset(instance));
        tx.delete(levelKeys.seen(instance));
        tx.delete(levelKeys.open(instance));
        tx.delete(levelKeys.statsArchive(instance));
      }
      // The reset marker is kept per sink, not per instance.
      tx.delete(levelKeys.statsReset(sink.branchId, sink.sourceId, sink.sinkId));
      return slices;
    });
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
          archive(tx, file, slices.map((e) => e.value));
        }
        for (const s of slices) tx.delete(s.key);
        tx.delete(fileKey);
        deletedFiles.push(current);
        deletedSlices.push(...slices.map((e) => e.value));
      });
    }
    return { files: deletedFiles, slices: deletedSlices };
  }

  // ---- internals (run inside a transaction) ----

  private openFileIn(tx: MetadataTx, input: NewFile, at: Date): { file: FileEntry; slice: SliceEntry } {
    const sink = sinkKey(input);
    const files = tx.list<FileEntry>(levelKeys.files(sink));
    const openedAt = after(at, files.length > 0 ? files[files.length - 1].value.openedAt : undefined);
    const file: FileEntry = {
      projectId: input.projectId, branchId: input.branchId, sourceId: input.sourceId, sinkId: input.sinkId,
      openedAt, state: 'writing', tableId: input.tableId, columns: input.columns, settings: input.settings,
    };
    tx.put(levelKeys.file(sink, openedAt), file);
    const slice = this.openSliceIn(tx, { ...sinkRefOf(file), fileOpenedAt: openedAt }, openedAt);
    tx.put(levelKeys.open(sink), { fileOpenedAt: openedAt, sliceOpenedAt: slice.openedAt } satisfies OpenPointer);
    return { file, slice };
  }

  private openSliceIn(tx: MetadataTx, ref: SinkRef & { fileOpenedAt: string }, openedAt: string): SliceEntry {
    const key: SliceKey = { branchId: ref.branchId, sourceId: ref.sourceId, sinkId: ref.sinkId, fileOpenedAt: ref.fileOpenedAt, openedAt };
    const slice: SliceEntry = {
      projectId: ref.projectId, ...key, state: 'writing', localPath: localSlicePath(key),
      uncompressedSize: 0, compressedSize: 0, recordsCount: 0,
    };
    const k = levelKeys.slice(key, key.fileOpenedAt, openedAt);
    if (tx.get(k)) throw new LevelStateError(`slice ${sliceLabel(key)} already exists`);
    tx.put(k, slice);
    return slice;
  }

  private closeSliceIn(tx: MetadataTx, sink: SinkKey, open: OpenPointer, at: Date): SliceEntry {
    return this.advanceSlice(tx, { ...sink, fileOpenedAt: open.fileOpenedAt, openedAt: open.sliceOpenedAt }, 'closing', { closingAt: iso(at) });
  }

  private closeFileIn(tx: MetadataTx, sink: SinkKey, open: OpenPointer, at: Date): { file: FileEntry; slice: SliceEntry } {
    const slice = this.closeSliceIn(tx, sink, open, at);
    const file = this.advanceFile(tx, { ...sink, openedAt: open.fileOpenedAt }, 'closing', { closingAt: iso(at) });
    return { file, slice };
  }

  private advanceFile(tx: MetadataTx, key: FileKey, to: FileState, fields: Partial<FileEntry>): FileEntry {
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

  private advanceSlice(tx: MetadataTx, key: SliceKey, to: SliceState, fields: Partial<SliceEntry>): SliceEntry {
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
}

// ---- helpers ----

function requireOpen(tx: MetadataTx, sink: SinkKey): OpenPointer {
  const open = tx.get<OpenPointer>(levelKeys.open(sink));
  if (!open) throw new LevelStateError(`sink ${sinkPath(sink)} has no writing file`);
  return open;
}

function archive(tx: MetadataTx, sink: SinkKey, slices: SliceEntry[]): void {
  const key = levelKeys.statsArchive(sink);
  // An archive from before the sink's last statistics reset is hidden (another node may have
  // cleared it): it starts again. Files opened before the reset are hidden too.
  const reset = resetMarker(tx, sink);
  const previous = tx.get<ArchivedStatistics>(key);
  const sum: ArchivedStatistics = previous && (previous.reset ?? '') === reset ? previous : { recordsCount: 0, compressedSize: 0, uncompressedSize: 0 };
  if (reset !== '') sum.reset = reset;
  for (const s of slices) {
    if (s.recordsCount === 0 || s.fileOpenedAt <= reset) continue;
    sum.recordsCount += s.recordsCount;
    sum.compressedSize += s.compressedSize;
    sum.uncompressedSize += s.uncompressedSize;
    sum.firstRecordAt = minIso(sum.firstRecordAt, s.firstRecordAt);
    sum.lastRecordAt = maxIso(sum.lastRecordAt, s.lastRecordAt);
  }
  tx.put(key, compact(sum));
}

/** The sink's effective statistics reset time ('' when never reset). */
export function resetMarker(reader: { get<T>(key: string): T | undefined }, sink: SinkKey): string {
  const source = reader.get<string>(levelKeys.statsReset(sink.branchId, sink.sourceId)) ?? '';
  // A sink's marker applies to all its partition instances (`sink` may be one: retention's files).
  const own = reader.get<string>(levelKeys.statsReset(sink.branchId, sink.sourceId, parseInstanceId(sink.sinkId).sinkId)) ?? '';
  return source > own ? source : own;
}

/** ISO time of `at`, moved 1 ms past `previous` when not later (ids of a sink's files and a file's slices stay unique and ordered). */
function after(at: Date, previous: string | undefined): string {
  const t = iso(at);
  if (previous === undefined || t > previous) return t;
  return iso(new Date(Date.parse(previous) + 1));
}

function lastStateChange(f: FileEntry): string {
  return [f.openedAt, f.closingAt, f.importingAt, f.importedAt].reduce<string>((a, b) => (b !== undefined && b > a ? b : a), '');
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

/** Drops undefined properties (the store keeps only present fields). */
function compact<T extends object>(value: T): T {
  for (const k of Object.keys(value) as (keyof T)[]) if (value[k] === undefined) delete value[k];
  return value;
}

export function minIso(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return b < a ? b : a;
}

export function maxIso(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return b > a ? b : a;
}

function iso(d: Date): string {
  return d.toISOString();
}

function cmp(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

function sinkKey(r: SinkKey): SinkKey {
  return { branchId: r.branchId, sourceId: r.sourceId, sinkId: r.sinkId };
}

function sinkRefOf(e: SinkRef): SinkRef {
  return { projectId: e.projectId, branchId: e.branchId, sourceId: e.sourceId, sinkId: e.sinkId };
}

function sameSink(a: SinkKey, b: SinkKey): boolean {
  return a.branchId === b.branchId && a.sourceId === b.sourceId && a.sinkId === b.sinkId;
}


function fileLabel(f: FileKey): string {
  return `${sinkPath(f)}/${f.openedAt}`;
}

function sliceLabel(s: SliceKey): string {
  return `${sinkPath(s)}/${s.fileOpenedAt}/${s.openedAt}`;
}
