/**
 * The count of records a sink's filter skipped (levels/filtered-counts.ts): added in the
 * batch's transaction, summed over the sink's partition instances, started again by a
 * statistics reset, forgotten by a purge, and added up across cluster nodes.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { addFilteredIn, filteredCount } from '../../../src/levels/filtered-counts.js';
import { StatisticsService } from '../../../src/levels/statistics.js';
import { ClusterStatistics } from '../../../src/levels/cluster-statistics.js';
import { purgeSink } from '../../../src/levels/purge.js';
import type { SinkKey } from '../../../src/model/levels.js';

const SINK: SinkKey = { branchId: 1, sourceId: 'src', sinkId: 'snk' };
const PARTITION_2: SinkKey = { ...SINK, sinkId: 'snk#2' };
const OTHER: SinkKey = { ...SINK, sinkId: 'snk-2' };

let dirs: string[] = [];
const stores: LmdbMetadataStore[] = [];
function openStore(): LmdbMetadataStore {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-filtered-'));
  dirs.push(dir);
  const store = new LmdbMetadataStore(join(dir, 'metadata'));
  stores.push(store);
  return store;
}

let store: LmdbMetadataStore;
let clock: Date;
let stats: StatisticsService;

beforeEach(() => {
  store = openStore();
  clock = new Date('2030-01-01T00:00:00.000Z');
  stats = new StatisticsService(store, { now: () => clock });
});

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
  dirs = [];
});

const add = (instance: SinkKey, count: number) => store.transact((tx) => addFilteredIn(tx, instance, count));

describe('filtered counts', () => {
  it('adds up per sink, over its partition instances, and not its neighbours\'', () => {
    expect(stats.sinkFiltered(1, 'src', 'snk')).toBe(0);
    add(SINK, 3);
    add(SINK, 0);
    add(PARTITION_2, 4);
    add(OTHER, 100);
    expect(filteredCount(store, SINK)).toBe(7);
    expect(stats.sinkFiltered(1, 'src', 'snk')).toBe(7);
    expect(stats.sinkFiltered(1, 'src', 'snk-2')).toBe(100);
  });

  it('is not counted when the transaction that would add it fails (the batch is redone and counted once)', () => {
    add(SINK, 2);
    expect(() => store.transact((tx) => {
      addFilteredIn(tx, SINK, 5);
      throw new Error('the batch commit failed');
    })).toThrow('the batch commit failed');
    expect(filteredCount(store, SINK)).toBe(2);
  });

  it('starts again after a reset of the sink or of its source', () => {
    add(SINK, 5);
    add(PARTITION_2, 1);
    clock = new Date('2030-01-01T00:01:00.000Z');
    stats.clear(1, 'src', 'snk');
    expect(stats.sinkFiltered(1, 'src', 'snk')).toBe(0);
    add(SINK, 2);
    expect(stats.sinkFiltered(1, 'src', 'snk')).toBe(2);
    add(OTHER, 9);
    clock = new Date('2030-01-01T00:02:00.000Z');
    stats.clear(1, 'src');
    expect(stats.sinkFiltered(1, 'src', 'snk')).toBe(0);
    expect(stats.sinkFiltered(1, 'src', 'snk-2')).toBe(0);
  });

  it('is forgotten with the sink when it is purged', () => {
    add(SINK, 5);
    add(PARTITION_2, 1);
    purgeSink(store, SINK);
    expect(store.list('storage/filtered/')).toEqual([]);
  });

  it('cluster: a node publishes its count, the others add it to theirs; a reset hides a count the node has not restarted yet', () => {
    const peerStore = openStore();
    add(SINK, 4);
    const clusterA = new ClusterStatistics(store, 'process-a', () => true);
    clusterA.publish(stats, () => [SINK], 0);
    // Node "b" counted 1 of its own (another partition) and reads a's part (the shared keys, as the metadata topic copies them).
    peerStore.transact((tx) => {
      for (const { key, value } of store.list('cluster/')) tx.put(key, value);
      addFilteredIn(tx, PARTITION_2, 1);
    });
    const clusterB = new ClusterStatistics(peerStore, 'process-b', () => true);
    const statsB = new StatisticsService(peerStore, { now: () => clock, peers: (s) => clusterB.peers(s) });
    expect(statsB.sinkFiltered(1, 'src', 'snk')).toBe(5);
    clock = new Date('2030-01-01T00:05:00.000Z');
    statsB.clear(1, 'src', 'snk');
    expect(statsB.sinkFiltered(1, 'src', 'snk')).toBe(0);
  });
});
