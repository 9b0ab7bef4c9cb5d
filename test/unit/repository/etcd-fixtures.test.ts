import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { levelKeys } from '../../../src/model/levels.js';
import { StatisticsService } from '../../../src/levels/statistics.js';
import {
  EtcdFixtureError,
  loadEtcdFixture,
  mapEtcdFixture,
  parseEtcdSnapshot,
  writeLevelFixture,
  type EtcdKv,
} from '../../conformance/stream-api/etcd-fixtures.js';

const P = 123;
const B = 456;
const SINK = `${P}/${B}/my-source/my-sink`;
const SINK_KEY = { branchId: B, sourceId: 'my-source', sinkId: 'my-sink' };

const block = (key: string, value: unknown) => `<<<<<\n${key}\n-----\n${typeof value === 'string' ? value : JSON.stringify(value, null, 2)}\n>>>>>\n`;
const stats = (records: number, first: string, last: string, size = `${records}B`) =>
  ({ slicesCount: 1, firstRecordAt: first, lastRecordAt: last, recordsCount: records, uncompressedSize: size, compressedSize: size });
const map = (kvs: EtcdKv[]) => mapEtcdFixture(kvs, { projectId: P });
const kv = (key: string, value: unknown): EtcdKv => ({ key, value: JSON.stringify(value) });

describe('parseEtcdSnapshot', () => {
  it('reads the blocks of the reference\'s snapshot text, the last value of a key winning', () => {
    const text = `${block('a/1', { x: 1 })}\n${block('b/2', '{\n  "y": %%N%%\n}')}\n\n${block('a/1', { x: 3 })}`;
    expect(parseEtcdSnapshot(text)).toEqual([
      { key: 'b/2', value: '{\n  "y": %%N%%\n}' },
      { key: 'a/1', value: JSON.stringify({ x: 3 }, null, 2) },
    ]);
  });

  it('names the line of a malformed block', () => {
    expect(() => parseEtcdSnapshot('<<<<<\nkey\n{}\n>>>>>')).toThrow(/line 3: expected "-----"/);
    expect(() => parseEtcdSnapshot('<<<<<\nkey\n-----\n{}')).toThrow(/no closing ">>>>>"/);
    expect(() => parseEtcdSnapshot('key\n-----')).toThrow(/line 1: expected "<<<<<"/);
  });
});

describe('mapEtcdFixture', () => {
  it('maps a file with its state, times and retry fields; its level index is ignored', () => {
    const file = {
      projectId: P, branchId: B, sourceId: 'my-source', sinkId: 'my-sink', fileOpenedAt: '2000-01-01T02:00:00.000Z',
      state: 'closing', retryAttempt: 2, retryReason: 'some reason 2', firstFailedAt: '2000-01-01T06:00:00.000Z',
      lastFailedAt: '2000-01-01T07:00:00Z', retryAfter: '2000-01-01T07:08:00.000Z', closingAt: '2000-01-01T05:00:00.000Z',
      mapping: { columns: [{ type: 'body', name: 'body' }] }, target: { provider: 'keboola', keboola: { tableId: 'in.c-b.t' } },
    };
    const fixture = map([
      kv(`storage/file/all/${SINK}/2000-01-01T02:00:00.000Z`, file),
      kv(`storage/file/level/local/${SINK}/2000-01-01T02:00:00.000Z`, { ...file, state: 'writing' }),
    ]);
    expect(fixture.files).toEqual([{
      projectId: P, branchId: B, sourceId: 'my-source', sinkId: 'my-sink', openedAt: '2000-01-01T02:00:00.000Z', state: 'closing',
      closingAt: '2000-01-01T05:00:00.000Z', retryAttempt: 2, retryReason: 'some reason 2', firstFailedAt: '2000-01-01T06:00:00.000Z',
      lastFailedAt: '2000-01-01T07:00:00.000Z', retryAfter: '2000-01-01T07:08:00.000Z',
      tableId: 'in.c-b.t', columns: [{ type: 'body', name: 'body' }], settings: [],
    }]);
    expect(fixture.slices).toEqual([]);
    expect(fixture.ignored.map((i) => i.key)).toEqual([`storage/file/level/local/${SINK}/2000-01-01T02:00:00.000Z`]);
  });

  it('makes a slice of each slice\'s statistics at a level, in a state of that level, summing its source nodes', () => {
    const F = '2000-01-01T02:00:00.000Z';
    const fixture = map([
      kv(`storage/stats/local/${SINK}/${F}/vol-1/2000-01-01T02:00:00.000Z/node-a`, stats(1, '2000-01-01T00:00:00.000Z', '2000-01-01T01:00:00.000Z')),
      kv(`storage/stats/local/${SINK}/${F}/vol-1/2000-01-01T02:00:00.000Z/node-b`, { ...stats(2, '1999-12-31T00:00:00.000Z', '2000-01-01T00:30:00.000Z'), compressedSize: '1KB' }),
      kv(`storage/stats/staging/${SINK}/${F}/vol-1/2000-01-01T03:00:00.000Z/value`, stats(5, '2000-01-01T03:00:00.000Z', '2000-01-01T03:30:00.000Z')),
      kv(`storage/stats/target/${SINK}/${F}/vol-1/2000-01-01T04:00:00.000Z/value`, stats(7, '2000-01-01T04:00:00.000Z', '2000-01-01T04:30:00.000Z')),
      kv(`storage/slice/all/${SINK}/${F}/vol-1/2000-01-01T02:00:00.000Z`, { state: 'uploading', closingAt: '2000-01-01T02:30:00.000Z', uploadingAt: '2000-01-01T02:40:00.000Z' }),
    ]);
    expect(fixture.slices.map((s) => [s.openedAt, s.state, s.recordsCount, s.uncompressedSize, s.compressedSize, s.firstRecordAt, s.lastRecordAt])).toEqual([
      ['2000-01-01T02:00:00.000Z', 'uploading', 3, 3, 1 + 1024, '1999-12-31T00:00:00.000Z', '2000-01-01T01:00:00.000Z'],
      ['2000-01-01T03:00:00.000Z', 'uploaded', 5, 5, 5, '2000-01-01T03:00:00.000Z', '2000-01-01T03:30:00.000Z'],
      ['2000-01-01T04:00:00.000Z', 'imported', 7, 7, 7, '2000-01-01T04:00:00.000Z', '2000-01-01T04:30:00.000Z'],
    ]);
    expect(fixture.slices[0]).toMatchObject({ fileOpenedAt: F, closingAt: '2000-01-01T02:30:00.000Z', uploadingAt: '2000-01-01T02:40:00.000Z', localPath: expect.stringContaining('local') });
  });

  it('gives slices of one time on two volumes, or at two levels, the next free milliseconds', () => {
    const F = '2000-01-01T02:00:00.000Z';
    const S = '2000-01-01T02:00:00.000Z';
    const fixture = map([
      kv(`storage/stats/local/${SINK}/${F}/vol-1/${S}/value`, stats(1, S, S)),
      kv(`storage/stats/local/${SINK}/${F}/vol-2/${S}/value`, stats(2, S, S)),
      kv(`storage/stats/target/${SINK}/${F}/vol-2/${S}/value`, stats(3, S, S)),
    ]);
    expect(fixture.slices.map((s) => [s.openedAt, s.state, s.recordsCount])).toEqual([
      ['2000-01-01T02:00:00.000Z', 'closing', 1],
      ['2000-01-01T02:00:00.001Z', 'closing', 2],
      ['2000-01-01T02:00:00.002Z', 'imported', 3],
    ]);
  });

  it('counts an open slice as a slice of no records, a file\'s sum as one more slice and a sink\'s target sum as its archive', () => {
    const F = '2000-01-01T02:00:00.000Z';
    const fixture = map([
      kv(`storage/stats/local/${SINK}/${F}/vol-1/${F}/_open`, { slicesCount: 1, firstRecordAt: '', lastRecordAt: '' }),
      kv(`storage/stats/target/${SINK}/${F}/_sum`, stats(4, F, F)),
      kv(`storage/stats/target/${SINK}/_sum`, stats(10, '1999-01-01T00:00:00.000Z', '1999-02-01T00:00:00.000Z', '1MB')),
    ]);
    expect(fixture.slices.map((s) => [s.openedAt, s.state, s.recordsCount])).toEqual([
      ['2000-01-01T02:00:00.000Z', 'imported', 4],
      ['2000-01-01T02:00:00.001Z', 'closing', 0],
    ]);
    // Both have statistics: the open slice's are of no records.
    expect(fixture.slices.filter((s) => s.noStatistics)).toEqual([]);
    expect(fixture.archives).toEqual([{
      sink: SINK_KEY,
      statistics: { recordsCount: 10, compressedSize: 1024 ** 2, uncompressedSize: 1024 ** 2, firstRecordAt: '1999-01-01T00:00:00.000Z', lastRecordAt: '1999-02-01T00:00:00.000Z' },
    }]);
  });

  it('ignores bridge records, runtime keys and other projects; refuses what Sluice cannot hold', () => {
    const F = '2000-01-01T02:00:00.000Z';
    const fixture = map([
      kv(`storage/keboola/file/${SINK}/${F}`, {}),
      kv('runtime/lock/task/123/456/my-source', {}),
      kv(`storage/stats/local/999/${B}/my-source/my-sink/${F}/v/${F}/value`, stats(1, F, F)),
    ]);
    expect(fixture.ignored).toHaveLength(3);
    expect(fixture.slices).toEqual([]);
    const refused = (k: EtcdKv) => () => map([k]);
    expect(refused(kv(`storage/stats/target/${SINK}/~reset`, { ...stats(1, F, F), reset: true }))).toThrow(EtcdFixtureError);
    expect(refused(kv(`storage/stats/target/${P}/${B}/my-source/_sum`, stats(1, F, F)))).toThrow(/above a sink/);
    expect(refused(kv(`storage/stats/local/${SINK}/_sum`, stats(1, F, F)))).toThrow(/no counterpart/);
    expect(refused(kv(`definition/source/active/${P}/${B}/my-source`, {}))).toThrow(/not supported by the fixture loader/);
    expect(refused(kv(`storage/file/all/${SINK}/${F}`, { state: 'lost' }))).toThrow(/"state" must be one of/);
    expect(refused(kv(`storage/stats/local/${SINK}/${F}/v/${F}/value`, { recordsCount: 1, uncompressedSize: 'much' }))).toThrow(/byte size/);
    expect(refused({ key: `storage/file/all/${SINK}/${F}`, value: '{"state": %%X%%}' })).toThrow(/not JSON/);
    expect(refused(kv(`storage/file/all/${SINK}/yesterday`, { state: 'imported' }))).toThrow(/is not a time/);
  });
});

describe('loaded state through the statistics', () => {
  let dir: string;
  let store: LmdbMetadataStore;

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'sluice-etcd-fixture-'));
  });
  afterEach(async () => {
    await store?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers totals, files and failed files from what the loader wrote into a data directory', async () => {
    const F1 = '2000-01-01T02:00:00.000Z';
    const F2 = '2000-01-01T03:00:00.000Z';
    const text = [
      block(`storage/file/all/${SINK}/${F1}`, { state: 'imported', closingAt: '2000-01-01T05:00:00.000Z', importingAt: '2000-01-01T12:00:00.000Z', importedAt: '2000-01-01T13:00:00.000Z' }),
      block(`storage/file/all/${SINK}/${F2}`, { state: 'importing', retryAttempt: 1, retryReason: 'no table', retryAfter: '2000-01-01T08:00:00.000Z' }),
      block(`storage/stats/local/${SINK}/${F1}/my-volume/2000-01-20T00:00:00.000Z/value`, { ...stats(1, '2000-01-01T00:00:00.000Z', '2000-01-01T01:00:00.000Z'), compressedSize: '1B', uncompressedSize: '3B' }),
      block(`storage/stats/target/${SINK}/${F2}/my-volume/${F2}/value`, stats(100, '2000-01-19T00:00:00.000Z', '2000-01-20T00:00:00.000Z')),
      block(`storage/stats/target/${SINK}/_sum`, stats(9, '1999-01-01T00:00:00.000Z', '1999-01-02T00:00:00.000Z')),
    ].join('\n');
    const loaded = await loadEtcdFixture(dir, text, { projectId: P });
    expect(loaded.files).toHaveLength(2);

    store = new LmdbMetadataStore(join(dir, 'metadata'));
    expect(store.get(levelKeys.open(SINK_KEY))).toBeUndefined(); // the writing file is the runtime's own
    const statistics = new StatisticsService(store);
    expect(statistics.sinkTotal(B, 'my-source', 'my-sink')).toEqual({
      total: { firstRecordAt: '1999-01-01T00:00:00.000Z', lastRecordAt: '2000-01-20T00:00:00.000Z', recordsCount: 110, compressedSize: 110, uncompressedSize: 112 },
      levels: {
        local: { firstRecordAt: '2000-01-01T00:00:00.000Z', lastRecordAt: '2000-01-01T01:00:00.000Z', recordsCount: 1, compressedSize: 1, uncompressedSize: 3 },
        target: { firstRecordAt: '1999-01-01T00:00:00.000Z', lastRecordAt: '2000-01-20T00:00:00.000Z', recordsCount: 109, compressedSize: 109, uncompressedSize: 109 },
      },
    });
    const files = statistics.sinkFiles(B, 'my-source', 'my-sink', false);
    expect(files.map((f) => [f.openedAt, f.state, f.statistics?.total?.recordsCount])).toEqual([
      [F1, 'imported', 1],
      [F2, 'importing', 100],
    ]);
    expect(statistics.sinkFiles(B, 'my-source', 'my-sink', true)).toEqual([
      { state: 'importing', openedAt: F2, retryAttempt: 1, retryReason: 'no table', retryAfter: '2000-01-01T08:00:00.000Z' },
    ]);
    // The aggregation's files: newest first.
    expect(statistics.recentFiles(B, 'my-source', 'my-sink').map((f) => f.openedAt)).toEqual([F2, F1]);
    expect(statistics.recentFiles(B, 'my-source', 'my-sink', 1).map((f) => f.openedAt)).toEqual([F2]);
  });

  it('a file whose slices have no statistics keys, or that has no slice, has no statistics; an open slice\'s file has `total: null`', async () => {
    const F1 = '2000-01-01T02:00:00.000Z';
    const F2 = '2000-01-01T03:00:00.000Z';
    const F3 = '2000-01-01T04:00:00.000Z';
    const text = [
      block(`storage/file/all/${SINK}/${F1}`, { state: 'importing', closingAt: '2000-01-01T02:30:00.000Z', importingAt: '2000-01-01T02:40:00.000Z' }),
      block(`storage/slice/all/${SINK}/${F1}/my-volume/${F1}`, { state: 'uploaded' }),
      block(`storage/file/all/${SINK}/${F2}`, { state: 'closing', closingAt: '2000-01-01T03:30:00.000Z' }),
      block(`storage/file/all/${SINK}/${F3}`, { state: 'writing' }),
      block(`storage/slice/all/${SINK}/${F3}/my-volume/${F3}`, { state: 'writing' }),
      block(`storage/stats/local/${SINK}/${F3}/my-volume/${F3}/_open`, { slicesCount: 1, firstRecordAt: '', lastRecordAt: '' }),
    ].join('\n');
    const loaded = await loadEtcdFixture(dir, text, { projectId: P });
    expect(loaded.slices.map((s) => [s.fileOpenedAt, s.state, s.noStatistics])).toEqual([[F1, 'uploaded', true], [F3, 'writing', undefined]]);

    store = new LmdbMetadataStore(join(dir, 'metadata'));
    const statistics = new StatisticsService(store);
    expect(statistics.sinkFiles(B, 'my-source', 'my-sink', false)).toEqual([
      { state: 'importing', openedAt: F1, closingAt: '2000-01-01T02:30:00.000Z', importingAt: '2000-01-01T02:40:00.000Z' },
      { state: 'closing', openedAt: F2, closingAt: '2000-01-01T03:30:00.000Z' },
      { state: 'writing', openedAt: F3, statistics: { total: null, levels: {} } },
    ]);
    expect(statistics.recentFiles(B, 'my-source', 'my-sink').map((f) => 'statistics' in f)).toEqual([true, false, false]);
  });

  it('writes in one transaction through the level keys', async () => {
    store = new LmdbMetadataStore(join(dir, 'metadata'));
    const F = '2000-01-01T02:00:00.000Z';
    writeLevelFixture(store, map([kv(`storage/stats/staging/${SINK}/${F}/v/${F}/value`, stats(2, F, F))]));
    expect(store.get(levelKeys.slice(SINK_KEY, F, F))).toMatchObject({ state: 'uploaded', recordsCount: 2, compressedSize: 2 });
  });
});
