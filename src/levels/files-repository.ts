/**
 * The files and slices of sinks in the metadata store (the shapes in model/levels.ts), with their
 * state machine (file-states.ts). Every method that writes runs in exactly one `transact`, so
 * each state change, rotation and batch commit is atomic and durable when the method returns.
 * The repository does no file I/O.
 *
 * writing -> closing happens only by rotation (rotateSlice, rotateFile) or closeFile; the sink's
 * writing file and slice are found through the `levelKeys.open` pointer kept with them.
 * A slice in `closing` still accepts the commit of a batch that was in flight when it rotated;
 * from `uploading` on its length is frozen (commitBatch refuses).
 */
import type { Column, MappingFilter, SettingValue } from '../model/definition.js';
import type { KeySpace, MetadataStore, MetadataTx } from '../ports/metadata-store.js';
import { retryDelayMs } from './triggers.js';
import {
  levelKeys,
  localSlicePath,
  sinkPath,
  type FileEntry,
  type FileKey,
  type OpenPointer,
  type SinkKey,
  type SinkRef,
  type SliceEntry,
  type SliceKey,
} from '../model/levels.js';
import { advanceFile, advanceSlice, fileLabel, LevelStateError, sliceLabel } from './file-states.js';
import { consumerOffsetIn, setConsumerOffsetIn } from './positions.js';
import { after, compact, iso, maxIso, minIso } from './stored-values.js';

/** What a new file is opened with: the sink, its table and a snapshot of its mapping and settings. */
export interface NewFile extends SinkRef {
  tableId: string;
  columns: Column[];
  /** The sink's record filter, if it has one. */
  filter?: MappingFilter;
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

export interface FilesRepositoryOptions {
  /** Clock for default timestamps (tests). */
  now?: () => Date;
}

/**
 * A sink instance's files, slices and writing pointer stay on its node (cluster mode: the
 * partition's owner imports what it wrote; a node taking a sink over reads it again).
 */
export const LEVEL_FILE_KEY_SPACES: readonly KeySpace[] = [
  { prefix: 'storage/file/', shared: false },
  { prefix: 'storage/slice/', shared: false },
  { prefix: 'storage/open/', shared: false },
];

export class FilesRepository {
  private readonly now: () => Date;

  constructor(
    private readonly store: MetadataStore,
    options: FilesRepositoryOptions = {},
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
   * (mapping, settings, table) and its first slice, atomically.
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
      const previous = consumerOffsetIn(tx, key) ?? 0;
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
      setConsumerOffsetIn(tx, key, batch.consumerOffset);
      return updated;
    });
  }

  // ---- later states ----

  /** Slice closing -> uploading: its length is frozen from now on. */
  sliceUploading(key: SliceKey, at: Date = this.now()): SliceEntry {
    return this.store.transact((tx) => advanceSlice(tx, key, 'uploading', { uploadingAt: iso(at) }));
  }

  /** Slice uploading -> uploaded with its staged file (stageSlice's result). */
  sliceUploaded(key: SliceKey, staged: { stagingPath: string; compressedSize: number }, at: Date = this.now()): SliceEntry {
    return this.store.transact((tx) =>
      advanceSlice(tx, key, 'uploaded', { uploadedAt: iso(at), stagingPath: staged.stagingPath, compressedSize: staged.compressedSize }));
  }

  /** File closing -> importing; every slice of the file must be uploaded. */
  fileImporting(key: FileKey, at: Date = this.now()): FileEntry {
    return this.store.transact((tx) => {
      const pending = tx.list<SliceEntry>(levelKeys.slices(key, key.openedAt)).filter((e) => e.value.state !== 'uploaded');
      if (pending.length > 0) {
        throw new LevelStateError(`file ${fileLabel(key)} has ${pending.length} slice(s) not uploaded yet ` +
          `(first: ${pending[0].value.openedAt}, ${pending[0].value.state})`);
      }
      return advanceFile(tx, key, 'importing', { importingAt: iso(at) });
    });
  }

  /** File importing -> imported, and all its slices uploaded -> imported, in one transaction. */
  fileImported(key: FileKey, at: Date = this.now()): { file: FileEntry; slices: SliceEntry[] } {
    return this.store.transact((tx) => {
      const file = advanceFile(tx, key, 'imported', { importedAt: iso(at) });
      const slices = tx.list<SliceEntry>(levelKeys.slices(key, key.openedAt)).map((e) =>
        advanceSlice(tx, e.value, 'imported', { importedAt: iso(at) }));
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

  // ---- internals (run inside a transaction) ----

  private openFileIn(tx: MetadataTx, input: NewFile, at: Date): { file: FileEntry; slice: SliceEntry } {
    const sink = sinkKey(input);
    const files = tx.list<FileEntry>(levelKeys.files(sink));
    const openedAt = after(at, files.length > 0 ? files[files.length - 1].value.openedAt : undefined);
    const file: FileEntry = {
      projectId: input.projectId, branchId: input.branchId, sourceId: input.sourceId, sinkId: input.sinkId,
      openedAt, state: 'writing', tableId: input.tableId, columns: input.columns, settings: input.settings,
      ...(input.filter ? { filter: input.filter } : {}),
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
    return advanceSlice(tx, { ...sink, fileOpenedAt: open.fileOpenedAt, openedAt: open.sliceOpenedAt }, 'closing', { closingAt: iso(at) });
  }

  private closeFileIn(tx: MetadataTx, sink: SinkKey, open: OpenPointer, at: Date): { file: FileEntry; slice: SliceEntry } {
    const slice = this.closeSliceIn(tx, sink, open, at);
    const file = advanceFile(tx, { ...sink, openedAt: open.fileOpenedAt }, 'closing', { closingAt: iso(at) });
    return { file, slice };
  }
}

// ---- helpers ----

/**
 * Forgets a sink instance's files, slices and writing pointer inside the caller's transaction
 * (purge.ts: the sink was deleted for good). Returns the slices, whose local and staged files
 * the caller removes.
 */
export function forgetFilesIn(tx: MetadataTx, instance: SinkKey): SliceEntry[] {
  const slices: SliceEntry[] = [];
  for (const e of tx.list<SliceEntry>(levelKeys.sinkSlices(instance))) {
    slices.push(e.value);
    tx.delete(e.key);
  }
  for (const e of tx.list(levelKeys.files(instance))) tx.delete(e.key);
  tx.delete(levelKeys.open(instance));
  return slices;
}

function requireOpen(tx: MetadataTx, sink: SinkKey): OpenPointer {
  const open = tx.get<OpenPointer>(levelKeys.open(sink));
  if (!open) throw new LevelStateError(`sink ${sinkPath(sink)} has no writing file`);
  return open;
}

function sinkKey(r: SinkKey): SinkKey {
  return { branchId: r.branchId, sourceId: r.sourceId, sinkId: r.sinkId };
}

function sinkRefOf(e: SinkRef): SinkRef {
  return { projectId: e.projectId, branchId: e.branchId, sourceId: e.sourceId, sinkId: e.sinkId };
}
