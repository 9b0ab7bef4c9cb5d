import { afterEach, describe, expect, it } from 'vitest';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import type { RootDatabase } from 'lmdb';
import { EventLogFullError, type EventLog } from '../../../src/ports/event-log.js';
import { LmdbEventLog, type LmdbEventLogOptions } from '../../../src/adapters/event-log/lmdb-log.js';
import type { IngestRecord } from '../../../src/model/record.js';

const dirs: string[] = [];
const logs: EventLog[] = [];
function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-lmdb-log-'));
  dirs.push(dir);
  return dir;
}
function openLog(dir: string, options: LmdbEventLogOptions = {}): LmdbEventLog {
  const log = LmdbEventLog.open(join(dir, 'log'), options);
  logs.push(log);
  return log;
}
afterEach(async () => {
  for (const log of logs.splice(0)) await log.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

function rec(body: string, receivedAt = new Date('2024-05-01T12:00:00.000Z'), extra: Partial<IngestRecord> = {}): IngestRecord {
  return { receivedAt, ip: '203.0.113.7', headers: { 'Content-Type': 'application/json' }, body: Buffer.from(body), signal: '', ...extra };
}
function bodies(log: EventLog, topic: string, after = 0, limit = 1_000_000): string[] {
  return log.read(topic, after, limit).map((r) => r.record.body.toString());
}
/** The id of the last LMDB transaction of the log's environment (one per commit). */
function lastTxnId(log: LmdbEventLog): number {
  const stats = (log as unknown as { root: RootDatabase }).root.getStats() as { lastTxnId: number };
  return stats.lastTxnId;
}
const nextTurn = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('LmdbEventLog', () => {
  it('numbers each topic from 1, in call order, across interleaved topics with prefix names', async () => {
    const log = openLog(tempDir());
    const a1 = log.append('1.1.a', [rec('a1'), rec('a2')]);
    const b1 = log.append('1.1.ab', [rec('b1')]);
    const a2 = log.append('1.1.a', [rec('a3')]);
    const b2 = log.append('1.1.ab', [rec('b2'), rec('b3'), rec('b4')]);
    expect([a1.firstOffset, a1.lastOffset, a2.firstOffset, a2.lastOffset]).toEqual([1, 2, 3, 3]);
    expect([b1.firstOffset, b1.lastOffset, b2.firstOffset, b2.lastOffset]).toEqual([1, 1, 2, 4]);
    await Promise.all([a1.durable, b1.durable, a2.durable, b2.durable]);
    expect(log.read('1.1.a', 0, 100).map((r) => [r.offset, r.record.body.toString()])).toEqual([
      [1, 'a1'],
      [2, 'a2'],
      [3, 'a3'],
    ]);
    expect(bodies(log, '1.1.ab')).toEqual(['b1', 'b2', 'b3', 'b4']);
    expect(log.headOffset('1.1.a')).toBe(3);
    expect(log.headOffset('1.1.ab')).toBe(4);
    expect(log.headOffset('1.1.none')).toBe(0);
    expect(log.tailOffset('1.1.none')).toBe(1);
  });

  it('keeps every field of a record: receive time, ip, headers, binary body, signal', async () => {
    const log = openLog(tempDir());
    const body = Buffer.from([0, 255, 1, 254, 0x80, 10, 13]);
    const record: IngestRecord = {
      receivedAt: new Date('2024-02-29T23:59:59.123Z'),
      ip: '2001:db8::1',
      headers: { 'X-Name': 'Zoë ✓', 'Content-Type': 'application/x-protobuf' },
      body,
      signal: 'traces',
    };
    await log.append('t', [record, rec('', new Date(0), { headers: {}, ip: '', signal: 'logs' })]).durable;
    const [first, second] = log.read('t', 0, 10);
    expect(first.record).toEqual(record);
    expect(Buffer.isBuffer(first.record.body)).toBe(true);
    expect(second.record).toEqual({ receivedAt: new Date(0), ip: '', headers: {}, body: Buffer.alloc(0), signal: 'logs' });
    // Bodies read in one batch are independent copies, not views of a reused buffer.
    await log.append('t', [rec('x'.repeat(5000)), rec('y'.repeat(5000))]).durable;
    const [x, y] = log.read('t', 2, 10);
    expect(x.record.body.toString()).toBe('x'.repeat(5000));
    expect(y.record.body.toString()).toBe('y'.repeat(5000));
  });

  it('reads after an offset, at most limit records', async () => {
    const log = openLog(tempDir());
    await log.append('t', Array.from({ length: 10 }, (_, i) => rec(`r${i + 1}`))).durable;
    expect(log.read('t', 0, 3).map((r) => r.offset)).toEqual([1, 2, 3]);
    expect(log.read('t', 3, 4).map((r) => r.offset)).toEqual([4, 5, 6, 7]);
    expect(log.read('t', 8, 100).map((r) => r.offset)).toEqual([9, 10]);
    expect(log.read('t', 10, 100)).toEqual([]);
    expect(log.read('t', 0, 0)).toEqual([]);
    expect(log.read('other', 0, 10)).toEqual([]);
  });

  it('returns only durable records: nothing is readable before its commit resolved', async () => {
    const log = openLog(tempDir());
    await log.append('t', [rec('first')]).durable;
    const { durable, firstOffset } = log.append('t', [rec('second')]);
    expect(firstOffset).toBe(2);
    expect(log.headOffset('t')).toBe(1);
    expect(bodies(log, 't')).toEqual(['first']);
    await durable;
    expect(log.headOffset('t')).toBe(2);
    expect(bodies(log, 't')).toEqual(['first', 'second']);
  });

  it('commits all appends of one event-loop turn together (group commit)', async () => {
    const log = openLog(tempDir());
    // A topic's first append creates its LMDB database (a transaction of its own).
    await Promise.all([log.append('t1', [rec('w')]).durable, log.append('t2', [rec('w')]).durable]);
    const before = lastTxnId(log);
    const results = Array.from({ length: 1000 }, (_, i) => log.append(i % 2 ? 't1' : 't2', [rec(`r${i}`)]));
    await Promise.all(results.map((r) => r.durable));
    expect(lastTxnId(log)).toBe(before + 1);
    expect(log.headOffset('t1')).toBe(501);
    expect(log.headOffset('t2')).toBe(501);
    // Appends of a later turn are another commit.
    await log.append('t1', [rec('later')]).durable;
    expect(lastTxnId(log)).toBe(before + 2);
  });

  it('gives durable promises that resolve while one appender at a time awaits each', async () => {
    const log = openLog(tempDir());
    for (let i = 1; i <= 20; i++) {
      const r = log.append('t', [rec(`r${i}`)]);
      expect(r.firstOffset).toBe(i);
      await r.durable;
      expect(log.headOffset('t')).toBe(i);
    }
  });

  it('recovers head and tail offsets, byte counts and data after reopening', async () => {
    const dir = tempDir();
    const log = openLog(dir);
    log.append('a', [rec('a1'), rec('a2'), rec('a3')]);
    log.append('b', [rec('b1')]);
    // Not awaited: close() waits for pending commits.
    const aBytes = log.topicBytes('a');
    const bBytes = log.topicBytes('b');
    expect(aBytes).toBeGreaterThan(3 * 2);
    await log.close();
    expect(() => log.append('a', [rec('late')])).toThrow(/closed/);

    const again = openLog(dir);
    expect(again.headOffset('a')).toBe(3);
    expect(again.tailOffset('a')).toBe(1);
    expect(again.headOffset('b')).toBe(1);
    expect(again.topicBytes('a')).toBe(aBytes);
    expect(again.topicBytes('b')).toBe(bBytes);
    // Pages in use: at least what the records take.
    expect(again.usedBytes()).toBeGreaterThanOrEqual(aBytes + bBytes);
    expect(bodies(again, 'a')).toEqual(['a1', 'a2', 'a3']);
    const next = again.append('a', [rec('a4')]);
    expect(next.firstOffset).toBe(4);
    await next.durable;
    expect(bodies(again, 'a', 2)).toEqual(['a3', 'a4']);
  });

  it('removes records older than maxAge from the tail, and the removal survives reopening', async () => {
    const dir = tempDir();
    const log = openLog(dir);
    const now = Date.parse('2024-05-10T00:00:00Z');
    const day = 86_400_000;
    await log.append('t', [rec('old1', new Date(now - 9 * day)), rec('old2', new Date(now - 8 * day)), rec('new1', new Date(now - 6 * day)), rec('new2', new Date(now - day))]).durable;
    await log.append('u', [rec('u-new', new Date(now - day))]).durable;
    const bytesBefore = log.topicBytes('t');
    const removed = log.applyRetention({ maxAgeMs: 7 * day, maxBytesPerTopic: Infinity }, now);
    expect([...removed]).toEqual([['t', 2]]);
    expect(log.tailOffset('t')).toBe(3);
    expect(log.headOffset('t')).toBe(4);
    expect(log.topicBytes('t')).toBeLessThan(bytesBefore);
    expect(log.read('t', 0, 10).map((r) => r.offset)).toEqual([3, 4]);
    expect(bodies(log, 'u')).toEqual(['u-new']);
    // Nothing more to remove.
    expect(log.applyRetention({ maxAgeMs: 7 * day, maxBytesPerTopic: Infinity }, now).size).toBe(0);
    const bytesAfter = log.topicBytes('t');
    await log.close();

    const again = openLog(dir);
    expect(again.tailOffset('t')).toBe(3);
    expect(again.topicBytes('t')).toBe(bytesAfter);
    expect(bodies(again, 't')).toEqual(['new1', 'new2']);
    // Everything expired: the topic is empty, tail = head + 1, offsets go on.
    expect(again.applyRetention({ maxAgeMs: 0, maxBytesPerTopic: Infinity }, now).get('t')).toBe(2);
    expect(again.tailOffset('t')).toBe(5);
    expect(again.headOffset('t')).toBe(4);
    expect(again.read('t', 0, 10)).toEqual([]);
    expect(again.topicBytes('t')).toBe(0);
    expect(again.append('t', [rec('n')]).firstOffset).toBe(5);
  });

  it('removes the oldest records while a topic is over its byte budget', async () => {
    const dir = tempDir();
    const log = openLog(dir);
    const now = Date.now();
    for (let i = 1; i <= 10; i++) log.append('big', [rec(`${i}`.padEnd(1000, '.'), new Date(now))]);
    await log.append('small', [rec('s'.repeat(1000), new Date(now))]).durable;
    const perRecord = log.topicBytes('big') / 10;
    expect(perRecord).toBeGreaterThan(1000);
    const budget = Math.floor(perRecord * 3.5);
    const removed = log.applyRetention({ maxAgeMs: 7 * 86_400_000, maxBytesPerTopic: budget }, now);
    expect([...removed]).toEqual([['big', 7]]);
    expect(log.topicBytes('big')).toBeLessThanOrEqual(budget);
    expect(log.tailOffset('big')).toBe(8);
    expect(log.read('big', 0, 100).map((r) => r.offset)).toEqual([8, 9, 10]);
    expect(log.read('small', 0, 10)).toHaveLength(1);
    await log.close();
    const again = openLog(dir);
    expect(again.tailOffset('big')).toBe(8);
    expect(again.read('big', 0, 100).map((r) => r.record.body.toString().replace(/\.+$/, ''))).toEqual(['8', '9', '10']);
  });

  it('tells onDurable listeners the new head once per commit, only for their topic, until unsubscribed', async () => {
    const log = openLog(tempDir());
    const heads: number[] = [];
    const others: number[] = [];
    const off = log.onDurable('t', (h) => heads.push(h));
    log.onDurable('other', (h) => others.push(h));
    const results = Array.from({ length: 100 }, (_, i) => log.append('t', [rec(`r${i}`)]));
    log.append('u', [rec('u')]);
    // Called asynchronously, never during append.
    expect(heads).toEqual([]);
    await Promise.all(results.map((r) => r.durable));
    await nextTurn();
    expect(heads).toEqual([100]);
    await log.append('t', [rec('x'), rec('y')]).durable;
    await nextTurn();
    expect(heads).toEqual([100, 102]);
    off();
    await log.append('t', [rec('z')]).durable;
    await nextTurn();
    expect(heads).toEqual([100, 102]);
    expect(others).toEqual([]);
  });

  it('refuses appends beyond maxBytes with EventLogFullError; all that was durable survives; retention makes room', async () => {
    const dir = tempDir();
    const maxBytes = 256 * 1024;
    const log = openLog(dir, { maxBytes });
    const durableOffsets: number[] = [];
    let fullError: unknown;
    for (let turn = 0; turn < 1000 && !fullError; turn++) {
      const pending: Promise<void>[] = [];
      for (let i = 0; i < 10; i++) {
        try {
          const r = log.append('t', [rec(`${turn}-${i}`.padEnd(2000, '#'))]);
          pending.push(r.durable.then(() => void durableOffsets.push(r.firstOffset)));
        } catch (err) {
          fullError = err;
          break;
        }
      }
      await Promise.all(pending);
    }
    expect(fullError).toBeInstanceOf(EventLogFullError);
    // The budget counts whole pages once committed: it may be passed by the last pages begun.
    expect(log.usedBytes()).toBeLessThanOrEqual(maxBytes + 2 * 16384);
    expect(log.usedBytes()).toBeGreaterThan(maxBytes - 4 * 2100);
    // Still full: another append throws at once, nothing is assigned.
    const head = log.headOffset('t');
    expect(() => log.append('t', [rec('x'.repeat(3000))])).toThrow(EventLogFullError);
    expect(log.headOffset('t')).toBe(head);
    await log.close();
    expect(statSync(join(dir, 'log', 'data.mdb')).size).toBeLessThan(4 * maxBytes);

    const again = openLog(dir, { maxBytes });
    const kept = new Map(again.read('t', 0, 1_000_000).map((r) => [r.offset, r.record.body.toString()]));
    expect(durableOffsets.length).toBeGreaterThan(50);
    for (const offset of durableOffsets) expect(kept.has(offset)).toBe(true);
    expect(() => again.append('t', [rec('x'.repeat(3000))])).toThrow(EventLogFullError);
    const removed = again.applyRetention({ maxAgeMs: Infinity, maxBytesPerTopic: maxBytes / 2 }).get('t') ?? 0;
    expect(removed).toBeGreaterThan(0);
    const after = again.append('t', [rec('after retention')]);
    expect(after.firstOffset).toBe(Math.max(...durableOffsets) + 1);
    await after.durable;
    expect(bodies(again, 't', after.firstOffset - 1)).toEqual(['after retention']);
  });

  it('refuses appends while the disk has less free space than minFreeDiskBytes', async () => {
    const dir = tempDir();
    const log = openLog(dir, { minFreeDiskBytes: Number.MAX_SAFE_INTEGER });
    expect(() => log.append('t', [rec('x')])).toThrow(EventLogFullError);
    expect(() => log.append('t', [rec('x')])).toThrow(/disk nearly full/);
    expect(log.headOffset('t')).toBe(0);
    await log.close();
    const again = openLog(dir, { minFreeDiskBytes: 0 });
    const r = again.append('t', [rec('x')]);
    expect(r.firstOffset).toBe(1);
    await r.durable;
  });

  it('drops a topic: its records are gone (also after reopening), others stay, offsets go on', async () => {
    const dir = tempDir();
    const log = openLog(dir);
    await log.append('gone', [rec('g1'), rec('g2')]).durable;
    log.append('gone', [rec('g3 in flight')]);
    await log.append('stays', [rec('s1')]).durable;
    const staysBytes = log.topicBytes('stays');
    expect(log.topicBytes('gone')).toBeGreaterThan(0);
    const dropped = log.dropTopic('gone');
    // Visible at once.
    expect(log.read('gone', 0, 10)).toEqual([]);
    expect(log.topicNames()).toEqual(['stays']);
    await dropped;
    expect(log.read('gone', 0, 10)).toEqual([]);
    expect(log.tailOffset('gone')).toBe(log.headOffset('gone') + 1);
    expect(log.topicBytes('gone')).toBe(0);
    expect(log.topicBytes('stays')).toBe(staysBytes);
    const next = log.append('gone', [rec('new1')]);
    expect(next.firstOffset).toBe(4);
    await next.durable;
    expect(bodies(log, 'gone')).toEqual(['new1']);
    await log.dropTopic('never-existed');
    await log.close();

    const again = openLog(dir);
    expect(again.read('gone', 0, 10).map((r) => [r.offset, r.record.body.toString()])).toEqual([[4, 'new1']]);
    expect(again.tailOffset('gone')).toBe(4);
    expect(bodies(again, 'stays')).toEqual(['s1']);
    await again.dropTopic('gone');
    await again.close();
    const third = openLog(dir);
    // Offsets are never reused, also across a restart.
    expect(third.headOffset('gone')).toBe(4);
    expect(third.tailOffset('gone')).toBe(5);
    expect(third.read('gone', 0, 10)).toEqual([]);
    expect(third.topicNames()).toEqual(['stays']);
    const fresh = third.append('gone', [rec('fresh')]);
    expect(fresh.firstOffset).toBe(5);
    await fresh.durable;
    expect(bodies(third, 'gone')).toEqual(['fresh']);
  });

  it('never reuses offsets of a topic that retention emptied, also after reopening', async () => {
    const dir = tempDir();
    const log = openLog(dir);
    await log.append('t', [rec('a'), rec('b'), rec('c')]).durable;
    expect(log.applyRetention({ maxAgeMs: 0, maxBytesPerTopic: Infinity }).get('t')).toBe(3);
    expect(log.tailOffset('t')).toBe(4);
    await log.close();
    const again = openLog(dir);
    expect(again.headOffset('t')).toBe(3);
    expect(again.tailOffset('t')).toBe(4);
    expect(again.read('t', 0, 10)).toEqual([]);
    const next = again.append('t', [rec('d')]);
    expect(next.firstOffset).toBe(4);
    await next.durable;
    // A consumer that had committed offset 3 gets the new record.
    expect(bodies(again, 't', 3)).toEqual(['d']);
  });

  it('removes large amounts in several transactions, and the log keeps taking appends meanwhile', async () => {
    const dir = tempDir();
    const log = openLog(dir);
    const old = new Date(Date.now() - 30 * 86_400_000);
    for (let i = 0; i < 12; i++) log.append('t', Array.from({ length: 1000 }, (_, j) => rec(`${i}-${j}`, old)));
    await log.append('t', [rec('young', new Date())]).durable;
    const before = lastTxnId(log);
    expect(log.applyRetention({ maxAgeMs: 86_400_000, maxBytesPerTopic: Infinity }).get('t')).toBe(12_000);
    expect(bodies(log, 't')).toEqual(['young']);
    const during = log.append('t', [rec('during', new Date())]);
    await during.durable;
    await log.close();
    // 12000 removals at 5000 per transaction: 3 commits at least (not one).
    const again = openLog(dir);
    expect(lastTxnId(again) - before).toBeGreaterThanOrEqual(3);
    expect(bodies(again, 't')).toEqual(['young', 'during']);
    expect(again.tailOffset('t')).toBe(12_001);
  });

  // A real failed commit: the child process may not grow a file beyond a few MB (RLIMIT_FSIZE,
  // with SIGXFSZ ignored, writes fail as on a full disk). Linux with bash only.
  // Needs bash's `ulimit -f` (Linux): the project's machines always have it.
  it('rejects durable with EventLogFullError when the disk write fails, and loses nothing that was durable', async () => {
    const dir = tempDir();
    const logDir = join(dir, 'log');
    const script = join(dir, 'fill.mts');
    writeFileSync(script, FILL_SCRIPT.replace('__MODULE__', JSON.stringify(resolve('src/adapters/event-log/lmdb-log.ts'))));
    const resultFile = join(dir, 'result.json');
    // 4100 KiB is not a whole number of 16 KiB pages: the first page write past the limit is a
    // short write (EIO), never one that fails outright (see the lmdb-js note in lmdb-log.ts).
    const child = spawnSync('/bin/bash', ['-c', `trap '' XFSZ; ulimit -f 4100; exec "${process.execPath}" --import tsx "${script}" "${logDir}" "${resultFile}"`], {
      encoding: 'utf8',
      cwd: process.cwd(),
      timeout: 60_000,
    });
    expect(existsSync(resultFile), `child exited with ${child.status}: ${child.stderr.slice(-2000)}`).toBe(true);
    expect(child.status, child.stderr.slice(-2000)).toBe(0);
    const result = JSON.parse(readFileSync(resultFile, 'utf8')) as {
      durable: [number, string][];
      fullErrors: number;
      otherErrors: string[];
      causes: string[];
      syncThrowsDuringBackoff: number;
      unhandled: number;
    };
    expect(result.unhandled).toBe(0);
    expect(result.otherErrors).toEqual([]);
    expect(result.fullErrors).toBeGreaterThan(0);
    expect(result.causes.length).toBeGreaterThan(0);
    expect(result.syncThrowsDuringBackoff).toBeGreaterThan(0);
    expect(result.durable.length).toBeGreaterThan(100);
    expect(statSync(join(logDir, 'data.mdb')).size).toBeLessThanOrEqual(4100 * 1024);

    // Reopened without the limit: every record reported durable is there, and of the appenders'
    // records only those (the unawaited ones of the end, y and z, may or may not have made it).
    const log = openLog(dir);
    const kept = new Map(log.read('t', 0, 1_000_000).map((r) => [r.offset, r.record.body.toString().replace(/\.+$/, '')]));
    expect([...kept.values()].filter((id) => !/^[yz]/.test(id))).toHaveLength(result.durable.length);
    for (const [offset, id] of result.durable) expect(kept.get(offset)).toBe(id);
    expect(log.headOffset('t')).toBeGreaterThanOrEqual(Math.max(...result.durable.map(([offset]) => offset)));
    // It keeps working: retention, then appends.
    expect(log.applyRetention({ maxAgeMs: Infinity, maxBytesPerTopic: log.topicBytes('t') / 2 }).get('t')).toBeGreaterThan(0);
    const more = log.append('t', [rec('after reopen')]);
    await more.durable;
    expect(bodies(log, 't', more.firstOffset - 1)).toEqual(['after reopen']);
    await log.close();
    const third = openLog(dir);
    expect(third.tailOffset('t')).toBeGreaterThan(result.durable.length / 3);
    expect(bodies(third, 't', more.firstOffset - 1)).toEqual(['after reopen']);
  });
});

/** Runs in the child: fills the log until commits fail, then appends without waiting. */
const FILL_SCRIPT = `
import { writeFileSync } from 'node:fs';
import { LmdbEventLog } from __MODULE__;
import { EventLogFullError } from ${JSON.stringify(resolve('src/ports/event-log.ts'))};
let unhandled = 0;
process.on('unhandledRejection', () => { unhandled++; });
const log = LmdbEventLog.open(process.argv[2], { failureBackoffMs: 200, minFreeDiskBytes: 0 });
const rec = (body) => ({ receivedAt: new Date(), ip: '10.0.0.1', headers: {}, body: Buffer.from(body), signal: '' });
const durable = [];
let fullErrors = 0;
const otherErrors = [];
const causes = new Set();
let failed = false;
async function appender(id) {
  for (let i = 0; !failed && i < 100000; i++) {
    const body = (id + '-' + i).padEnd(1500, '.');
    let r;
    try { r = log.append('t', [rec(body)]); } catch (err) { if (!(err instanceof EventLogFullError)) otherErrors.push(String(err)); break; }
    try { await r.durable; durable.push([r.firstOffset, id + '-' + i]); }
    catch (err) {
      if (err instanceof EventLogFullError) { fullErrors++; causes.add(String(err.cause && err.cause.code)); failed = true; }
      else otherErrors.push(String(err));
    }
  }
}
await Promise.all(Array.from({ length: 20 }, (_, id) => appender(id)));
// Right after a failed commit, appends are refused at once.
let syncThrowsDuringBackoff = 0;
try { log.append('t', [rec('x')]); } catch (err) { if (err instanceof EventLogFullError) syncThrowsDuringBackoff++; }
// After the backoff, appends are tried again; these fail in their commit, and nobody waits for
// them (sync.wait=false): that must not become an unhandled rejection.
await new Promise((r) => setTimeout(r, 250));
for (let i = 0; i < 30; i++) { try { log.append('t', [rec('y'.repeat(1500))]); } catch { /* refused */ } }
try { log.append('t', Array.from({ length: 3000 }, () => rec('z'.repeat(200)))); } catch { /* refused */ }
await new Promise((r) => setTimeout(r, 300));
await log.close();
writeFileSync(process.argv[3], JSON.stringify({ durable, fullErrors, otherErrors, causes: [...causes], syncThrowsDuringBackoff, unhandled }));
`;
