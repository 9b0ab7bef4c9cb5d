/**
 * A source deleted for good (cascade) leaves no moment in which its sinks are gone and the
 * source is still there: the stream runtime would purge the sinks' data but keep the source's
 * topic, and a source created again under the same id would read the old records.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import type { Entry, ListOptions, MetadataStore, MetadataTx } from '../../../src/ports/metadata-store.js';
import { TaskRunner } from '../../../src/definition/tasks.js';
import { keys } from '../../../src/definition/repository.js';
import { SinkLifecycle } from '../../../src/definition/sink-lifecycle.js';
import { SinkService } from '../../../src/definition/sinks.js';
import { SourceService } from '../../../src/definition/sources.js';
import { TokenService } from '../../../src/storage/tokens.js';

/** The LMDB store, with the keys each transaction deleted. */
class RecordingStore implements MetadataStore {
  readonly deletions: string[][] = [];
  constructor(private readonly inner: LmdbMetadataStore) {}
  get<T>(key: string): T | undefined {
    return this.inner.get<T>(key);
  }
  list<T>(prefix: string, options?: ListOptions): Entry<T>[] {
    return this.inner.list<T>(prefix, options);
  }
  count(prefix: string): number {
    return this.inner.count(prefix);
  }
  transact<R>(fn: (tx: MetadataTx) => R): R {
    return this.inner.transact((tx) => fn(this.recording(tx)));
  }
  transactAsync<R>(fn: (tx: MetadataTx) => R): Promise<R> {
    return this.inner.transactAsync((tx) => fn(this.recording(tx)));
  }
  close(): Promise<void> {
    return this.inner.close();
  }
  writeMark(): number {
    return this.inner.writeMark();
  }
  settled(): Promise<void> {
    return this.inner.settled();
  }
  onRemoteChange(): () => void {
    return this.inner.onRemoteChange();
  }
  caughtUp(): Promise<void> {
    return this.inner.caughtUp();
  }
  private recording(tx: MetadataTx): MetadataTx {
    const deleted: string[] = [];
    this.deletions.push(deleted);
    return {
      get: (k) => tx.get(k),
      list: (p, o) => tx.list(p, o),
      count: (p) => tx.count(p),
      put: (k, v) => tx.put(k, v),
      delete: (k) => {
        deleted.push(k);
        tx.delete(k);
      },
    };
  }
}

let dir: string;
let lmdb: LmdbMetadataStore;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-cascade-'));
  lmdb = new LmdbMetadataStore(join(dir, 'metadata'));
});

afterEach(async () => {
  await lmdb.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('cascade delete of a source', () => {
  it('removes the sinks\' definitions in the same transaction as the source\'s', async () => {
    const store = new RecordingStore(lmdb);
    const tasks = new TaskRunner(store, pino({ level: 'silent' }), 'http://localhost');
    const tick = () => new Promise<void>((r) => setTimeout(r, 1));
    // Table calls yield, as the real ones do: a transaction of its own between them would show.
    const tables = { ensureTable: async () => (await tick(), { created: true, added: [] }), findTable: async () => undefined, dropTable: tick, dropBucket: tick };
    const lifecycle = new SinkLifecycle(store, new TokenService(store, 1), tables);
    const sources = new SourceService(store, tasks, 1, lifecycle);
    const sinks = new SinkService(store, tasks, 1, lifecycle, async () => undefined);
    const by = { type: 'system' as const };
    sources.create(1, { sourceId: 'gone', name: 'Gone', type: 'http' } as never, by, 'http://localhost');
    await tasks.drain();
    for (const sinkId of ['a', 'b']) {
      await sinks.create(1, 'gone', { sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId: `in.c-gone.${sinkId}`, mapping: { columns: [{ type: 'body', name: 'body' }] } } } as never, by, 'http://localhost');
      await tasks.drain();
    }
    expect(store.get(keys.sink(1, 'gone', 'b'))).toBeDefined();

    store.deletions.length = 0;
    const task = sources.delete(1, 'gone', true, by, 'http://localhost');
    await tasks.drain();
    expect(tasks.get(task.taskId)?.status).toBe('success');
    const definitions = [keys.source(1, 'gone'), keys.sink(1, 'gone', 'a'), keys.sink(1, 'gone', 'b')];
    const touching = store.deletions.filter((d) => d.some((k) => definitions.includes(k)));
    expect(touching).toHaveLength(1);
    expect(touching[0]).toEqual(expect.arrayContaining(definitions));
    expect(store.get(keys.source(1, 'gone'))).toBeUndefined();
    expect(store.list(keys.sinks(1, 'gone'))).toEqual([]);
  });
});
