import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync, mkdirSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import type { MetadataStore, MetadataTx } from '../../../src/ports/metadata-store.js';
import { DuckDbTarget } from '../../../src/adapters/target/duckdb-target.js';
import { TableService } from '../../../src/storage/tables.js';
import { SinkClaimedError } from '../../../src/ports/target.js';
import { DomainError } from '../../../src/domain-errors.js';
import { FilesRepository, type NewFile } from '../../../src/levels/files-repository.js';
import { LevelStateError } from '../../../src/levels/file-states.js';
import { SinkPositions } from '../../../src/levels/positions.js';
import { FileExpiry } from '../../../src/levels/expiry.js';
import { SliceAppender, csvRows, recoverSlice, type Cell } from '../../../src/levels/local.js';
import { localSlicePath, stagingSlicePath } from '../../../src/model/levels.js';
import { LocalDirectoryStaging } from '../../../src/adapters/staging/local-directory-staging.js';

/** Stages a slice through the embedded Staging adapter, from its local file under `dir`. */
const stageSlice = (dir: string, slice: SliceEntry) => new LocalDirectoryStaging(dir).stage(slice, join(dir, slice.localPath));
import { fileImportId, importFile } from '../../../src/levels/import.js';
import { levelKeys, type SliceEntry } from '../../../src/model/levels.js';

const SINK = { branchId: 456, sourceId: 'my-source', sinkId: 'my-sink' };
const T0 = new Date('2000-01-01T02:00:00.000Z');
const at = (ms: number) => new Date(T0.getTime() + ms);

function newFile(columns = ['id', 'body'], tableId = 'in.c-b.t'): NewFile {
  return {
    projectId: 123, ...SINK, tableId,
    columns: columns.map((name) => ({ type: 'body' as const, name })),
    settings: [{ key: 'storage.level.staging.upload.trigger.count', value: 5 }],
  };
}

/** A MetadataStore that records the keys written by each transaction. */
function recording(store: MetadataStore): { store: MetadataStore; transactions: string[][] } {
  const transactions: string[][] = [];
  const wrapped: MetadataStore = {
    get: (k) => store.get(k),
    list: (p, o) => store.list(p, o),
    count: (p) => store.count(p),
    close: () => store.close(),
    transact: (fn) => store.transact((tx) => {
      const keys: string[] = [];
      transactions.push(keys);
      const rec: MetadataTx = {
        get: (k) => tx.get(k), list: (p, o) => tx.list(p, o), count: (p) => tx.count(p),
        put: (k, v) => { keys.push(k); tx.put(k, v); },
        delete: (k) => { keys.push(`-${k}`); tx.delete(k); },
      };
      return fn(rec);
    }),
    transactAsync: (fn) => Promise.resolve().then(() => wrapped.transact(fn)),
    writeMark: () => store.writeMark(),
    settled: (mark) => store.settled(mark),
    onRemoteChange: (l) => store.onRemoteChange(l),
    caughtUp: () => store.caughtUp(),
  };
  return { store: wrapped, transactions };
}

let dir: string;
let lmdb: LmdbMetadataStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-levels-'));
  lmdb = new LmdbMetadataStore(join(dir, 'metadata'));
});

afterEach(async () => {
  await lmdb.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('FilesRepository', () => {
  it('opens a file with its snapshot and first slice, and finds the writing ones', () => {
    const repo = new FilesRepository(lmdb);
    const { file, slice } = repo.openFile(newFile(), T0);
    expect(file).toMatchObject({
      projectId: 123, ...SINK, openedAt: '2000-01-01T02:00:00.000Z', state: 'writing', tableId: 'in.c-b.t',
      columns: [{ type: 'body', name: 'id' }, { type: 'body', name: 'body' }],
      settings: [{ key: 'storage.level.staging.upload.trigger.count', value: 5 }],
    });
    expect(slice).toMatchObject({
      ...SINK, fileOpenedAt: file.openedAt, openedAt: file.openedAt, state: 'writing',
      uncompressedSize: 0, compressedSize: 0, recordsCount: 0,
      localPath: join('local', '456', 'my-source', 'my-sink', '2000-01-01T02-00-00-000Z', '2000-01-01T02-00-00-000Z.csv'),
    });
    expect(repo.writingFile(SINK)).toEqual(file);
    expect(repo.writingSlice(SINK)).toEqual(slice);
    expect(repo.listFiles(SINK)).toEqual([file]);
    expect(repo.listSlices(file)).toEqual([slice]);
    expect(() => repo.openFile(newFile(), at(1))).toThrow(LevelStateError);
    expect(repo.listFiles(SINK)).toHaveLength(1);
  });

  it('rotates slices and files atomically, with timestamps and unique ordered ids', () => {
    const { store, transactions } = recording(lmdb);
    const repo = new FilesRepository(store);
    const { file } = repo.openFile(newFile(), T0);

    // Same instant as the open: the new slice still gets a later, unique id.
    const { closed, opened } = repo.rotateSlice(SINK, T0);
    expect(closed).toMatchObject({ state: 'closing', closingAt: T0.toISOString(), openedAt: T0.toISOString() });
    expect(opened).toMatchObject({ state: 'writing', fileOpenedAt: file.openedAt, openedAt: at(1).toISOString() });
    expect(transactions.at(-1)).toHaveLength(3); // old slice, new slice, pointer
    expect(repo.writingSlice(SINK)?.openedAt).toBe(opened.openedAt);
    expect(repo.listSlices(file).map((s) => s.state)).toEqual(['closing', 'writing']);

    const rotated = repo.rotateFile(newFile(['id', 'body', 'ip'], 'in.c-b.t2'), at(5000));
    expect(transactions.at(-1)).toHaveLength(5); // old slice, old file, new file, new slice, pointer
    expect(rotated.closedFile).toMatchObject({ state: 'closing', closingAt: at(5000).toISOString() });
    expect(rotated.closedSlice).toMatchObject({ openedAt: opened.openedAt, state: 'closing' });
    expect(rotated.file).toMatchObject({ state: 'writing', tableId: 'in.c-b.t2', openedAt: at(5000).toISOString() });
    expect(rotated.file.columns.map((c) => c.name)).toEqual(['id', 'body', 'ip']);
    // The closed file keeps its own snapshot.
    expect(repo.getFile(file)?.columns.map((c) => c.name)).toEqual(['id', 'body']);
    expect(repo.writingFile(SINK)?.openedAt).toBe(rotated.file.openedAt);
    expect(repo.listFiles(SINK).map((f) => f.state)).toEqual(['closing', 'writing']);

    const closedAll = repo.closeFile(SINK, at(6000));
    expect(closedAll?.closedFile.state).toBe('closing');
    expect(repo.writingFile(SINK)).toBeUndefined();
    expect(repo.closeFile(SINK)).toBeUndefined();
    expect(() => repo.rotateSlice(SINK)).toThrow(/no writing file/);
  });

  it('walks the states in order and refuses skipped or repeated states', () => {
    const repo = new FilesRepository(lmdb);
    const { file, slice } = repo.openFile(newFile(), T0);
    expect(() => repo.sliceUploading(slice)).toThrow(/writing and cannot become uploading/);
    const { closedFile, closedSlice } = repo.rotateFile(newFile(), at(1000));

    expect(() => repo.fileImporting(closedFile, at(2000))).toThrow(/not uploaded yet/);
    expect(repo.sliceUploading(closedSlice, at(2000))).toMatchObject({ state: 'uploading', uploadingAt: at(2000).toISOString() });
    expect(() => repo.sliceUploading(closedSlice)).toThrow(LevelStateError);
    expect(repo.sliceUploaded(closedSlice, { stagingPath: 'staging/x.csv.gz', compressedSize: 20 }, at(3000))).toMatchObject({
      state: 'uploaded', uploadedAt: at(3000).toISOString(), stagingPath: 'staging/x.csv.gz', compressedSize: 20,
    });
    expect(() => repo.fileImported(file, at(3500))).toThrow(/closing and cannot become imported/);
    expect(repo.fileImporting(file, at(4000))).toMatchObject({ state: 'importing', importingAt: at(4000).toISOString() });
    const done = repo.fileImported(file, at(5000));
    expect(done.file).toMatchObject({
      state: 'imported', closingAt: at(1000).toISOString(), importingAt: at(4000).toISOString(), importedAt: at(5000).toISOString(),
    });
    expect(done.slices.map((s) => [s.state, s.importedAt])).toEqual([['imported', at(5000).toISOString()]]);
    expect(repo.getSlice(slice)?.state).toBe('imported');
    expect(() => repo.fileImported(file)).toThrow(LevelStateError);
  });

  it('commits a batch with the consumer offset in one transaction', async () => {
    const { store, transactions } = recording(lmdb);
    const repo = new FilesRepository(store);
    const { slice } = repo.openFile(newFile(), T0);
    const before = transactions.length;

    const first = repo.commitBatch(slice, {
      uncompressedSize: 100, recordsCount: 3, firstRecordAt: '2000-01-01T00:00:01.000Z', lastRecordAt: '2000-01-01T00:00:03.000Z',
      firstOffset: 1, lastOffset: 3, consumerOffset: 4,
    });
    expect(transactions.length).toBe(before + 1);
    expect(transactions.at(-1)!.sort()).toEqual([levelKeys.offset(SINK), levelKeys.slice(SINK, slice.fileOpenedAt, slice.openedAt)].sort());
    expect(first).toMatchObject({ uncompressedSize: 100, recordsCount: 3, firstOffset: 1, lastOffset: 3 });

    repo.commitBatch(slice, {
      uncompressedSize: 150, recordsCount: 2, firstRecordAt: '2000-01-01T00:00:04.000Z', lastRecordAt: '2000-01-01T00:00:05.000Z',
      firstOffset: 6, lastOffset: 7, consumerOffset: 8,
    });
    // A batch of records that all went elsewhere only moves the offset.
    repo.commitBatch(slice, { uncompressedSize: 150, recordsCount: 0, consumerOffset: 9 });

    // Durable: a new store on the same files sees the committed state.
    await lmdb.close();
    lmdb = new LmdbMetadataStore(join(dir, 'metadata'));
    const reopened = new FilesRepository(lmdb);
    expect(reopened.getSlice(slice)).toMatchObject({
      uncompressedSize: 150, recordsCount: 5, firstRecordAt: '2000-01-01T00:00:01.000Z', lastRecordAt: '2000-01-01T00:00:05.000Z',
      firstOffset: 1, lastOffset: 7,
    });
    expect(new SinkPositions(lmdb).consumerOffset(SINK)).toBe(9);
  });

  it('a refused commit changes neither the slice nor the offset', () => {
    const repo = new FilesRepository(lmdb);
    const { slice } = repo.openFile(newFile(), T0);
    repo.commitBatch(slice, { uncompressedSize: 10, recordsCount: 1, firstOffset: 5, lastOffset: 5, consumerOffset: 5 });
    const snapshot = () => [repo.getSlice(slice), new SinkPositions(lmdb).consumerOffset(SINK)];
    const committed = snapshot();

    // Offsets already committed: the batch would be counted twice.
    expect(() => repo.commitBatch(slice, { uncompressedSize: 20, recordsCount: 1, firstOffset: 5, lastOffset: 5, consumerOffset: 5 }))
      .toThrow(/already committed offset 5/);
    // Consumer offset going back.
    expect(() => repo.commitBatch(slice, { uncompressedSize: 20, recordsCount: 0, consumerOffset: 4 })).toThrow(/behind/);
    // Length shrinking.
    expect(() => repo.commitBatch(slice, { uncompressedSize: 5, recordsCount: 1, firstOffset: 6, lastOffset: 6, consumerOffset: 6 }))
      .toThrow(/cannot commit 5/);
    expect(snapshot()).toEqual(committed);

    // A slice that rotated still takes an in-flight batch; once uploading it is frozen.
    const { closed } = repo.rotateSlice(SINK, at(10));
    expect(repo.commitBatch(closed, { uncompressedSize: 20, recordsCount: 1, firstOffset: 6, lastOffset: 6, consumerOffset: 6 }).recordsCount).toBe(2);
    repo.sliceUploading(closed);
    expect(() => repo.commitBatch(closed, { uncompressedSize: 30, recordsCount: 1, firstOffset: 7, lastOffset: 7, consumerOffset: 7 }))
      .toThrow(/is uploading/);
    expect(new SinkPositions(lmdb).consumerOffset(SINK)).toBe(6);
    expect(repo.getSlice(closed)?.uncompressedSize).toBe(20);
  });

  it('counts failures with first and last failure time, and clears them on success', () => {
    const repo = new FilesRepository(lmdb);
    const { file, slice } = repo.openFile(newFile(), T0);
    repo.closeFile(SINK, at(1000));
    repo.sliceUploading(slice, at(1000));

    const once = repo.markFailed(repo.getSlice(slice)!, 'disk full', '2000-01-01T03:00:00.000Z', at(2000));
    expect(once).toMatchObject({
      retryAttempt: 1, retryReason: 'disk full', firstFailedAt: at(2000).toISOString(), lastFailedAt: at(2000).toISOString(),
      retryAfter: '2000-01-01T03:00:00.000Z', state: 'uploading',
    });
    // Default retryAfter: the reference backoff (8 min ± 10 % for the second attempt).
    const twice = repo.markFailed(once, 'disk still full', undefined, at(3000));
    expect(twice).toMatchObject({ retryAttempt: 2, retryReason: 'disk still full', firstFailedAt: at(2000).toISOString(), lastFailedAt: at(3000).toISOString() });
    const delay = Date.parse(twice.retryAfter!) - at(3000).getTime();
    expect(delay).toBeGreaterThanOrEqual(0.9 * 8 * 60_000);
    expect(delay).toBeLessThanOrEqual(1.1 * 8 * 60_000);

    const uploaded = repo.sliceUploaded(slice, { stagingPath: 's', compressedSize: 1 }, at(4000));
    expect(uploaded.retryAttempt).toBeUndefined();
    expect(uploaded.retryReason).toBeUndefined();
    expect(uploaded.firstFailedAt).toBeUndefined();

    repo.fileImporting(file, at(5000));
    expect(repo.markFailed(repo.getFile(file)!, 'table missing', undefined, at(6000))).toMatchObject({ retryAttempt: 1, state: 'importing' });
    expect(repo.getFile(file)?.retryReason).toBe('table missing');
  });

  it('deletes expired files and slices, keeping writing files and the newest imported ones', () => {
    const repo = new FilesRepository(lmdb);
    const h = 3_600_000;
    // Four files: three imported (one hour apart), then one stuck in closing, then the writing one.
    repo.openFile(newFile(), at(0));
    for (let i = 1; i <= 4; i++) repo.rotateFile(newFile(), at(i * h));
    const files = repo.listFiles(SINK);
    for (const f of files.slice(0, 3)) {
      for (const s of repo.listSlices(f)) {
        repo.commitBatch(s, { uncompressedSize: 10, recordsCount: 1, consumerOffset: 0, firstRecordAt: f.openedAt, lastRecordAt: f.openedAt });
        repo.sliceUploading(s, at(5 * h));
        repo.sliceUploaded(s, { stagingPath: 'x', compressedSize: 4 }, at(5 * h));
      }
      repo.fileImporting(f, at(5 * h));
      repo.fileImported(f, at(5 * h));
    }
    const policy = { activeFileExpirationMs: 100 * h, archivedFileExpirationMs: h, archivedFileRetentionPerSink: 1 };

    // Too early for anything.
    expect(new FileExpiry(lmdb).deleteExpired(at(5 * h + h - 1), policy).files).toEqual([]);
    // Imported files expire one hour after import, except the newest one.
    const first = new FileExpiry(lmdb).deleteExpired(at(6 * h), policy);
    expect(first.files.map((f) => f.openedAt)).toEqual([files[1].openedAt, files[0].openedAt]);
    expect(first.slices).toHaveLength(2);
    expect(repo.listFiles(SINK).map((f) => f.state)).toEqual(['imported', 'closing', 'writing']);
    expect(lmdb.list(levelKeys.slices(SINK, files[0].openedAt))).toEqual([]);
    // Their target statistics live on in the archive.
    expect(lmdb.get(levelKeys.statsArchive(SINK))).toMatchObject({ recordsCount: 2, compressedSize: 8, uncompressedSize: 20 });

    // The closing file expires 100 h after it closed (at 4 h); the writing file never does.
    expect(new FileExpiry(lmdb).deleteExpired(at(104 * h - 1), policy).files).toEqual([]);
    const second = new FileExpiry(lmdb).deleteExpired(at(1000 * h), policy);
    expect(second.files.map((f) => f.state)).toEqual(['closing']);
    expect(repo.listFiles(SINK).map((f) => f.state)).toEqual(['imported', 'writing']);
    expect(repo.writingSlice(SINK)).toBeDefined();
  });
});

describe('local slices', () => {
  const rows: Cell[][] = [
    ['1', 'plain'],
    ['2', 'a,b "quoted"\nnext line'],
    ['3', null],
    ['4', undefined],
    ['5', ''],
  ];

  it('encodes RFC 4180 rows without a header, null and undefined as empty fields', () => {
    expect(csvRows(rows)).toBe('1,plain\n2,"a,b ""quoted""\nnext line"\n3,\n4,\n5,\n');
    expect(csvRows([])).toBe('');
  });

  it('appends, syncs and reports the byte length; recovery cuts an uncommitted batch', async () => {
    const path = join(dir, localSlicePath({ ...SINK, fileOpenedAt: T0.toISOString(), openedAt: T0.toISOString() }));
    const appender = await SliceAppender.open(path, 0);
    const committed = await appender.append(rows);
    expect(committed).toBe(Buffer.byteLength(csvRows(rows)));
    expect(statSync(path).size).toBe(committed);
    // A second batch is written but its commit never happens (crash).
    const longer = await appender.append([['6', 'ž lost']]);
    expect(longer).toBeGreaterThan(committed);
    await appender.close();

    expect(await recoverSlice(path, committed)).toBe(longer - committed);
    expect(readFileSync(path, 'utf8')).toBe(csvRows(rows));
    expect(await recoverSlice(path, committed)).toBe(0);

    // Reopening continues after the committed bytes.
    const again = await SliceAppender.open(path, committed);
    expect(await again.append([['6', 'again']])).toBe(committed + '6,again\n'.length);
    await again.close();
    expect(readFileSync(path, 'utf8')).toBe(csvRows(rows) + '6,again\n');
    await expect(again.append([['7', 'x']])).rejects.toThrow(/closed/);
  });

  it('recovery creates a missing empty slice and refuses missing committed bytes', async () => {
    const path = join(dir, 'local', 'x', 'new.csv');
    expect(await recoverSlice(path, 0)).toBe(0);
    expect(readFileSync(path, 'utf8')).toBe('');
    await expect(recoverSlice(join(dir, 'local', 'x', 'gone.csv'), 10)).rejects.toThrow(/missing/);
    writeFileSync(path, 'abc');
    await expect(recoverSlice(path, 10)).rejects.toThrow(/has 3 bytes but 10/);
    expect(readFileSync(path, 'utf8')).toBe('abc');
  });
});

describe('staging', () => {
  function sliceWithFile(content: string, committed: number, openedAt = T0.toISOString()): SliceEntry {
    const key = { ...SINK, fileOpenedAt: T0.toISOString(), openedAt };
    const localPath = localSlicePath(key);
    mkdirSync(dirname(join(dir, localPath)), { recursive: true });
    writeFileSync(join(dir, localPath), content);
    return { projectId: 123, ...key, state: 'uploading', localPath, uncompressedSize: committed, compressedSize: 0, recordsCount: 1 };
  }

  it('gzips exactly the committed bytes, atomically and idempotently', async () => {
    const slice = sliceWithFile('1,a\n2,b\n3,uncommitted\n', 8);
    const staged = await stageSlice(dir, slice);
    expect(staged.stagingPath).toBe(stagingSlicePath(slice));
    expect(staged.stagingPath.startsWith(join('staging', '456', 'my-source', 'my-sink'))).toBe(true);
    const file = join(dir, staged.stagingPath);
    expect(gunzipSync(readFileSync(file)).toString()).toBe('1,a\n2,b\n');
    expect(staged.compressedSize).toBe(statSync(file).size);
    expect(readdirSync(dirname(file))).toEqual([staged.stagingPath.split('/').at(-1)]);

    // Re-run after a crash before the state was committed: same content.
    expect(await stageSlice(dir, slice)).toEqual(staged);
    expect(gunzipSync(readFileSync(file)).toString()).toBe('1,a\n2,b\n');
    // Local file removed after success: the staged file stands.
    rmSync(join(dir, slice.localPath));
    expect(await stageSlice(dir, slice)).toEqual(staged);
  });

  it('refuses a local file shorter than its committed length', async () => {
    const slice = sliceWithFile('1,a\n', 100);
    await expect(stageSlice(dir, slice)).rejects.toThrow(/has 4 bytes but 100/);
    expect(existsSync(join(dir, stagingSlicePath(slice)))).toBe(false);
  });

  it('removes staged objects one by one, and a purged sink\'s at once', async () => {
    const staging = new LocalDirectoryStaging(dir);
    const first = sliceWithFile('1,a\n', 4, T0.toISOString());
    const second = sliceWithFile('2,b\n', 4, new Date(T0.getTime() + 1000).toISOString());
    const [a, b] = [await staging.stage(first, join(dir, first.localPath)), await staging.stage(second, join(dir, second.localPath))];
    expect(staging.readablePath(a.stagingPath)).toBe(join(dir, a.stagingPath));
    await staging.remove([a.stagingPath, 'staging/never/staged.csv.gz']);
    expect(existsSync(staging.readablePath(a.stagingPath))).toBe(false);
    expect(existsSync(staging.readablePath(b.stagingPath))).toBe(true);
    await staging.removeSink(SINK.branchId, SINK.sourceId, SINK.sinkId);
    expect(existsSync(staging.readablePath(b.stagingPath))).toBe(false);
    expect(existsSync(join(dir, second.localPath))).toBe(true); // the local level is not staging's
  });
});

describe('import into the table', () => {
  let target: DuckDbTarget;
  let tables: TableService;

  beforeEach(async () => {
    target = await DuckDbTarget.open(join(dir, 'tables.duckdb'));
    tables = new TableService(target, 123);
  });

  afterEach(async () => {
    await target.close();
  });

  /** A closed file with staged slices of the given rows, through the repository and the real files. */
  async function stagedFile(batches: Cell[][][], columns = ['id', 'body']) {
    const repo = new FilesRepository(lmdb);
    repo.openFile(newFile(columns), T0);
    let offset = 0;
    for (let i = 0; i < batches.length; i++) {
      if (i > 0) repo.rotateSlice(SINK, at(i * 1000));
      const slice = repo.writingSlice(SINK)!;
      const appender = await SliceAppender.open(join(dir, slice.localPath), 0);
      const length = await appender.append(batches[i]);
      await appender.close();
      if (batches[i].length > 0) {
        repo.commitBatch(slice, {
          uncompressedSize: length, recordsCount: batches[i].length,
          firstOffset: offset + 1, lastOffset: offset + batches[i].length, consumerOffset: offset + batches[i].length,
        });
        offset += batches[i].length;
      }
    }
    const { closedFile } = repo.closeFile(SINK, at(9000))!;
    for (const s of repo.listSlices(closedFile)) {
      repo.sliceUploading(s, at(9000));
      repo.sliceUploaded(s, await stageSlice(dir, repo.getSlice(s)!), at(9000));
    }
    return { repo, file: repo.fileImporting(closedFile, at(9500)), slices: repo.listSlices(closedFile) };
  }

  it('loads all slices of a file in one import, once', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'id' }, { name: 'body' }], { metadata: {} });
    const { repo, file, slices } = await stagedFile([[['1', 'a\rb']], [], [['2', 'multi\nline'], ['3', null]]]);
    expect(slices).toHaveLength(3);

    const result = await importFile(tables, new LocalDirectoryStaging(dir), file, slices);
    expect(result).toEqual({ importId: '456/my-source/my-sink/2000-01-01T02:00:00.000Z', inserted: 3, duplicate: false, skipped: false });
    expect(result.importId).toBe(fileImportId(file));
    expect((await tables.preview('in.c-b.t', 10)).rows).toEqual([['1', 'a\rb'], ['2', 'multi\nline'], ['3', '']]);

    // A retry (crash before `imported` was committed) changes nothing.
    expect(await importFile(tables, new LocalDirectoryStaging(dir), file, slices)).toMatchObject({ inserted: 0, duplicate: true });
    expect(await target.rowCount('in.c-b.t')).toBe(3);
    repo.fileImported(file);
    expect(repo.listSlices(file).every((s) => s.state === 'imported')).toBe(true);
  });

  it('skips a file without records', async () => {
    const { file, slices } = await stagedFile([[]]);
    expect(await importFile(tables, new LocalDirectoryStaging(dir), file, slices)).toMatchObject({ inserted: 0, skipped: true });
    // The table was never needed.
    expect(await tables.findTable('in.c-b.t')).toBeUndefined();
  });

  it('fails with a clear error and changes nothing when the table columns changed', async () => {
    const { file, slices } = await stagedFile([[['1', 'a']]]);
    // Someone replaced the table by one with other columns (same count, so the CSV would fit).
    await tables.ensureTable('in.c-b.t', [{ name: 'id' }, { name: 'text' }], { metadata: {} });
    const err = await importFile(tables, new LocalDirectoryStaging(dir), file, slices).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(DomainError);
    expect((err as DomainError).code).toBe('tableSchemaMismatch');
    expect((err as DomainError).message).toContain('["id","text"]');
    expect((err as DomainError).message).toContain('["id","body"]');
    expect(await target.rowCount('in.c-b.t')).toBe(0);
    // The import id was not recorded: after the table is fixed the import goes through.
    await tables.dropTable('in.c-b.t');
    await tables.ensureTable('in.c-b.t', [{ name: 'id' }, { name: 'body' }], { metadata: {} });
    expect(await importFile(tables, new LocalDirectoryStaging(dir), file, slices)).toMatchObject({ inserted: 1, duplicate: false });
  });

  it('cluster fence: an import by an owner the stream was claimed from since writes nothing; the claim returns the position', async () => {
    await tables.ensureTable('in.c-b.t', [{ name: 'id' }, { name: 'body' }], { metadata: {} });
    const { repo, file, slices } = await stagedFile([[['1', 'a'], ['2', 'b']]]);
    const stream = '456/my-source/my-sink';
    // No claim yet (a single node): anyone's import goes through, and records the position.
    expect(await tables.claimSink(stream, 'node-a')).toBeUndefined();
    expect(await importFile(tables, new LocalDirectoryStaging(dir), file, slices, 'node-a')).toMatchObject({ inserted: 2 });
    repo.fileImported(file);
    expect(await target.position(stream)).toBe(2);

    // node-b takes the stream over: it learns the position, and node-a can import nothing more.
    const second = await (async () => {
      repo.openFile(newFile(), at(20_000));
      const slice = repo.writingSlice(SINK)!;
      const appender = await SliceAppender.open(join(dir, slice.localPath), 0);
      const length = await appender.append([['3', 'c']]);
      await appender.close();
      repo.commitBatch(slice, { uncompressedSize: length, recordsCount: 1, firstOffset: 3, lastOffset: 3, consumerOffset: 3 });
      const { closedFile } = repo.closeFile(SINK, at(21_000))!;
      for (const s of repo.listSlices(closedFile)) {
        repo.sliceUploading(s, at(21_000));
        repo.sliceUploaded(s, await stageSlice(dir, repo.getSlice(s)!), at(21_000));
      }
      return { file: repo.fileImporting(closedFile, at(21_500)), slices: repo.listSlices(closedFile) };
    })();
    expect(await tables.claimSink(stream, 'node-b')).toBe(2);
    const err = await importFile(tables, new LocalDirectoryStaging(dir), second.file, second.slices, 'node-a').then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(SinkClaimedError);
    expect((err as SinkClaimedError).claimedBy).toBe('node-b');
    expect(await target.rowCount('in.c-b.t')).toBe(2);
    expect(await target.position(stream)).toBe(2);
    // A retry of an import that went through before the claim is still a harmless duplicate.
    expect(await importFile(tables, new LocalDirectoryStaging(dir), file, slices, 'node-a')).toMatchObject({ inserted: 0, duplicate: true });
    // The owner imports; the file is gone from node-a's levels once discarded there.
    expect(await importFile(tables, new LocalDirectoryStaging(dir), second.file, second.slices, 'node-b')).toMatchObject({ inserted: 1 });
    expect(await target.position(stream)).toBe(3);
    expect(repo.discardFile(second.file).map((s) => s.openedAt)).toEqual(second.slices.map((s) => s.openedAt));
    expect(repo.getFile(second.file)).toBeUndefined();
    expect(repo.listSlices(second.file)).toEqual([]);
    // Imported files are never discarded.
    expect(repo.discardFile(file)).toEqual([]);
    expect(repo.getFile(file)).toBeDefined();

    // A topic created again forgets positions and owners alike.
    await tables.forgetPositions('456/my-source/');
    expect(await tables.claimSink(stream, 'node-c')).toBeUndefined();
  });

  it('refuses slices that are not staged yet', async () => {
    const repo = new FilesRepository(lmdb);
    const { file, slice } = repo.openFile(newFile(), T0);
    await expect(importFile(tables, new LocalDirectoryStaging(dir), file, [slice])).rejects.toThrow(/writing; only uploaded/);
  });
});
