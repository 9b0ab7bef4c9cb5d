/**
 * Cluster metadata: nodes' LMDB views converge through one ordered change log (here in memory;
 * the Kafka log is exercised by test/integration/kafka-cluster.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { ReplicatedMetadataStore, type MetadataChange, type MetadataChangeLog } from '../../../src/adapters/metadata/replicated-store.js';
import { MappingFailures } from '../../../src/levels/mapping-failures.js';
import { KEY_SPACES } from '../../../src/server.js';

/** An in-memory change log; deliveries are asynchronous and can be held back to interleave writes. */
class MemoryChangeLog {
  readonly entries: MetadataChange[] = [];
  private readonly followers: Array<{ deliver: (c: MetadataChange[]) => void; next: number }> = [];
  held = false;
  failAppends = false;
  reserved = 0;

  client(): MetadataChangeLog {
    return {
      append: async (changes) => {
        await Promise.resolve();
        if (this.failAppends) throw new Error('broker down');
        this.entries.push(...changes.map((c) => structuredClone(c)));
        setImmediate(() => this.flush());
      },
      follow: async (deliver) => {
        const follower = { deliver, next: 0 };
        this.followers.push(follower);
        this.flushTo(follower);
      },
      reserve: async () => this.reserved++,
      caughtUp: async (timeoutMs) => {
        const end = Date.now() + timeoutMs;
        while (this.held && Date.now() < end) await new Promise((r) => setTimeout(r, 5));
        this.flush();
      },
      close: async () => undefined,
    };
  }

  flush(): void {
    if (this.held) return;
    for (const f of this.followers) this.flushTo(f);
  }

  private flushTo(f: { deliver: (c: MetadataChange[]) => void; next: number }): void {
    if (f.next >= this.entries.length) return;
    const batch = this.entries.slice(f.next);
    f.next = this.entries.length;
    f.deliver(batch.map((c) => structuredClone(c)));
  }
}

const dirs: string[] = [];
const stores: ReplicatedMetadataStore[] = [];
function lmdb(): LmdbMetadataStore {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-replicated-'));
  dirs.push(dir);
  return new LmdbMetadataStore(dir);
}
async function node(log: MemoryChangeLog, local = lmdb()): Promise<ReplicatedMetadataStore> {
  const store = await ReplicatedMetadataStore.open(local, log.client(), KEY_SPACES);
  stores.push(store);
  return store;
}
const tick = () => new Promise((r) => setImmediate(r));

afterEach(async () => {
  for (const s of stores.splice(0)) await s.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

describe('ReplicatedMetadataStore', () => {
  it('shares definitions, tasks and tokens with the other nodes, and keeps node-local keys local', async () => {
    const log = new MemoryChangeLog();
    const a = await node(log);
    const b = await node(log);
    const seen: string[][] = [];
    b.onRemoteChange((keys) => seen.push(keys));
    a.transact((tx) => {
      tx.put('definition/source/1/s1', { sourceId: 's1' });
      tx.put('task/t1', { status: 'processing' });
      tx.put('storage/slice/1/s1/k/f/x', { state: 'writing' });
    });
    await a.settled();
    await tick();
    expect(b.get('definition/source/1/s1')).toEqual({ sourceId: 's1' });
    expect(b.get('task/t1')).toEqual({ status: 'processing' });
    expect(b.get('storage/slice/1/s1/k/f/x')).toBeUndefined();
    expect(seen).toEqual([['definition/source/1/s1', 'task/t1']]);
    a.transact((tx) => tx.delete('definition/source/1/s1'));
    await a.settled();
    await tick();
    expect(b.get('definition/source/1/s1')).toBeUndefined();
    expect(log.entries.map((e) => e.key)).not.toContain('storage/slice/1/s1/k/f/x');
  });

  it('converges to the change log order when two nodes write the same key at once', async () => {
    const log = new MemoryChangeLog();
    const a = await node(log);
    const b = await node(log);
    log.held = true;
    a.transact((tx) => tx.put('definition/source/1/s', 'from a'));
    b.transact((tx) => tx.put('definition/source/1/s', 'from b'));
    await Promise.all([a.settled(), b.settled()]);
    // Each node still shows its own write until the log's order arrives.
    expect(a.get('definition/source/1/s')).toBe('from a');
    expect(b.get('definition/source/1/s')).toBe('from b');
    log.held = false;
    log.flush();
    const last = log.entries[log.entries.length - 1].value;
    expect(a.get('definition/source/1/s')).toBe(last);
    expect(b.get('definition/source/1/s')).toBe(last);
  });

  it('does not step back to its own older write while a newer one is on its way', async () => {
    const log = new MemoryChangeLog();
    const a = await node(log);
    a.transact((tx) => tx.put('task/t', 'processing'));
    await a.settled();
    log.held = true;
    a.transact((tx) => tx.put('task/t', 'success'));
    // The log delivers the first write again before the second one.
    log.held = false;
    log.flush();
    expect(a.get('task/t')).toBe('success');
    await a.settled();
    await tick();
    expect(a.get('task/t')).toBe('success');
  });

  it('replays the log at start: keys the log does not know are dropped; an empty log is seeded', async () => {
    const log = new MemoryChangeLog();
    const seededLocal = lmdb();
    seededLocal.transact((tx) => {
      tx.put('definition/source/1/old', 'kept from the single-node life');
      tx.put('storage/offset/1/old/k', 7);
    });
    const first = await node(log, seededLocal);
    await first.settled();
    expect(log.entries.map((e) => e.key)).toEqual(['definition/source/1/old']);

    const staleLocal = lmdb();
    staleLocal.transact((tx) => {
      tx.put('definition/source/1/gone', 'deleted while this node was down');
      tx.put('storage/offset/1/gone/k', 3);
    });
    const second = await node(log, staleLocal);
    expect(second.get('definition/source/1/old')).toBe('kept from the single-node life');
    expect(second.get('definition/source/1/gone')).toBeUndefined();
    // Node-local keys are the node's own business.
    expect(second.get('storage/offset/1/gone/k')).toBe(3);
  });

  it('reports a write the log did not take through settled()', async () => {
    const log = new MemoryChangeLog();
    const a = await node(log);
    log.failAppends = true;
    const before = a.writeMark();
    a.transact((tx) => tx.put('storage/token/9', { id: '9' }));
    await expect(a.settled(before)).rejects.toThrow('broker down');
    log.failAppends = false;
    const later = a.writeMark();
    a.transact((tx) => tx.put('storage/token/10', { id: '10' }));
    // A later caller is not failed by an earlier write that was not taken.
    await expect(a.settled(later)).resolves.toBeUndefined();
    await expect(a.settled(before)).rejects.toThrow('broker down');
  });

  it('neither waits for nor fails an API call on the nodes\' background writes (cluster/ keys)', async () => {
    const log = new MemoryChangeLog();
    const a = await node(log);
    const mark = a.writeMark();
    log.failAppends = true;
    a.transact((tx) => tx.put('cluster/node/a', 1)); // a heartbeat while the broker is down
    expect(a.writeMark()).toBe(mark); // a call that wrote nothing else has nothing to wait for
    await expect(a.settled(mark)).resolves.toBeUndefined();
    log.failAppends = false;
    a.transact((tx) => tx.put('storage/token/11', { id: '11' }));
    expect(a.writeMark()).toBeGreaterThan(mark);
    await expect(a.settled(mark)).resolves.toBeUndefined();
  });

  it('shares mapping failures in the background: the next owner of a partition reprocesses them; a replay deletes only what failed', async () => {
    const log = new MemoryChangeLog();
    const a = await node(log);
    const b = await node(log);
    const announced: string[][] = [];
    b.onRemoteChange((keys) => announced.push(keys));
    const sink = { branchId: 1, sourceId: 'src', sinkId: 'rows#2' };
    const record = { receivedAt: '2026-01-01T00:00:00.000Z', ip: '', headers: {}, body: '{}', bodyEncoding: 'utf8' as const };
    const mark = a.writeMark();
    // Node a's writer records two failures with its batch (the slice key stays node-local).
    a.transact((tx) => {
      tx.put('storage/slice/1/src/rows#2/f/s', { recordsCount: 1 });
      new MappingFailures(a).add(tx, sink, [5, 7].map((offset) => ({ offset, failedAt: record.receivedAt, reason: 'no column', record })));
    });
    expect(a.writeMark()).toBe(mark); // no API call waits for a writer's failures
    await tick();
    await tick();
    const onB = new MappingFailures(b);
    expect(onB.count(sink)).toBe(2);
    expect(onB.all(sink).map((f) => f.offset)).toEqual([5, 7]);
    expect(onB.hasFailed(sink, 7)).toBe(true);
    expect(announced).toEqual([]);
    // Node b owns the partition now: its replay writes offsets 1..10; only 5 and 7 had failed.
    const before = log.entries.length;
    b.transact((tx) => onB.remove(tx, sink, Array.from({ length: 10 }, (_, i) => i + 1)));
    await tick();
    await tick();
    expect(log.entries.slice(before).map((e) => e.key).sort()).toEqual([
      'storage/mappingFailed/1/src/rows#2/0000000000000005',
      'storage/mappingFailed/1/src/rows#2/0000000000000007',
      'storage/mappingFailure/1/src/rows#2/0000000000000005',
      'storage/mappingFailure/1/src/rows#2/0000000000000007',
    ]);
    expect(new MappingFailures(a).all(sink)).toEqual([]);
    expect(new MappingFailures(a).count(sink)).toBe(0); // the records were written since: no longer failed
  });

  it('lets a lookup that found nothing wait until the node has what the log holds (bounded)', async () => {
    const log = new MemoryChangeLog();
    const a = await node(log);
    const b = await node(log);
    log.held = true;
    a.transact((tx) => tx.put('task/t2', { status: 'processing' }));
    await a.settled();
    expect(b.get('task/t2')).toBeUndefined(); // confirmed on a, not yet on b
    setTimeout(() => (log.held = false), 50);
    await b.caughtUp(2000);
    expect(b.get('task/t2')).toEqual({ status: 'processing' });
    // A log that does not deliver: the wait ends at its bound.
    log.held = true;
    a.transact((tx) => tx.put('task/t3', { status: 'processing' }));
    const started = Date.now();
    await b.caughtUp(100);
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(b.get('task/t3')).toBeUndefined();
  });
});
