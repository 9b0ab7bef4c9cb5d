import { describe, expect, it } from 'vitest';
import { replaySink, type ReplayProgress } from '../../../src/actors/replay.js';
import type { LoggedRecord } from '../../../src/ports/event-log.js';
import { restartAt } from '../../../src/pipeline/seen-offsets.js';
import type { IngestRecord } from '../../../src/model/record.js';
import { MemoryEventLog } from '../../helpers/memory-event-log.js';

const T0 = Date.parse('2026-11-01T00:00:00Z');
const record = (n: number, signal: IngestRecord['signal'] = ''): IngestRecord => ({
  receivedAt: new Date(T0 + n * 1000), ip: '127.0.0.1', headers: {}, body: Buffer.from(JSON.stringify({ n })), signal,
});

/** A writer that records what it was given; `fails` are offsets whose mapping fails again. */
function fakeWriter(committedOffset: number, fails = new Set<number>()) {
  const calls: Array<{ offsets: number[]; markSeen?: [number, number] }> = [];
  return {
    calls,
    committedOffset,
    accepts: (signal: string) => signal === '' || signal === 'logs',
    async replay(records: readonly LoggedRecord[], markSeen?: [number, number]) {
      calls.push({ offsets: records.map((r) => r.offset), markSeen });
      const failed = records.filter((r) => fails.has(r.offset)).length;
      return { reprocessed: records.length - failed, failed };
    },
  };
}

async function fill(n: number, signalOf: (i: number) => IngestRecord['signal'] = () => '') {
  const log = new MemoryEventLog();
  for (let i = 1; i <= n; i++) await log.append('t', [record(i, signalOf(i))]).durable;
  return log;
}

describe('replaySink', () => {
  it('finds the first record at or after `since` and stops at the writer\'s committed offset', async () => {
    const log = await fill(10);
    const writer = fakeWriter(8);
    const seen = restartAt(undefined, undefined, 0);
    const progress: ReplayProgress[] = [];
    const done = await replaySink({
      log, topic: 't', writer, seen: () => seen, hasFailed: (o) => o === 5 || o === 9,
      request: { since: new Date(T0 + 4500), records: 'all', fullRemap: false }, progress: (p) => progress.push(p),
    });
    // Offsets 5..8 (received at +5 s ..): only 5 failed before; 9 is beyond the committed offset.
    expect(writer.calls).toEqual([{ offsets: [5], markSeen: undefined }]);
    expect(done).toEqual({ fromOffset: 5, toOffset: 8, scanned: 4, total: 4, written: 1, failed: 0, skipped: 3 });
    expect(progress.at(-1)).toEqual(done);
  });

  it('maps records the sink never saw and marks their range as seen; "failed" leaves them', async () => {
    const log = await fill(6);
    const seen = restartAt(undefined, undefined, 3); // the sink was created when offset 3 was the head
    const all = fakeWriter(6, new Set([2]));
    const done = await replaySink({ log, topic: 't', writer: all, seen: () => seen, hasFailed: () => false, request: { since: new Date(0), records: 'all', fullRemap: false }, progress: () => {} });
    expect(all.calls).toEqual([{ offsets: [1, 2, 3], markSeen: [1, 3] }]);
    expect(done).toMatchObject({ written: 2, failed: 1, skipped: 3 });

    const failedOnly = fakeWriter(6);
    await replaySink({ log, topic: 't', writer: failedOnly, seen: () => seen, hasFailed: (o) => o === 5, request: { since: new Date(0), records: 'failed', fullRemap: false }, progress: () => {} });
    expect(failedOnly.calls).toEqual([{ offsets: [5], markSeen: undefined }]);
  });

  it('fullRemap takes every record the sink accepts; other signals are skipped', async () => {
    const log = await fill(4, (i) => (i % 2 === 0 ? 'traces' : 'logs'));
    const writer = fakeWriter(4);
    const seen = restartAt(undefined, undefined, 0);
    const done = await replaySink({ log, topic: 't', writer, seen: () => seen, hasFailed: () => false, request: { since: new Date(0), records: 'all', fullRemap: true }, progress: () => {} });
    expect(writer.calls).toEqual([{ offsets: [1, 3], markSeen: undefined }]);
    expect(done).toMatchObject({ written: 2, skipped: 2 });
  });

  it('reads in chunks and reports progress per chunk', async () => {
    const log = await fill(2500);
    const writer = fakeWriter(2500);
    const progress: number[] = [];
    await replaySink({ log, topic: 't', writer, seen: () => restartAt(undefined, undefined, 0), hasFailed: () => true, request: { since: new Date(0), records: 'failed', fullRemap: false }, progress: (p) => progress.push(p.scanned) });
    expect(progress).toEqual([1000, 2000, 2500]);
    expect(writer.calls.map((c) => c.offsets.length)).toEqual([1000, 1000, 500]);
  });
});
