import type { MetadataStore } from '../ports/metadata-store.js';
import { resetMarker } from '../levels/statistics-archive.js';
import { maxIso, minIso } from '../levels/stored-values.js';
import { sinkInstances } from '../levels/instances.js';
import { filteredCount } from './filtered-counts.js';
import { levelKeys, type ArchivedStatistics, type FileEntry, type SinkKey, type SliceEntry, type SliceState } from '../model/levels.js';

import type { FileStatistics, Level, LevelStatistics, SinkStatisticsTotal } from '../contract/statistics.js';

/** The answers' shapes are the API contract's (src/contract/statistics.ts). */
export type { FileStatistics, Level, LevelStatistics, SinkStatisticsTotal };

/**
 * One cluster node's part of a sink's statistics, as it publishes it for the others
 * (cluster-statistics.ts): its files after the reset marker it knew, with per-level counts.
 */
export interface NodeSinkStatistics {
  /** The node process that published it (its liveness decides what of it counts). */
  node: string;
  /** The reset marker the node had applied (files opened before it are not in `files`). */
  reset: string;
  files: PeerFile[];
  /** Target statistics of its imported files that retention deleted. */
  archived?: LevelStatistics;
  /** Records the sink's filter skipped on the node since the reset (filtered-counts.ts); absent: none. */
  filtered?: number;
}

/** A file of a node's part: its view and its per-level counts. */
export type PeerFile = Omit<FileStatistics, 'statistics'> & {
  levels: Partial<Record<Level, LevelStatistics>>;
  /** The file has no statistics (none recorded for its slices); absent: it has (older nodes never send it). */
  noStatistics?: true;
};

/** The files of a peer's part that count: those opened after the reader's reset marker. */
function peerFiles(peer: NodeSinkStatistics, reset: string): PeerFile[] {
  return peer.files.filter((f) => f.openedAt > reset);
}

/** A peer's file as a file of a listing, with its counts unless it has no statistics. */
function peerListed({ levels, noStatistics, ...file }: PeerFile): { file: FileStatistics; acc: Accumulator | undefined } {
  return { file, acc: noStatistics ? undefined : new Accumulator().addLevels(levels) };
}

/** Files the aggregation endpoint shows per sink (the reference's RecentFilesLimit). */
export const RECENT_FILES_LIMIT = 50;

/** Statistics level of a slice state. */
const LEVEL_OF: Record<SliceState, Level> = {
  writing: 'local', closing: 'local', uploading: 'local', uploaded: 'staging', imported: 'target',
};
const LEVELS: Level[] = ['local', 'staging', 'target'];

/**
 * Statistics of sinks by storage level, computed from the slice entries of the
 * record's path: local = writing/closing/uploading slices, staging = uploaded, target = imported,
 * plus the archived target statistics of imported files that retention deleted. Local slices
 * are uncompressed, so their compressed size is their byte length; a staged or imported slice
 * counts its gzip size. Clearing records a reset marker: files opened before it (or at the same millisecond) are hidden
 * (a source's marker applies to all its sinks) and archived statistics are dropped.
 *
 * A sink of a multi-partition topic keeps its data under one instance id per partition
 * (levels/instances.ts); a sink's statistics cover all its instances, and its reset marker
 * (kept under the plain sink id) applies to all of them.
 */
export class StatisticsService {
  private readonly now: () => Date;
  private readonly peers: (sink: SinkKey) => readonly NodeSinkStatistics[];

  constructor(
    private readonly store: MetadataStore,
    options: {
      now?: () => Date;
      /** Cluster mode: what the other nodes published of the sink (cluster-statistics.ts). */
      peers?: (sink: SinkKey) => readonly NodeSinkStatistics[];
    } = {},
  ) {
    this.now = options.now ?? (() => new Date());
    this.peers = options.peers ?? (() => []);
  }

  sinkTotal(branchId: number, sourceId: string, sinkId: string): SinkStatisticsTotal {
    const sink: SinkKey = { branchId, sourceId, sinkId };
    const reset = resetMarker(this.store, sink);
    const acc = new Accumulator();
    for (const instance of sinkInstances(this.store, sink)) {
      for (const slice of this.visibleSlices(instance, reset)) acc.add(slice);
      const archived = this.archive(instance, reset);
      if (archived) acc.addLevel('target', archived);
    }
    for (const peer of this.peers(sink)) {
      for (const f of peerFiles(peer, reset)) acc.addLevels(f.levels);
      if (peer.archived && peer.reset >= reset) acc.addLevel('target', peer.archived);
    }
    return acc.result();
  }

  /**
   * Records the sink's filter skipped since its statistics were last reset, on every node (the
   * total answer's `filtered`, a Sluice addition). A peer's count from before the reset it has
   * not applied yet is left out, as its archive is.
   */
  sinkFiltered(branchId: number, sourceId: string, sinkId: string): number {
    const sink: SinkKey = { branchId, sourceId, sinkId };
    const reset = resetMarker(this.store, sink);
    let count = filteredCount(this.store, sink);
    for (const peer of this.peers(sink)) if (peer.filtered && peer.reset >= reset) count += peer.filtered;
    return count;
  }

  /**
   * This node's part of a sink's statistics (all its instances here), for the other cluster
   * nodes: its files after the reset marker with their per-level counts, and its archive.
   */
  nodeSinkStatistics(sink: SinkKey, node: string): NodeSinkStatistics {
    const reset = resetMarker(this.store, sink);
    let archived: Accumulator | undefined;
    for (const instance of sinkInstances(this.store, sink)) {
      const a = this.archive(instance, reset);
      if (a) (archived ??= new Accumulator()).addLevel('target', a);
    }
    const files = this.localFiles(sink, reset, true).map(({ file, acc }): PeerFile => {
      const published: PeerFile = { ...fileView(file), levels: acc?.result().levels ?? {} };
      if (!acc) published.noStatistics = true;
      return published;
    });
    const out: NodeSinkStatistics = { node, reset, files };
    const target = archived?.result().levels.target;
    if (target) out.archived = target;
    const filtered = filteredCount(this.store, sink);
    if (filtered > 0) out.filtered = filtered;
    return out;
  }

  /**
   * Files of the sink (of all its instances) opened after the reset marker: imported first, then
   * files without retryReason, then by openedAt. `failedOnly`: only files that are not imported
   * and have failed at least once.
   */
  sinkFiles(branchId: number, sourceId: string, sinkId: string, failedOnly: boolean): FileStatistics[] {
    const sink: SinkKey = { branchId, sourceId, sinkId };
    const reset = resetMarker(this.store, sink);
    // The failed-files listing shows no statistics: the slices are not read for it.
    const files: Array<{ file: FileStatistics; acc: Accumulator | undefined }> = this.localFiles(sink, reset, !failedOnly)
      .map(({ file, acc }) => ({ file: fileView(file), acc }));
    for (const peer of this.peers(sink)) {
      for (const f of peerFiles(peer, reset)) files.push(peerListed(f));
    }
    const shown = failedOnly ? files.filter(({ file }) => file.state !== 'imported' && (file.retryAttempt ?? 0) > 0) : files;
    // Stable: files of two instances opened at the same time stay in instance order.
    shown.sort((a, b) => fileOrder(a.file, b.file));
    if (failedOnly) return shown.map(({ file }) => file);
    return shown.map(({ file, acc }) => withStatistics(file, acc));
  }

  /**
   * The sink's most recent files (of all its instances) opened after the reset marker, newest
   * first, at most `limit` (the reference's aggregation endpoint: its 50 latest files).
   */
  recentFiles(branchId: number, sourceId: string, sinkId: string, limit = RECENT_FILES_LIMIT): FileStatistics[] {
    const sink: SinkKey = { branchId, sourceId, sinkId };
    const reset = resetMarker(this.store, sink);
    const files: Array<{ file: FileStatistics; acc: Accumulator | undefined }> = this.localFiles(sink, reset, true)
      .map(({ file, acc }) => ({ file: fileView(file), acc }));
    for (const peer of this.peers(sink)) {
      for (const f of peerFiles(peer, reset)) files.push(peerListed(f));
    }
    // Stable: files of two instances opened at the same time stay in instance order.
    files.sort((a, b) => (a.file.openedAt > b.file.openedAt ? -1 : a.file.openedAt < b.file.openedAt ? 1 : 0));
    return files.slice(0, limit).map(({ file, acc }) => withStatistics(file, acc));
  }

  /**
   * The sink's files on this node (all its instances) opened after the reset marker, each with
   * its slices' counts when `counts` (one more range scan). A file none of whose slices has
   * statistics recorded has no counts (`acc` undefined), not counts of zero.
   */
  private localFiles(sink: SinkKey, reset: string, counts: boolean): Array<{ file: FileEntry; acc: Accumulator | undefined }> {
    const instances = sinkInstances(this.store, sink);
    // Keyed by instance and openedAt: two instances can open a file at the same millisecond.
    const fileId = (instance: SinkKey, openedAt: string) => `${instance.sinkId}/${openedAt}`;
    const byFile = new Map<string, Accumulator>();
    for (const instance of counts ? instances : []) {
      for (const slice of this.visibleSlices(instance, reset)) {
        if (slice.noStatistics) continue;
        const id = fileId(instance, slice.fileOpenedAt);
        let acc = byFile.get(id);
        if (!acc) byFile.set(id, (acc = new Accumulator()));
        acc.add(slice);
      }
    }
    return instances.flatMap((instance) => this.store.list<FileEntry>(levelKeys.files(instance), reset === '' ? {} : { after: reset })
      .filter((e) => e.value.openedAt > reset)
      .map((e) => ({ file: e.value, acc: byFile.get(fileId(instance, e.value.openedAt)) })));
  }

  /**
   * Hides the statistics so far of one sink (all its instances: one marker under the plain sink
   * id), or of every sink of the source (the source's archives include every instance's).
   */
  clear(branchId: number, sourceId: string, sinkId?: string): void {
    const now = this.now().toISOString();
    this.store.transact((tx) => {
      tx.put(levelKeys.statsReset(branchId, sourceId, sinkId), now);
      if (sinkId !== undefined) {
        for (const instance of sinkInstances(tx, { branchId, sourceId, sinkId })) tx.delete(levelKeys.statsArchive(instance));
      } else {
        for (const { key } of tx.list(levelKeys.statsArchives(branchId, sourceId))) tx.delete(key);
      }
    });
  }

  /** The instance's archive, unless it is from before the reset marker (then it is hidden, as if cleared). */
  private archive(instance: SinkKey, reset: string): ArchivedStatistics | undefined {
    const archived = this.store.get<ArchivedStatistics>(levelKeys.statsArchive(instance));
    return archived && (archived.reset ?? '') >= reset ? archived : undefined;
  }

  /** Slices of the sink's (or one instance's) files opened after the reset marker (one range scan). */
  private visibleSlices(sink: SinkKey, reset = resetMarker(this.store, sink)): SliceEntry[] {
    // Slice keys are ".../<fileOpenedAt>/<openedAt>" and ISO times have a fixed length, so
    // "after: reset" starts at the first file opened at the marker's time; the filter drops those
    // opened exactly at it.
    return this.store.list<SliceEntry>(levelKeys.sinkSlices(sink), reset === '' ? {} : { after: reset })
      .map((e) => e.value)
      .filter((s) => s.fileOpenedAt > reset);
  }
}

class Accumulator {
  private readonly levels: Partial<Record<Level, LevelStatistics>> = {};

  get recordsCount(): number {
    let n = 0;
    for (const l of LEVELS) n += this.levels[l]?.recordsCount ?? 0;
    return n;
  }

  add(slice: SliceEntry): void {
    if (slice.recordsCount === 0) return;
    const level = LEVEL_OF[slice.state];
    this.addLevel(level, {
      recordsCount: slice.recordsCount,
      uncompressedSize: slice.uncompressedSize,
      // Sluice writes local slices uncompressed (compressedSize 0 until uploaded); a local slice
      // that carries a compressed size (state loaded from the reference) counts that.
      compressedSize: level === 'local' ? slice.compressedSize || slice.uncompressedSize : slice.compressedSize,
      firstRecordAt: slice.firstRecordAt,
      lastRecordAt: slice.lastRecordAt,
    });
  }

  addLevel(level: Level, s: LevelStatistics): void {
    if (s.recordsCount === 0) return;
    const l = (this.levels[level] ??= { recordsCount: 0, compressedSize: 0, uncompressedSize: 0 });
    merge(l, s);
  }

  /** Adds counts by level (a cluster peer's file); returns this. */
  addLevels(levels: Partial<Record<Level, LevelStatistics>>): this {
    for (const level of LEVELS) {
      const l = levels[level];
      if (l) this.addLevel(level, l);
    }
    return this;
  }

  result(): SinkStatisticsTotal {
    const total: LevelStatistics = { recordsCount: 0, compressedSize: 0, uncompressedSize: 0 };
    const levels: Partial<Record<Level, LevelStatistics>> = {};
    for (const name of LEVELS) {
      const l = this.levels[name];
      if (!l || l.recordsCount === 0) continue;
      levels[name] = ordered(l);
      merge(total, l);
    }
    return { total: ordered(total), levels };
  }
}

function merge(into: LevelStatistics, s: LevelStatistics): void {
  into.recordsCount += s.recordsCount;
  into.compressedSize += s.compressedSize;
  into.uncompressedSize += s.uncompressedSize;
  const first = minIso(into.firstRecordAt, s.firstRecordAt);
  const last = maxIso(into.lastRecordAt, s.lastRecordAt);
  if (first !== undefined) into.firstRecordAt = first;
  if (last !== undefined) into.lastRecordAt = last;
}

/** The reference's key order: firstRecordAt, lastRecordAt, recordsCount, compressedSize, uncompressedSize. */
function ordered(s: LevelStatistics): LevelStatistics {
  const out: LevelStatistics = {} as LevelStatistics;
  if (s.firstRecordAt !== undefined) out.firstRecordAt = s.firstRecordAt;
  if (s.lastRecordAt !== undefined) out.lastRecordAt = s.lastRecordAt;
  out.recordsCount = s.recordsCount;
  out.compressedSize = s.compressedSize;
  out.uncompressedSize = s.uncompressedSize;
  return out;
}

type Ordered = Pick<FileEntry, 'state' | 'retryReason' | 'openedAt'>;

function fileOrder(a: Ordered, b: Ordered): number {
  const rank = (f: Ordered) => (f.state === 'imported' ? 0 : f.retryReason === undefined ? 1 : 2);
  return rank(a) - rank(b) || (a.openedAt < b.openedAt ? -1 : a.openedAt > b.openedAt ? 1 : 0);
}

/**
 * A file of a listing with its statistics: none when it has none (`acc` undefined), `total: null`
 * when it has but none of its slices has a record.
 */
function withStatistics(file: FileStatistics, acc: Accumulator | undefined): FileStatistics {
  if (!acc) return file;
  return { ...file, statistics: acc.recordsCount > 0 ? acc.result() : { total: null, levels: {} } };
}

function fileView(f: FileEntry, statistics?: FileStatistics['statistics']): FileStatistics {
  const out: FileStatistics = { state: f.state, openedAt: f.openedAt };
  if (f.closingAt !== undefined) out.closingAt = f.closingAt;
  if (f.importingAt !== undefined) out.importingAt = f.importingAt;
  if (f.importedAt !== undefined) out.importedAt = f.importedAt;
  if (f.retryAttempt !== undefined) out.retryAttempt = f.retryAttempt;
  if (f.retryReason !== undefined) out.retryReason = f.retryReason;
  if (f.retryAfter !== undefined) out.retryAfter = f.retryAfter;
  if (statistics !== undefined) out.statistics = statistics;
  return out;
}
