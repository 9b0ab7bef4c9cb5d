/**
 * What the next start does with the marks a dead process left (src/actors/stopped-mappings.ts):
 * records a sink was mapping in order are parked (its next batch keeps them as failures),
 * records mapped again out of order are kept as failures at once, and the slots go.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { InflightSlot, leftMarks, slotPath, STOPPED_PROCESS_REASON } from '../../../src/actors/render/inflight.js';
import { parkStoppedMappings } from '../../../src/actors/stopped-mappings.js';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { SinkPositions } from '../../../src/levels/positions.js';
import { createLogger } from '../../../src/logger.js';
import { MappingFailures, toFailureRecord } from '../../../src/levels/mapping-failures.js';
import type { IngestRecord } from '../../../src/model/record.js';
import { MemoryEventLog } from '../../helpers/memory-event-log.js';

const key = { branchId: 1, sourceId: 'src', sinkId: 'snk' };
const record = (n: number): IngestRecord => ({ receivedAt: new Date(1_700_000_000_000 + n), ip: '10.0.0.1', headers: { 'Content-Type': 'application/json' }, body: Buffer.from(JSON.stringify({ n })), signal: '' });

let dir: string;
let store: LmdbMetadataStore;
let levels: SinkPositions;
let failures: MappingFailures;
let log: MemoryEventLog;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-stopped-'));
  store = new LmdbMetadataStore(join(dir, 'metadata'));
  levels = new SinkPositions(store);
  failures = new MappingFailures(store);
  log = new MemoryEventLog();
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

const deps = () => ({ store, positions: levels, failures, eventLog: log, logger: createLogger('silent'), topicOf: (sourceId: string) => `topic-${sourceId}` });

describe('records whose mapping stopped the process', () => {
  it('are parked for the sink when it was mapping them in order, except those it is past; the slots go', async () => {
    levels.startAnewAt(key, 10);
    const slot = new InflightSlot(slotPath(dir, 'render-shared'));
    slot.enter({ ...key, mode: 'stream' }, [9, 11, 12]);
    const idle = new InflightSlot(slotPath(dir, 'render-apart'));
    const left = leftMarks(dir);
    expect(left.files).toHaveLength(2);

    await parkStoppedMappings(left, deps());
    expect(failures.parked(key, 10)).toEqual([
      { offset: 11, reason: STOPPED_PROCESS_REASON },
      { offset: 12, reason: STOPPED_PROCESS_REASON },
    ]);
    // Not failures yet: the sink's batch that reaches them keeps them, and moves past them.
    expect(failures.count(key)).toBe(0);
    expect(existsSync(slot.path) || existsSync(idle.path)).toBe(false);
    // Parked records the sink passed are forgotten by its commit.
    store.transact((tx) => failures.unpark(tx, key, 11));
    expect(failures.parked(key, -1).map((p) => p.offset)).toEqual([12]);
    // A sink deleted for good takes its parked records with it.
    failures.purge(key);
    expect(failures.parked(key, -1)).toEqual([]);
  });

  it('are kept as failures at once when they were mapped again out of order (a reprocess or a replay)', async () => {
    levels.startAnewAt(key, 10);
    log.append('topic-src', [1, 2, 3, 4].map(record));
    await new Promise((r) => setTimeout(r, 0));
    store.transact((tx) => failures.add(tx, key, [{ offset: 3, failedAt: new Date(0).toISOString(), reason: 'path "x" not found', record: toFailureRecord(record(3)) }]));
    new InflightSlot(slotPath(dir, 'render-apart')).enter({ ...key, mode: 'replay' }, [3, 4]);

    await parkStoppedMappings(leftMarks(dir), deps());
    const kept = failures.all(key);
    expect(kept.map((f) => [f.offset, f.reason])).toEqual([[3, STOPPED_PROCESS_REASON], [4, STOPPED_PROCESS_REASON]]);
    expect(JSON.parse(kept[1].record.body)).toEqual({ n: 4 });
    expect(failures.count(key)).toBe(2);
    expect(failures.parked(key, -1)).toEqual([]);
    expect(leftMarks(dir).files).toEqual([]);
  });
});
