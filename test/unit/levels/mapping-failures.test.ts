import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { KEPT_FAILURES, MappingFailures, type MappingFailure, type SinkKey } from '../../../src/levels/mapping-failures.js';

const ROWS: SinkKey = { branchId: 1, sourceId: 'src', sinkId: 'rows' };
const ROWS_1: SinkKey = { ...ROWS, sinkId: 'rows#1' };
const ROWS_2: SinkKey = { ...ROWS, sinkId: 'rows#2' };
const ROWS2: SinkKey = { ...ROWS, sinkId: 'rows2' };
const ROWS2_1: SinkKey = { ...ROWS, sinkId: 'rows2#1' };
const T0 = Date.parse('2000-01-01T00:00:00.000Z');
const iso = (minutes: number) => new Date(T0 + minutes * 60_000).toISOString();

/** A failure at `offset`, failed at minute `minute`. */
const failure = (offset: number, minute: number): MappingFailure => ({
  offset, failedAt: iso(minute), reason: `failure ${offset}`,
  record: { receivedAt: iso(minute), ip: '', headers: {}, body: '{}', bodyEncoding: 'utf8' },
});

let dir: string;
let store: LmdbMetadataStore;
let failures: MappingFailures;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-failures-'));
  store = new LmdbMetadataStore(join(dir, 'metadata'));
  failures = new MappingFailures(store);
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

function add(sink: SinkKey, ...list: MappingFailure[]): void {
  store.transact((tx) => failures.add(tx, sink, list));
}

/** A reprocess or replay that wrote these records (actors/sink-writer/replay-write.ts writeReplayed). */
function written(sink: SinkKey, ...offsets: number[]): void {
  store.transact((tx) => failures.remove(tx, sink, offsets));
}

/** Offsets of a listing (the instances' offsets overlap: they are per partition). */
const offsets = (list: MappingFailure[]) => list.map((f) => f.offset);

describe('a sink without instances', () => {
  it('counts and lists its own failures, newest (by offset) first', () => {
    add(ROWS, failure(1, 1), failure(2, 2), failure(3, 3));
    // A replayed record that fails again keeps its entry (offset order), not counted twice.
    add(ROWS, failure(1, 9));
    expect(failures.count(ROWS)).toBe(3);
    expect(offsets(failures.recent(ROWS, 10))).toEqual([3, 2, 1]);
    expect(offsets(failures.recent(ROWS, 2))).toEqual([3, 2]);
  });

  it('counts the records failed now: one that fails again once, with its newest reason; one written since not at all', () => {
    add(ROWS, failure(1, 1), failure(2, 2));
    // Reprocessed (or replayed, or its batch redone) and failed again: its entry is updated.
    add(ROWS, { ...failure(2, 5), reason: 'failed again' });
    expect(failures.count(ROWS)).toBe(2);
    expect(failures.recent(ROWS, 10)).toMatchObject([{ offset: 2, reason: 'failed again', failedAt: iso(5) }, { offset: 1 }]);
    // Reprocessed successfully: no longer failed, no longer counted.
    written(ROWS, 1);
    expect(failures.count(ROWS)).toBe(1);
    expect(offsets(failures.recent(ROWS, 10))).toEqual([2]);
    // A replay writes many records that never failed: they change nothing.
    written(ROWS, 5, 6, 7);
    expect(failures.count(ROWS)).toBe(1);
    written(ROWS, 2);
    expect(failures.count(ROWS)).toBe(0);
    expect(failures.recent(ROWS, 10)).toEqual([]);
  });

  it('counts as many as it lists when it keeps them all', () => {
    for (let round = 0; round < 3; round++) add(ROWS, ...Array.from({ length: 50 }, (_, i) => failure(i * 3 + round, round)));
    written(ROWS, ...Array.from({ length: 40 }, (_, i) => i * 2));
    expect(failures.count(ROWS)).toBe(failures.recent(ROWS, 1000).length);
    expect(failures.count(ROWS)).toBe(150 - 40);
  });

  it('counts every failed record beyond the KEPT_FAILURES it lists', () => {
    add(ROWS, ...Array.from({ length: KEPT_FAILURES + 200 }, (_, i) => failure(i, 0)));
    expect(failures.count(ROWS)).toBe(KEPT_FAILURES + 200);
    const listed = failures.recent(ROWS, 1000);
    expect(listed).toHaveLength(KEPT_FAILURES);
    // The newest (by offset) are kept.
    expect(listed[0].offset).toBe(KEPT_FAILURES + 199);
    expect(listed[listed.length - 1].offset).toBe(200);
    // Beyond the kept ones, a failed record is known by its offset (a replay of failed records reads it from the log).
    expect(failures.hasFailed(ROWS, 0)).toBe(true);
    written(ROWS, 0, 1);
    expect(failures.count(ROWS)).toBe(KEPT_FAILURES + 198);
  });

  it('forgets failed records below the log\'s tail, except those it keeps with their raw record', () => {
    add(ROWS, ...Array.from({ length: KEPT_FAILURES + 10 }, (_, i) => failure(i, 0)));
    // Retention removed offsets below 500 from the log: the 10 not kept are gone, the kept ones stay.
    failures.pruneBelow(ROWS, 500);
    expect(failures.count(ROWS)).toBe(KEPT_FAILURES);
    expect(failures.count(ROWS)).toBe(failures.recent(ROWS, 1000).length);
    expect(failures.hasFailed(ROWS, 9)).toBe(false);
    expect(failures.hasFailed(ROWS, 10)).toBe(true);
  });

  it('purges what older versions stored: the running count', () => {
    add(ROWS, failure(1, 1));
    store.transact((tx) => tx.put('storage/mappingFailureCount/1/src/rows', 7));
    expect(failures.count(ROWS)).toBe(1);
    failures.purge(ROWS);
    expect(store.get('storage/mappingFailureCount/1/src/rows')).toBeUndefined();
    expect(failures.count(ROWS)).toBe(0);
  });
});

describe('a sink with partition instances', () => {
  beforeEach(() => {
    // Offsets are per partition: the instances have overlapping ones.
    add(ROWS, failure(1, 1), failure(2, 5));
    add(ROWS_1, failure(1, 2), failure(2, 3), failure(3, 7));
    add(ROWS_2, failure(10, 6));
    add(ROWS2, failure(1, 4), failure(2, 8));
    add(ROWS2_1, failure(1, 9));
  });

  it('count sums the sink\'s instances, not sink rows2', () => {
    expect(failures.count(ROWS)).toBe(6);
    expect(failures.count(ROWS2)).toBe(3);
    // An instance alone (a writer's key).
    expect(failures.count(ROWS_1)).toBe(3);
  });

  it('recent merges the instances by failedAt, newest first, limited', () => {
    const recent = failures.recent(ROWS, 100);
    expect(recent.map((f) => f.failedAt)).toEqual([iso(7), iso(6), iso(5), iso(3), iso(2), iso(1)]);
    expect(offsets(recent)).toEqual([3, 10, 2, 2, 1, 1]);
    expect(failures.recent(ROWS, 2).map((f) => f.failedAt)).toEqual([iso(7), iso(6)]);
    expect(failures.recent(ROWS2, 100).map((f) => f.failedAt)).toEqual([iso(9), iso(8), iso(4)]);
    expect(offsets(failures.recent(ROWS_1, 100))).toEqual([3, 2, 1]);
  });

  it('the writer\'s methods stay per instance', () => {
    expect(failures.hasFailed(ROWS_1, 3)).toBe(true);
    expect(failures.hasFailed(ROWS, 3)).toBe(false);
    expect(offsets(failures.all(ROWS))).toEqual([1, 2]);
    expect(failures.failedOffsets(ROWS_2, 0, 100, 10)).toEqual([10]);
  });

  it('purge forgets the sink and all its instances, not rows2', () => {
    failures.purge(ROWS);
    expect(failures.count(ROWS)).toBe(0);
    expect(failures.recent(ROWS, 100)).toEqual([]);
    for (const sink of [ROWS, ROWS_1, ROWS_2]) {
      expect(failures.count(sink)).toBe(0);
      expect(failures.failedOffsets(sink, 0, 100, 10)).toEqual([]);
    }
    expect(failures.count(ROWS2)).toBe(3);
    expect(failures.recent(ROWS2, 100)).toHaveLength(3);
  });

  it('purge of an instance forgets that instance only', () => {
    failures.purge(ROWS_1);
    expect(failures.count(ROWS)).toBe(3);
    expect(offsets(failures.recent(ROWS, 100))).toEqual([10, 2, 1]);
  });
});
