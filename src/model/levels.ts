/**
 * Storage levels of a sink's data: a *file* is one import into the table; it
 * is made of *slices*, each one upload from local disk to staging. States:
 *   file:  writing -> closing -> importing -> imported
 *   slice: writing -> closing -> uploading -> uploaded -> imported
 * Statistics levels: local = writing/closing/uploading slices, staging = uploaded,
 * target = imported. Both are kept in the metadata store under the keys below.
 */
import { join } from 'node:path';
import type { Column, MappingFilter, SettingValue } from './definition.js';

export type FileState = 'writing' | 'closing' | 'importing' | 'imported';
export type SliceState = 'writing' | 'closing' | 'uploading' | 'uploaded' | 'imported';

export interface Retry {
  retryAttempt?: number;
  retryReason?: string;
  firstFailedAt?: string;
  lastFailedAt?: string;
  retryAfter?: string;
}

export interface SinkRef {
  projectId: number;
  branchId: number;
  sourceId: string;
  sinkId: string;
}

/** A sink within the process's project (keys leave the project id out). */
export type SinkKey = Omit<SinkRef, 'projectId'>;

/**
 * A sink (or sink instance) as `<branchId>/<sourceId>/<sinkId>`: the runtime's writer keys, log
 * fields, and the names of the sinks' positions in the target.
 */
export function sinkPath(sink: SinkKey): string {
  return `${sink.branchId}/${sink.sourceId}/${sink.sinkId}`;
}

export interface FileKey extends SinkKey {
  openedAt: string;
}

export interface SliceKey extends SinkKey {
  fileOpenedAt: string;
  openedAt: string;
}

export interface FileEntry extends SinkRef, Retry {
  /** ISO time; also the file's id within the sink. */
  openedAt: string;
  state: FileState;
  closingAt?: string;
  importingAt?: string;
  importedAt?: string;
  tableId: string;
  /** The mapping and effective settings the file was opened with (changes apply to new files). */
  columns: Column[];
  /** The sink's record filter the file was opened with (absent: none, every record is mapped). */
  filter?: MappingFilter;
  settings: SettingValue[];
}

export interface SliceEntry extends SinkRef, Retry {
  fileOpenedAt: string;
  /** ISO time; also the slice's id within the file. */
  openedAt: string;
  state: SliceState;
  closingAt?: string;
  uploadingAt?: string;
  uploadedAt?: string;
  importedAt?: string;
  /** Local CSV file (no header), relative to the data directory. */
  localPath: string;
  /** Staged gzip file, relative to the data directory (set once uploaded). */
  stagingPath?: string;
  /** Committed length of the local CSV: bytes beyond it are from an uncommitted batch. */
  uncompressedSize: number;
  /**
   * Size of the staged gzip (0 until uploaded: Sluice's local slices are plain CSV). A local
   * slice loaded from elsewhere (the reference's statistics) may carry its compressed size; the
   * statistics count it when it is set.
   */
  compressedSize: number;
  recordsCount: number;
  firstRecordAt?: string;
  lastRecordAt?: string;
  /** Log offsets of the source topic covered by this slice. */
  firstOffset?: number;
  lastOffset?: number;
  /**
   * Set on a slice whose statistics were never recorded (state loaded from elsewhere: the
   * reference kept no statistics key for it); its counts are zeros, not counted records. Absent
   * on every slice Sluice opens: its statistics exist from its opening, records or not. A file
   * with no slice but such slices has no statistics (the files listing leaves them out).
   */
  noStatistics?: true;
}

/**
 * The levels' metadata keys. Their root `storage/` is the reference's etcd layout (its
 * `storage/file/...`, `storage/slice/...`), which the conformance fixtures read: a stored name,
 * kept; in the code the levels are "levels", and "storage" is the Storage API.
 */
export const levelKeys = {
  files: (r: Omit<SinkRef, 'projectId'>) => `storage/file/${r.branchId}/${r.sourceId}/${r.sinkId}/`,
  file: (r: Omit<SinkRef, 'projectId'>, openedAt: string) => `storage/file/${r.branchId}/${r.sourceId}/${r.sinkId}/${openedAt}`,
  slices: (r: Omit<SinkRef, 'projectId'>, fileOpenedAt: string) => `storage/slice/${r.branchId}/${r.sourceId}/${r.sinkId}/${fileOpenedAt}/`,
  slice: (r: Omit<SinkRef, 'projectId'>, fileOpenedAt: string, openedAt: string) =>
    `storage/slice/${r.branchId}/${r.sourceId}/${r.sinkId}/${fileOpenedAt}/${openedAt}`,
  /** Committed consumer offset of the sink in its source topic. */
  offset: (r: Omit<SinkRef, 'projectId'>) => `storage/offset/${r.branchId}/${r.sourceId}/${r.sinkId}`,
  /** The consumer offsets of every sink instance of a branch. */
  branchOffsets: (branchId: number) => `storage/offset/${branchId}/`,
  /** The offsets the sink has consumed ({@link SeenOffsets}); absent for sinks older than replay. */
  seen: (r: Omit<SinkRef, 'projectId'>) => `storage/seen/${r.branchId}/${r.sourceId}/${r.sinkId}`,
  /** Every slice of a sink, of all its files (one range scan for statistics). */
  sinkSlices: (r: Omit<SinkRef, 'projectId'>) => `storage/slice/${r.branchId}/${r.sourceId}/${r.sinkId}/`,
  /** The sink's writing file and slice ({@link OpenPointer}); absent while the sink has no writing file. */
  open: (r: Omit<SinkRef, 'projectId'>) => `storage/open/${r.branchId}/${r.sourceId}/${r.sinkId}`,
  /** Statistics reset marker (ISO time) of a source (all its sinks) or of one sink. */
  statsReset: (branchId: number, sourceId: string, sinkId?: string) =>
    sinkId === undefined ? `storage/statsReset/${branchId}/${sourceId}` : `storage/statsReset/${branchId}/${sourceId}/${sinkId}`,
  /**
   * Target-level statistics of imported files whose entries were deleted by retention
   * ({@link ArchivedStatistics}), so that a sink's totals survive the cleanup.
   */
  statsArchive: (r: Omit<SinkRef, 'projectId'>) => `storage/statsArchive/${r.branchId}/${r.sourceId}/${r.sinkId}`,
  statsArchives: (branchId: number, sourceId: string) => `storage/statsArchive/${branchId}/${sourceId}/`,
};

/** Value of `levelKeys.open`. */
export interface OpenPointer {
  fileOpenedAt: string;
  sliceOpenedAt: string;
}

/** Value of `levelKeys.statsArchive`. */
export interface ArchivedStatistics {
  /** The sink's statistics reset marker when the archive was started (absent: never reset). */
  reset?: string;
  recordsCount: number;
  compressedSize: number;
  uncompressedSize: number;
  firstRecordAt?: string;
  lastRecordAt?: string;
}

// The names of a slice's files: the local level's layout, which the staged objects repeat.

/** An ISO time as a file or directory name: "2000-01-01T02:00:00.000Z" -> "2000-01-01T02-00-00-000Z". */
export function fsTime(iso: string): string {
  return iso.replace(/[:.]/g, '-');
}

/** Directory of a slice relative to the level root: "<branchId>/<sourceId>/<sinkId>/<fileOpenedAt>". */
export function sliceDir(slice: SliceKey): string {
  return join(String(slice.branchId), slice.sourceId, slice.sinkId, fsTime(slice.fileOpenedAt));
}

/** The local CSV of a slice, relative to the data directory. */
export function localSlicePath(slice: SliceKey): string {
  return join('local', sliceDir(slice), `${fsTime(slice.openedAt)}.csv`);
}

/**
 * The name of a slice's staged object: "staging/<branchId>/<sourceId>/<sinkId>/<fileOpenedAt>/
 * <openedAt>.csv.gz" (the local level's layout). Stored as SliceEntry.stagingPath; the local
 * directory adapter keeps the object at this path under the data directory.
 */
export function stagingSlicePath(slice: SliceKey): string {
  return join('staging', sliceDir(slice), `${fsTime(slice.openedAt)}.csv.gz`);
}

// The limits every sink's triggers obey (levels/triggers.ts), and their defaults (config.ts).

/** Fixed limits of the reference, configurable for tests and operators. */
export interface LevelLimits {
  /** A slice younger than this is never uploaded (reference: 10 s). */
  uploadMinIntervalMs: number;
  /** A file younger than this is never imported, unless it has maxSlices slices (reference: 60 s). */
  importMinIntervalMs: number;
  /** A file with this many slices is imported at once, before every other check (reference: 100). */
  maxSlices: number;
}

export const REFERENCE_LIMITS: LevelLimits = { uploadMinIntervalMs: 10_000, importMinIntervalMs: 60_000, maxSlices: 100 };

/**
 * Sluice's defaults: the floors are the settings' own minima (upload interval 1s, import
 * interval 30s), so every value the API accepts is honoured as written. The reference's fixed
 * 10s/60s silently lengthened a valid 30s import interval to 60s; an operator who wants them
 * sets --upload-min-interval 10s --import-min-interval 60s, and the settings answer shows it.
 */
export const DEFAULT_LIMITS: LevelLimits = { uploadMinIntervalMs: 1_000, importMinIntervalMs: 30_000, maxSlices: 100 };
