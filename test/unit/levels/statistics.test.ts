import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { FilesRepository, type NewFile } from '../../../src/levels/files-repository.js';
import { FileExpiry } from '../../../src/levels/expiry.js';
import { levelKeys, type FileEntry, type SinkKey, type SliceEntry } from '../../../src/model/levels.js';
import { localSlicePath } from '../../../src/model/levels.js';
import { StatisticsService, type NodeSinkStatistics } from '../../../src/levels/statistics.js';
import { ClusterStatistics } from '../../../src/levels/cluster-statistics.js';

const SINK: SinkKey = { branchId: 456, sourceId: 'my-source', sinkId: 'my-sink' };
const OTHER: SinkKey = { branchId: 456, sourceId: 'my-source', sinkId: 'my-sink-2' };
const T0 = Date.parse('2000-01-01T00:00:00.000Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000);
const iso = (minutes: number) => at(minutes).toISOString();

const newFile = (sink: SinkKey): NewFile => ({ projectId: 1, ...sink, tableId: 'in.c-b.t', columns: [{ type: 'body', name: 'body' }], settings: [] });

let dir: string;
let store: LmdbMetadataStore;
let repo: FilesRepository;
let clock: Date;
let stats: StatisticsService;
let offset: number;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-stats-'));
  store = new LmdbMetadataStore(join(dir, 'metadata'));
  repo = new FilesRepository(store);
  clock = at(0);
  stats = new StatisticsService(store, { now: () => clock });
  offset = 0;
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Writes `count` records (10 bytes each) with receive times from..to (minutes) into the writing slice. */
function write(sink: SinkKey, count: number, from: number, to: number): SliceEntry {
  const slice = repo.writingSlice(sink)!;
  offset += count;
  return repo.commitBatch(slice, {
    uncompressedSize: slice.uncompressedSize + 10 * count, recordsCount: count,
    firstRecordAt: iso(from), lastRecordAt: iso(to), firstOffset: offset - count + 1, lastOffset: offset, consumerOffset: offset,
  });
}

function upload(slice: SliceEntry, compressedSize: number, minute: number): void {
  repo.sliceUploading(slice, at(minute));
  repo.sliceUploaded(slice, { stagingPath: `staging/${slice.openedAt}.csv.gz`, compressedSize }, at(minute));
}

/** An imported file of 2 records (minutes 0-5, gzip 4 bytes) and a writing one of 1 (minute 6). */
function importedAndWriting(sink: SinkKey) {
  repo.openFile(newFile(sink), at(0));
  write(sink, 2, 1, 2);
  const a = repo.rotateFile(newFile(sink), at(3));
  upload(a.closedSlice, 4, 4);
  repo.fileImporting(a.closedFile, at(5));
  repo.fileImported(a.closedFile, at(5));
  write(sink, 1, 6, 6);
  return { imported: a.closedFile, writing: a.file };
}

describe('sinkTotal', () => {
  it('is zero without data, with no timestamps and no levels', () => {
    expect(stats.sinkTotal(456, 'my-source', 'my-sink')).toEqual({
      total: { recordsCount: 0, compressedSize: 0, uncompressedSize: 0 }, levels: {},
    });
    repo.openFile(newFile(SINK), at(0));
    expect(stats.sinkTotal(456, 'my-source', 'my-sink')).toEqual({
      total: { recordsCount: 0, compressedSize: 0, uncompressedSize: 0 }, levels: {},
    });
  });

  it('sums slices by level: local (writing, closing, uploading), staging (uploaded), target (imported)', () => {
    // File 1: two slices, imported.
    repo.openFile(newFile(SINK), at(0));
    write(SINK, 3, 1, 2);
    const { closed: s1 } = repo.rotateSlice(SINK, at(3));
    write(SINK, 2, 4, 5);
    const { closedFile: f1, closedSlice: s2 } = repo.rotateFile(newFile(SINK), at(6));
    upload(s1, 7, 7);
    upload(s2, 5, 7);
    repo.fileImporting(f1, at(8));
    repo.fileImported(f1, at(9));
    // File 2: one uploaded slice (staging), one uploading (local), one writing (local).
    write(SINK, 4, 10, 11);
    const { closed: s3 } = repo.rotateSlice(SINK, at(12));
    upload(s3, 9, 13);
    write(SINK, 1, 14, 14);
    const { closed: s4 } = repo.rotateSlice(SINK, at(15));
    repo.sliceUploading(s4, at(16));
    write(SINK, 2, 17, 20);
    // Another sink's data is not counted.
    repo.openFile(newFile(OTHER), at(0));
    write(OTHER, 100, 0, 100);

    expect(stats.sinkTotal(456, 'my-source', 'my-sink')).toEqual({
      total: { firstRecordAt: iso(1), lastRecordAt: iso(20), recordsCount: 12, compressedSize: 12 + 30 + 9, uncompressedSize: 120 },
      levels: {
        local: { firstRecordAt: iso(14), lastRecordAt: iso(20), recordsCount: 3, compressedSize: 30, uncompressedSize: 30 },
        staging: { firstRecordAt: iso(10), lastRecordAt: iso(11), recordsCount: 4, compressedSize: 9, uncompressedSize: 40 },
        target: { firstRecordAt: iso(1), lastRecordAt: iso(5), recordsCount: 5, compressedSize: 12, uncompressedSize: 50 },
      },
    });
    // Key order of the reference.
    expect(Object.keys(stats.sinkTotal(456, 'my-source', 'my-sink').total)).toEqual(
      ['firstRecordAt', 'lastRecordAt', 'recordsCount', 'compressedSize', 'uncompressedSize']);
  });

  it('keeps the totals of imported files deleted by retention', () => {
    repo.openFile(newFile(SINK), at(0));
    write(SINK, 3, 1, 2);
    const { closedFile, closedSlice } = repo.rotateFile(newFile(SINK), at(3));
    upload(closedSlice, 6, 4);
    repo.fileImporting(closedFile, at(5));
    repo.fileImported(closedFile, at(5));
    write(SINK, 1, 7, 7);
    const before = stats.sinkTotal(456, 'my-source', 'my-sink');

    const deleted = new FileExpiry(store).deleteExpired(at(24 * 60), { activeFileExpirationMs: 1e12, archivedFileExpirationMs: 60_000, archivedFileRetentionPerSink: 0 });
    expect(deleted.files).toHaveLength(1);
    expect(stats.sinkFiles(456, 'my-source', 'my-sink', false).map((f) => f.state)).toEqual(['writing']);
    expect(stats.sinkTotal(456, 'my-source', 'my-sink')).toEqual(before);
    expect(before.levels.target?.recordsCount).toBe(3);
  });
});

/** Files: A imported, B closing and failed, C importing without failure, D writing. */
function fourFiles() {
  repo.openFile(newFile(SINK), at(0));
  write(SINK, 2, 1, 2);
  const a = repo.rotateFile(newFile(SINK), at(10));
  write(SINK, 1, 11, 11);
  const b = repo.rotateFile(newFile(SINK), at(20));
  write(SINK, 1, 21, 21);
  const c = repo.rotateFile(newFile(SINK), at(30));
  upload(a.closedSlice, 4, 31);
  repo.fileImporting(a.closedFile, at(32));
  repo.fileImported(a.closedFile, at(33));
  repo.markFailed(repo.getSlice(b.closedSlice)!, 'upload failed', iso(60), at(34));
  repo.markFailed(repo.getFile(b.closedFile)!, 'upload failed', iso(60), at(34));
  upload(c.closedSlice, 3, 35);
  repo.fileImporting(c.closedFile, at(36));
  return { a: a.closedFile, b: b.closedFile, c: c.closedFile, d: c.file };
}

describe('sinkFiles', () => {
  it('lists files with states, timestamps, retry fields and per-file statistics, in the reference order', () => {
    const { a, b, c, d } = fourFiles();
    const files = stats.sinkFiles(456, 'my-source', 'my-sink', false);
    // Imported first, then files without retryReason (by openedAt), then the failed one.
    expect(files.map((f) => f.openedAt)).toEqual([a.openedAt, c.openedAt, d.openedAt, b.openedAt]);
    expect(files[0]).toEqual({
      state: 'imported', openedAt: iso(0), closingAt: iso(10), importingAt: iso(32), importedAt: iso(33),
      statistics: {
        total: { firstRecordAt: iso(1), lastRecordAt: iso(2), recordsCount: 2, compressedSize: 4, uncompressedSize: 20 },
        levels: { target: { firstRecordAt: iso(1), lastRecordAt: iso(2), recordsCount: 2, compressedSize: 4, uncompressedSize: 20 } },
      },
    });
    expect(files[1]).toMatchObject({ state: 'importing', importingAt: iso(36), statistics: { levels: { staging: { recordsCount: 1, compressedSize: 3 } } } });
    // The writing file has no records yet.
    expect(files[2]).toEqual({ state: 'writing', openedAt: iso(30), statistics: { total: null, levels: {} } });
    expect(files[3]).toEqual({
      state: 'closing', openedAt: iso(10), closingAt: iso(20), retryAttempt: 1, retryReason: 'upload failed', retryAfter: iso(60),
      statistics: {
        total: { firstRecordAt: iso(11), lastRecordAt: iso(11), recordsCount: 1, compressedSize: 10, uncompressedSize: 10 },
        levels: { local: { firstRecordAt: iso(11), lastRecordAt: iso(11), recordsCount: 1, compressedSize: 10, uncompressedSize: 10 } },
      },
    });
  });

  it('failedFiles lists only files not imported that failed at least once', () => {
    const { a, b } = fourFiles();
    // An imported file keeps no retry fields, but even one that had them is not "failed".
    repo.markFailed(repo.getFile(a)!, 'late failure', undefined, at(40));
    expect(stats.sinkFiles(456, 'my-source', 'my-sink', true)).toEqual([
      { state: 'closing', openedAt: b.openedAt, closingAt: iso(20), retryAttempt: 1, retryReason: 'upload failed', retryAfter: iso(60) },
    ]);
  });
});

describe('files with and without recorded statistics', () => {
  /**
   * Files of SINK in every state, made by the record's path (statistics recorded from each slice's
   * opening): imported (2 records), failed (closing, 1), importing (1), closing (none: fourFiles'
   * writing file closed) and writing (1).
   */
  function recordedFiles() {
    fourFiles();
    repo.rotateFile(newFile(SINK), at(40));
    write(SINK, 1, 41, 41);
  }

  /**
   * Files of OTHER in every state as loaded from stored state with no statistics: no slice at
   * all, or slices whose statistics were never recorded (SliceEntry.noStatistics).
   */
  function unrecordedFiles() {
    const stored = (minute: number, state: FileEntry['state'], fields: Partial<FileEntry>, slices: number) => {
      const file: FileEntry = { ...newFile(OTHER), openedAt: iso(minute), state, ...fields };
      store.transact((tx) => {
        tx.put(levelKeys.file(OTHER, file.openedAt), file);
        for (let i = 0; i < slices; i++) {
          const key = { ...OTHER, fileOpenedAt: file.openedAt, openedAt: iso(minute + i) };
          const slice: SliceEntry = {
            projectId: 1, ...key, state: state === 'imported' ? 'imported' : 'closing', localPath: localSlicePath(key),
            uncompressedSize: 0, compressedSize: 0, recordsCount: 0, noStatistics: true,
          };
          tx.put(levelKeys.slice(OTHER, key.fileOpenedAt, key.openedAt), slice);
        }
      });
    };
    stored(0, 'imported', { closingAt: iso(1), importingAt: iso(2), importedAt: iso(3) }, 2);
    stored(10, 'closing', { closingAt: iso(11), retryAttempt: 2, retryReason: 'some reason', retryAfter: iso(70) }, 0);
    stored(20, 'importing', { closingAt: iso(21), importingAt: iso(22) }, 1);
    stored(30, 'closing', { closingAt: iso(31) }, 0);
    stored(40, 'writing', {}, 1);
  }

  const NO_RECORDS = { total: null, levels: {} };

  it('the files listing has statistics for every file Sluice wrote, `total: null` for one of no records', () => {
    recordedFiles();
    const files = stats.sinkFiles(456, 'my-source', 'my-sink', false);
    expect(files.map((f) => [f.state, f.retryAttempt, f.statistics?.total?.recordsCount ?? f.statistics?.total])).toEqual([
      ['imported', undefined, 2],
      ['importing', undefined, 1],
      ['closing', undefined, null],
      ['writing', undefined, 1],
      ['closing', 1, 1],
    ]);
    expect(files[2]).toEqual({ state: 'closing', openedAt: iso(30), closingAt: iso(40), statistics: NO_RECORDS });
    expect(stats.recentFiles(456, 'my-source', 'my-sink').every((f) => f.statistics !== undefined)).toBe(true);
  });

  it('leaves statistics out for a file with none recorded, in every state, in the files listing and the aggregation\'s files', () => {
    unrecordedFiles();
    const files = stats.sinkFiles(456, 'my-source', 'my-sink-2', false);
    expect(files.map((f) => [f.state, f.retryAttempt ?? 0])).toEqual([['imported', 0], ['importing', 0], ['closing', 0], ['writing', 0], ['closing', 2]]);
    for (const f of files) expect(f).not.toHaveProperty('statistics');
    expect(files[0]).toEqual({ state: 'imported', openedAt: iso(0), closingAt: iso(1), importingAt: iso(2), importedAt: iso(3) });
    expect(files[4]).toEqual({ state: 'closing', openedAt: iso(10), closingAt: iso(11), retryAttempt: 2, retryReason: 'some reason', retryAfter: iso(70) });
    const recent = stats.recentFiles(456, 'my-source', 'my-sink-2');
    expect(recent.map((f) => f.openedAt)).toEqual([iso(40), iso(30), iso(20), iso(10), iso(0)]);
    for (const f of recent) expect(f).not.toHaveProperty('statistics');
    // The failed-files listing shows no statistics in any case.
    expect(stats.sinkFiles(456, 'my-source', 'my-sink-2', true)).toEqual([files[4]]);
    expect(stats.sinkTotal(456, 'my-source', 'my-sink-2')).toEqual({ total: { recordsCount: 0, compressedSize: 0, uncompressedSize: 0 }, levels: {} });
  });

  it('a file with one slice of recorded statistics beside slices of none has statistics', () => {
    unrecordedFiles();
    // The stored writing file gets a slice Sluice opened (statistics from its opening, no records).
    const writing = iso(40);
    const key = { ...OTHER, fileOpenedAt: writing, openedAt: iso(45) };
    store.transact((tx) => tx.put(levelKeys.slice(OTHER, writing, key.openedAt), {
      projectId: 1, ...key, state: 'writing', localPath: localSlicePath(key), uncompressedSize: 0, compressedSize: 0, recordsCount: 0,
    } satisfies SliceEntry));
    expect(stats.sinkFiles(456, 'my-source', 'my-sink-2', false).find((f) => f.openedAt === writing)).toEqual({
      state: 'writing', openedAt: writing, statistics: NO_RECORDS,
    });
    store.transact((tx) => tx.put(levelKeys.slice(OTHER, writing, key.openedAt), {
      projectId: 1, ...key, state: 'writing', localPath: localSlicePath(key), uncompressedSize: 30, compressedSize: 0, recordsCount: 3,
      firstRecordAt: iso(46), lastRecordAt: iso(47),
    } satisfies SliceEntry));
    expect(stats.recentFiles(456, 'my-source', 'my-sink-2')[0].statistics).toEqual({
      total: { firstRecordAt: iso(46), lastRecordAt: iso(47), recordsCount: 3, compressedSize: 30, uncompressedSize: 30 },
      levels: { local: { firstRecordAt: iso(46), lastRecordAt: iso(47), recordsCount: 3, compressedSize: 30, uncompressedSize: 30 } },
    });
  });

  it('cluster: a node publishes which files have no statistics, and the others answer as it does', () => {
    recordedFiles();
    unrecordedFiles();
    const cluster = new ClusterStatistics(store, 'process-a', () => true);
    cluster.publish(stats, () => [SINK, OTHER], 0);
    const part = (sink: SinkKey) => store.list<NodeSinkStatistics>(`cluster/stats/${sink.branchId}/${sink.sourceId}/${sink.sinkId}/`)[0].value;
    expect(part(OTHER).files.map((f) => f.noStatistics)).toEqual([true, true, true, true, true]);
    expect(part(SINK).files.every((f) => !('noStatistics' in f))).toBe(true);

    // Another node answers from the parts alone (this node's files gone) as this node did.
    const local = {
      recorded: stats.sinkFiles(456, 'my-source', 'my-sink', false),
      unrecorded: stats.sinkFiles(456, 'my-source', 'my-sink-2', false),
      recent: stats.recentFiles(456, 'my-source', 'my-sink-2'),
    };
    const published = { sink: part(SINK), other: part(OTHER) };
    store.transact((tx) => {
      for (const s of [SINK, OTHER]) for (const { key } of [...tx.list(levelKeys.files(s)), ...tx.list(levelKeys.sinkSlices(s))]) tx.delete(key);
    });
    const peerReader = new StatisticsService(store, { now: () => clock, peers: (s) => [s.sinkId === SINK.sinkId ? published.sink : published.other] });
    expect(peerReader.sinkFiles(456, 'my-source', 'my-sink', false)).toEqual(local.recorded);
    expect(peerReader.sinkFiles(456, 'my-source', 'my-sink-2', false)).toEqual(local.unrecorded);
    expect(peerReader.recentFiles(456, 'my-source', 'my-sink-2')).toEqual(local.recent);
    for (const f of local.unrecorded) expect(f).not.toHaveProperty('statistics');

    // A node that does not send the fact (an older one): its files have statistics, as before.
    const older: NodeSinkStatistics = { ...published.other, files: published.other.files.map(({ noStatistics: _, ...f }) => f) };
    const olderReader = new StatisticsService(store, { now: () => clock, peers: () => [older] });
    for (const f of olderReader.sinkFiles(456, 'my-source', 'my-sink-2', false)) expect(f.statistics).toEqual(NO_RECORDS);
  });
});

describe('clear', () => {
  it('hides the files of a sink opened before the reset, and their statistics', () => {
    repo.openFile(newFile(SINK), at(0));
    write(SINK, 2, 1, 2);
    repo.openFile(newFile(OTHER), at(0));
    write(OTHER, 1, 1, 1);

    clock = at(5);
    stats.clear(456, 'my-source', 'my-sink');
    expect(stats.sinkFiles(456, 'my-source', 'my-sink', false)).toEqual([]);
    expect(stats.sinkTotal(456, 'my-source', 'my-sink')).toEqual({ total: { recordsCount: 0, compressedSize: 0, uncompressedSize: 0 }, levels: {} });
    // Other sinks keep theirs.
    expect(stats.sinkTotal(456, 'my-source', 'my-sink-2').total.recordsCount).toBe(1);

    // A file opened after the reset counts.
    repo.rotateFile(newFile(SINK), at(6));
    write(SINK, 3, 7, 8);
    expect(stats.sinkFiles(456, 'my-source', 'my-sink', false).map((f) => f.openedAt)).toEqual([iso(6)]);
    expect(stats.sinkTotal(456, 'my-source', 'my-sink').total).toMatchObject({ recordsCount: 3, firstRecordAt: iso(7), lastRecordAt: iso(8) });
  });

  it('a source reset applies to all its sinks, and drops archived totals', () => {
    repo.openFile(newFile(SINK), at(0));
    write(SINK, 2, 1, 2);
    const { closedFile, closedSlice } = repo.rotateFile(newFile(SINK), at(3));
    upload(closedSlice, 5, 4);
    repo.fileImporting(closedFile, at(4));
    repo.fileImported(closedFile, at(4));
    new FileExpiry(store).deleteExpired(at(60), { activeFileExpirationMs: 1e12, archivedFileExpirationMs: 0, archivedFileRetentionPerSink: 0 });
    expect(stats.sinkTotal(456, 'my-source', 'my-sink').levels.target?.recordsCount).toBe(2);
    repo.openFile(newFile(OTHER), at(0));
    write(OTHER, 1, 1, 1);

    clock = at(61);
    stats.clear(456, 'my-source');
    for (const sinkId of ['my-sink', 'my-sink-2']) {
      expect(stats.sinkTotal(456, 'my-source', sinkId).total.recordsCount).toBe(0);
      expect(stats.sinkFiles(456, 'my-source', sinkId, false)).toEqual([]);
    }
    // A later sink reset does not undo the source reset.
    clock = at(62);
    stats.clear(456, 'my-source', 'my-sink');
    expect(stats.sinkTotal(456, 'my-source', 'my-sink-2').total.recordsCount).toBe(0);
  });
});

describe('partition instances', () => {
  const ROWS: SinkKey = { branchId: 456, sourceId: 'my-source', sinkId: 'rows' };
  const ROWS_1: SinkKey = { ...ROWS, sinkId: 'rows#1' };
  const ROWS2: SinkKey = { ...ROWS, sinkId: 'rows2' };
  const ROWS2_1: SinkKey = { ...ROWS, sinkId: 'rows2#1' };

  /** rows: an imported file and a writing one; rows#1: an uploaded slice; rows2 (and its instance): data that must not count. */
  function data() {
    const files = importedAndWriting(ROWS);
    // rows#1 opens its file at the same millisecond as rows' first file.
    repo.openFile(newFile(ROWS_1), at(0));
    write(ROWS_1, 3, 0, 7);
    const { closed } = repo.rotateSlice(ROWS_1, at(8));
    upload(closed, 9, 9);
    for (const other of [ROWS2, ROWS2_1]) {
      repo.openFile(newFile(other), at(0));
      write(other, 100, 0, 100);
    }
    return files;
  }

  it('totals and files cover the sink and its instances, not sink rows2', () => {
    const { imported, writing } = data();
    expect(stats.sinkTotal(456, 'my-source', 'rows')).toEqual({
      total: { firstRecordAt: iso(0), lastRecordAt: iso(7), recordsCount: 6, compressedSize: 4 + 10 + 9, uncompressedSize: 60 },
      levels: {
        local: { firstRecordAt: iso(6), lastRecordAt: iso(6), recordsCount: 1, compressedSize: 10, uncompressedSize: 10 },
        staging: { firstRecordAt: iso(0), lastRecordAt: iso(7), recordsCount: 3, compressedSize: 9, uncompressedSize: 30 },
        target: { firstRecordAt: iso(1), lastRecordAt: iso(2), recordsCount: 2, compressedSize: 4, uncompressedSize: 20 },
      },
    });
    const files = stats.sinkFiles(456, 'my-source', 'rows', false);
    // Imported first, then by openedAt; the two files opened at minute 0 keep their own statistics.
    expect(files.map((f) => [f.state, f.openedAt, f.statistics?.total?.recordsCount])).toEqual([
      ['imported', imported.openedAt, 2],
      ['writing', iso(0), 3],
      ['writing', writing.openedAt, 1],
    ]);
    expect(stats.sinkTotal(456, 'my-source', 'rows2').total.recordsCount).toBe(200);
    expect(stats.sinkFiles(456, 'my-source', 'rows2', false)).toHaveLength(2);
  });

  it('failedFiles includes the instances\' failed files', () => {
    data();
    repo.rotateFile(newFile(ROWS_1), at(10));
    const [file] = repo.listFiles(ROWS_1);
    repo.markFailed(file, 'import failed', iso(60), at(11));
    expect(stats.sinkFiles(456, 'my-source', 'rows', true)).toEqual([
      { state: 'closing', openedAt: iso(0), closingAt: iso(10), retryAttempt: 1, retryReason: 'import failed', retryAfter: iso(60) },
    ]);
  });

  it('includes the instances\' archived totals', () => {
    repo.openFile(newFile(ROWS_1), at(0));
    write(ROWS_1, 3, 1, 2);
    const { closedFile, closedSlice } = repo.rotateFile(newFile(ROWS_1), at(3));
    upload(closedSlice, 6, 4);
    repo.fileImporting(closedFile, at(5));
    repo.fileImported(closedFile, at(5));
    const before = stats.sinkTotal(456, 'my-source', 'rows');
    new FileExpiry(store).deleteExpired(at(60), { activeFileExpirationMs: 1e12, archivedFileExpirationMs: 0, archivedFileRetentionPerSink: 0 });
    expect(repo.listFiles(ROWS_1).map((f) => f.state)).toEqual(['writing']);
    expect(stats.sinkTotal(456, 'my-source', 'rows')).toEqual(before);
    expect(before.levels.target?.recordsCount).toBe(3);
  });

  it('a sink reset (one marker under the plain id) hides its instances\' data and drops their archives', () => {
    data();
    const { closedFile, closedSlice } = repo.rotateFile(newFile(ROWS_1), at(10));
    upload(closedSlice, 9, 11);
    repo.fileImporting(closedFile, at(11));
    repo.fileImported(closedFile, at(11));

    clock = at(20);
    stats.clear(456, 'my-source', 'rows');
    expect(store.get(levelKeys.statsReset(456, 'my-source', 'rows#1'))).toBeUndefined();
    expect(stats.sinkTotal(456, 'my-source', 'rows').total.recordsCount).toBe(0);
    expect(stats.sinkFiles(456, 'my-source', 'rows', false)).toEqual([]);
    // Retention after the reset does not archive the instance's hidden file.
    new FileExpiry(store).deleteExpired(at(120), { activeFileExpirationMs: 1e12, archivedFileExpirationMs: 0, archivedFileRetentionPerSink: 0 });
    expect(store.get(levelKeys.statsArchive(ROWS_1))).toBeUndefined();
    expect(stats.sinkTotal(456, 'my-source', 'rows').total.recordsCount).toBe(0);
    expect(stats.sinkTotal(456, 'my-source', 'rows2').total.recordsCount).toBe(200);

    // An archive from before the reset is dropped by it.
    store.transact((tx) => tx.put(levelKeys.statsArchive(ROWS_1), { recordsCount: 5, compressedSize: 5, uncompressedSize: 5 }));
    store.transact((tx) => tx.put(levelKeys.statsArchive(ROWS2_1), { recordsCount: 5, compressedSize: 5, uncompressedSize: 5 }));
    clock = at(130);
    stats.clear(456, 'my-source', 'rows');
    expect(store.get(levelKeys.statsArchive(ROWS_1))).toBeUndefined();
    expect(store.get(levelKeys.statsArchive(ROWS2_1))).toBeDefined();

    // Data an instance writes after the reset counts.
    repo.rotateFile(newFile(ROWS_1), at(140));
    write(ROWS_1, 2, 141, 142);
    expect(stats.sinkTotal(456, 'my-source', 'rows').total).toMatchObject({ recordsCount: 2, firstRecordAt: iso(141), lastRecordAt: iso(142) });
    expect(stats.sinkFiles(456, 'my-source', 'rows', false).map((f) => f.openedAt)).toEqual([iso(140)]);
  });
});

describe('scale', () => {
  it('aggregates a sink with a few thousand slices', () => {
    repo.openFile(newFile(SINK), at(0));
    const slices = 2000;
    for (let i = 0; i < slices; i++) {
      write(SINK, 2, i, i + 1);
      if (i % 100 === 99) repo.rotateFile(newFile(SINK), at(i + 1));
      else repo.rotateSlice(SINK, at(i + 1));
    }
    const started = performance.now();
    const total = stats.sinkTotal(456, 'my-source', 'my-sink');
    const files = stats.sinkFiles(456, 'my-source', 'my-sink', false);
    const elapsed = performance.now() - started;
    expect(total.total).toMatchObject({ recordsCount: 2 * slices, uncompressedSize: 20 * slices, firstRecordAt: iso(0), lastRecordAt: iso(slices) });
    expect(files).toHaveLength(21);
    expect(files.reduce((n, f) => n + (f.statistics?.total?.recordsCount ?? 0), 0)).toBe(2 * slices);
    // Reported, not asserted (timings are the benches' job, never a test's assertion).
    console.log(`statistics of ${slices} slices: ${elapsed.toFixed(1)} ms`);
  });
});

describe('cluster: the other nodes\' parts', () => {
  /** A second node: its own local metadata, the shared keys copied over as the metadata topic would. */
  let peerDir: string;
  let peerStore: LmdbMetadataStore;

  beforeEach(() => {
    peerDir = mkdtempSync(join(tmpdir(), 'sluice-stats-peer-'));
    peerStore = new LmdbMetadataStore(join(peerDir, 'metadata'));
  });

  afterEach(async () => {
    await peerStore.close();
    rmSync(peerDir, { recursive: true, force: true });
  });

  const replicate = (from: LmdbMetadataStore, to: LmdbMetadataStore) => {
    const shared = [...from.list('cluster/'), ...from.list('storage/statsReset/')];
    to.transact((tx) => {
      for (const { key } of to.list('cluster/stats/')) tx.delete(key);
      for (const { key, value } of shared) tx.put(key, value);
    });
  };

  it('adds what other nodes published; a dead node\'s files count only once imported; a reset hides them', () => {
    // This node ("a") has an imported file of 2 records and a writing one of 1.
    importedAndWriting(SINK);
    const alive = new Set(['process-a']);
    const clusterA = new ClusterStatistics(store, 'process-a', (n) => alive.has(n));
    clusterA.publish(stats, () => [SINK, OTHER], 0);
    // Only sinks with data here have a part.
    expect(store.list('cluster/stats/').map((e) => e.key)).toEqual([`cluster/stats/456/my-source/my-sink/${clusterA.member}`]);
    // Never more often than the interval (2 s).
    const published = () => store.list<{ files: unknown[] }>('cluster/stats/')[0].value;
    const first = published();
    write(SINK, 1, 7, 7);
    clusterA.publish(stats, () => [SINK, OTHER], 1000);
    expect(published()).toEqual(first);
    clusterA.publish(stats, () => [SINK, OTHER], 2500);
    expect(published()).not.toEqual(first);

    // Node "b" has no data of its own (say, only the api role) and shows a's.
    alive.add('process-b');
    replicate(store, peerStore);
    const clusterB = new ClusterStatistics(peerStore, 'process-b', (n) => alive.has(n));
    const statsB = new StatisticsService(peerStore, { now: () => clock, peers: (s) => clusterB.peers(s) });
    expect(clusterB.member).not.toBe(clusterA.member);
    expect(statsB.sinkTotal(456, 'my-source', 'my-sink')).toEqual(stats.sinkTotal(456, 'my-source', 'my-sink'));
    expect(statsB.sinkFiles(456, 'my-source', 'my-sink', false)).toEqual(stats.sinkFiles(456, 'my-source', 'my-sink', false));
    expect(statsB.sinkTotal(456, 'my-source', 'my-sink').total.recordsCount).toBe(4);

    // "a" dies: its writing file will never be imported by it; the new owner reads those records again.
    alive.delete('process-a');
    expect(statsB.sinkTotal(456, 'my-source', 'my-sink').total.recordsCount).toBe(2);
    expect(statsB.sinkFiles(456, 'my-source', 'my-sink', false).map((f) => f.state)).toEqual(['imported']);

    // A reset made on "b" hides a's files at once, before "a" publishes again.
    alive.add('process-a');
    clock = at(30);
    statsB.clear(456, 'my-source', 'my-sink');
    expect(statsB.sinkTotal(456, 'my-source', 'my-sink').total.recordsCount).toBe(0);
    expect(statsB.sinkFiles(456, 'my-source', 'my-sink', false)).toEqual([]);

    // A sink that is gone: "a" removes its part.
    clusterA.publish(stats, () => [OTHER], 5000);
    expect(store.list('cluster/stats/')).toHaveLength(1); // looked for every 30 s only
    clusterA.publish(stats, () => [OTHER], 40_000);
    expect(store.list('cluster/stats/')).toEqual([]);
  });

  it('keeps the member of a data directory across restarts', () => {
    const first = new ClusterStatistics(store, 'process-1', () => true).member;
    expect(new ClusterStatistics(store, 'process-2', () => true).member).toBe(first);
  });
});
