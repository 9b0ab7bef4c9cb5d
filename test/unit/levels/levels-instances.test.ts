import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { FilesRepository, type NewFile } from '../../../src/levels/files-repository.js';
import { SinkPositions } from '../../../src/levels/positions.js';
import { purgeSink } from '../../../src/levels/purge.js';
import { instanceId, parseInstanceId, sinkInstances } from '../../../src/levels/instances.js';
import { levelKeys, type SinkKey } from '../../../src/model/levels.js';

const T0 = Date.parse('2000-01-01T00:00:00.000Z');
const at = (minutes: number) => new Date(T0 + minutes * 60_000);
const key = (sinkId: string, sourceId = 'src', branchId = 1): SinkKey => ({ branchId, sourceId, sinkId });
const newFile = (sink: SinkKey): NewFile => ({ projectId: 1, ...sink, tableId: 'in.c-b.t', columns: [{ type: 'body', name: 'body' }], settings: [] });
const ids = (sinks: SinkKey[]) => sinks.map((s) => s.sinkId);

let dir: string;
let store: LmdbMetadataStore;
let repo: FilesRepository;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-instances-'));
  store = new LmdbMetadataStore(join(dir, 'metadata'));
  repo = new FilesRepository(store);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Opens a file of the instance with one committed record (file, slice, offset, open pointer). */
function writeOne(sink: SinkKey, minute = 0): void {
  const { slice } = repo.openFile(newFile(sink), at(minute));
  repo.commitBatch(slice, { uncompressedSize: 10, recordsCount: 1, firstRecordAt: at(minute).toISOString(), lastRecordAt: at(minute).toISOString(), firstOffset: 1, lastOffset: 1, consumerOffset: 1 });
}

describe('instance ids', () => {
  it('partition 0 is the plain sink id, others get "#p"', () => {
    expect(instanceId('orders', 0)).toBe('orders');
    expect(instanceId('orders', 2)).toBe('orders#2');
    expect(parseInstanceId('orders')).toEqual({ sinkId: 'orders', partition: 0 });
    expect(parseInstanceId('orders#2')).toEqual({ sinkId: 'orders', partition: 2 });
    expect(parseInstanceId(instanceId('orders', 17))).toEqual({ sinkId: 'orders', partition: 17 });
  });

  it('refuses what is no instance id', () => {
    expect(() => instanceId('a#b', 1)).toThrow(/cannot contain/);
    expect(() => instanceId('orders', -1)).toThrow(/invalid partition/);
    expect(() => instanceId('orders', 1.5)).toThrow(/invalid partition/);
    for (const bad of ['orders#', 'orders#0', 'orders#02', 'orders#x', 'orders#1#2']) expect(() => parseInstanceId(bad), bad).toThrow(/invalid sink instance id/);
  });
});

describe('sinkInstances', () => {
  it('is the sink alone when it has no instances, with or without data', () => {
    expect(sinkInstances(store, key('ab'))).toEqual([key('ab')]);
    writeOne(key('ab'));
    expect(sinkInstances(store, key('ab'))).toEqual([key('ab')]);
  });

  it('finds the instances with any level state, by partition, and nothing of other sinks, sources or branches', () => {
    writeOne(key('ab#1'));
    writeOne(key('ab#10'));
    new SinkPositions(store).seedConsumerOffset(key('ab#2'), 5); // offset only
    store.transact((tx) => tx.put(levelKeys.statsArchive(key('ab#3')), { recordsCount: 1, compressedSize: 1, uncompressedSize: 1 }));
    store.transact((tx) => tx.put(levelKeys.slice(key('ab#4'), 'f', 's'), {})); // a slice without its file
    for (const other of [key('abc'), key('abc#1'), key('ab-x'), key('ab-x#5'), key('a'), key('a#6'), key('ab#7', 'src2'), key('ab#8', 'src', 2)]) writeOne(other);

    expect(ids(sinkInstances(store, key('ab')))).toEqual(['ab', 'ab#1', 'ab#2', 'ab#3', 'ab#4', 'ab#10']);
    expect(sinkInstances(store, key('ab'))[1]).toEqual(key('ab#1'));
    expect(ids(sinkInstances(store, key('abc')))).toEqual(['abc', 'abc#1']);
    expect(ids(sinkInstances(store, key('a')))).toEqual(['a', 'a#6']);
    // An instance id has no instances.
    expect(sinkInstances(store, key('ab#1'))).toEqual([key('ab#1')]);
  });

  it('skips over an instance\'s many keys and reads inside a transaction', () => {
    writeOne(key('ab#1'));
    for (let i = 1; i <= 50; i++) repo.rotateSlice(key('ab#1'), at(i));
    writeOne(key('ab#2'), 60);
    expect(store.transact((tx) => ids(sinkInstances(tx, key('ab'))))).toEqual(['ab', 'ab#1', 'ab#2']);
  });

  it('looks under extra prefixes laid out like the level keys', () => {
    store.transact((tx) => tx.put('storage/mappingFailureCount/1/src/ab#3', 2));
    expect(ids(sinkInstances(store, key('ab')))).toEqual(['ab']);
    expect(ids(sinkInstances(store, key('ab'), ['storage/mappingFailureCount/']))).toEqual(['ab', 'ab#3']);
  });
});

describe('purgeSink', () => {
  it('purges the sink and all its instances, not other sinks', () => {
    writeOne(key('ab'));
    writeOne(key('ab#1'));
    repo.rotateSlice(key('ab#1'), at(1));
    store.transact((tx) => {
      tx.put(levelKeys.statsArchive(key('ab#2')), { recordsCount: 1, compressedSize: 1, uncompressedSize: 1 });
      tx.put(levelKeys.statsReset(1, 'src', 'ab'), at(0).toISOString());
    });
    writeOne(key('abc'));
    writeOne(key('abc#1'));

    const slices = purgeSink(store, key('ab'));
    expect(slices.map((s) => s.sinkId).sort()).toEqual(['ab', 'ab#1', 'ab#1']);
    expect(ids(sinkInstances(store, key('ab')))).toEqual(['ab']);
    for (const sinkId of ['ab', 'ab#1', 'ab#2']) {
      const sink = key(sinkId);
      expect(repo.listFiles(sink)).toEqual([]);
      expect(repo.listSinkSlices(sink)).toEqual([]);
      expect(new SinkPositions(store).consumerOffset(sink)).toBeUndefined();
      expect(repo.writingFile(sink)).toBeUndefined();
      expect(store.get(levelKeys.statsArchive(sink))).toBeUndefined();
    }
    expect(store.get(levelKeys.statsReset(1, 'src', 'ab'))).toBeUndefined();
    expect(ids(sinkInstances(store, key('abc')))).toEqual(['abc', 'abc#1']);
    expect(repo.listFiles(key('abc#1'))).toHaveLength(1);
  });

  it('given an instance id, purges that instance only', () => {
    writeOne(key('ab'));
    writeOne(key('ab#1'));
    writeOne(key('ab#2'));
    expect(purgeSink(store, key('ab#1')).map((s) => s.sinkId)).toEqual(['ab#1']);
    expect(ids(sinkInstances(store, key('ab')))).toEqual(['ab', 'ab#2']);
    expect(repo.listFiles(key('ab'))).toHaveLength(1);
  });
});
