/**
 * Orders between cluster nodes (actors/cluster-orders.ts), on one metadata store standing for
 * the shared metadata both nodes see.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { LmdbMetadataStore } from '../../../src/adapters/metadata/lmdb-store.js';
import { ClusterOrders, OrderFailedError, type Order } from '../../../src/actors/cluster-orders.js';

let dir: string;
let store: LmdbMetadataStore;
const alive = new Set<string>();
const SINK = { branchId: 1, sourceId: 'src', sinkId: 'rows' };

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-orders-'));
  store = new LmdbMetadataStore(join(dir, 'metadata'));
  alive.clear();
  alive.add('asker').add('owner');
});

afterEach(async () => {
  await store.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Serves the owner's orders every 20 ms until stopped. */
function owner(carryOut: (order: Order, progress: (p: unknown) => void) => Promise<unknown>): () => void {
  const orders = new ClusterOrders(store, 'owner', (n) => alive.has(n), 20);
  const timer = setInterval(() => orders.serve(carryOut), 20);
  return () => clearInterval(timer);
}

describe('ClusterOrders', () => {
  it('the owner carries an order out; the asker gets its progress and result, and the order is gone', async () => {
    const seen: Order[] = [];
    const stop = owner(async (order, progress) => {
      seen.push(order);
      progress({ scanned: 1 });
      await new Promise((r) => setTimeout(r, 60));
      return { done: (order.request as { n: number }).n * 2 };
    });
    const asker = new ClusterOrders(store, 'asker', (n) => alive.has(n), 20);
    const progress: unknown[] = [];
    try {
      const result = await asker.ask({ kind: 'replay', partitionId: '1.1.src#2', node: 'owner', sink: SINK, request: { n: 21 } }, (p) => progress.push(p));
      expect(result).toEqual({ done: 42 });
    } finally {
      stop();
    }
    expect(seen).toHaveLength(1);
    expect(seen[0]).toMatchObject({ kind: 'replay', partitionId: '1.1.src#2', node: 'owner', sink: SINK });
    expect(progress).toEqual([{ scanned: 1 }]);
    expect(store.list('cluster/order/')).toEqual([]);
  });

  it('a failure of the owner fails the ask with its message', async () => {
    const stop = owner(async () => {
      throw new Error('partition 2 of the sink is not worked on by node owner any more: try again');
    });
    const asker = new ClusterOrders(store, 'asker', (n) => alive.has(n), 20);
    try {
      const err = await asker.ask({ kind: 'reprocess', partitionId: '1.1.src#2', node: 'owner', sink: SINK, request: null }).then(() => undefined, (e: unknown) => e);
      expect(err).toBeInstanceOf(OrderFailedError);
      expect((err as Error).message).toContain('not worked on by node owner any more');
    } finally {
      stop();
    }
    expect(store.list('cluster/order/')).toEqual([]);
  });

  it('an owner that dies, or never takes the order up, fails the ask instead of hanging it', async () => {
    const asker = new ClusterOrders(store, 'asker', (n) => alive.has(n), 20);
    alive.delete('owner');
    await expect(asker.ask({ kind: 'replay', partitionId: '1.1.src', node: 'owner', sink: SINK, request: null })).rejects.toThrow(/stopped answering/);
    alive.add('owner');
    await expect(asker.ask({ kind: 'replay', partitionId: '1.1.src', node: 'owner', sink: SINK, request: null }, undefined, 100)).rejects.toThrow(/did not take the order up within 100 ms/);
    expect(store.list('cluster/order/')).toEqual([]);
  });

  it('a running order whose answer never comes is given up after the quiet timeout', async () => {
    const stop = owner(() => new Promise(() => undefined)); // runs forever, says nothing
    const asker = new ClusterOrders(store, 'asker', (n) => alive.has(n), 20);
    try {
      await expect(asker.ask({ kind: 'reprocess', partitionId: '1.1.src', node: 'owner', sink: SINK, request: null }, undefined, 1000, 300)).rejects.toThrow(/reported nothing for 300 ms/);
    } finally {
      stop();
    }
  });

  it('orders for other nodes are left alone', async () => {
    store.transact((tx) => tx.put('cluster/order/x', { id: 'x', kind: 'replay', partitionId: '1.1.src', node: 'elsewhere', sink: SINK, request: null, state: 'pending', at: new Date().toISOString() } satisfies Order));
    let carried = 0;
    new ClusterOrders(store, 'owner', () => true).serve(async () => ++carried);
    await new Promise((r) => setTimeout(r, 30));
    expect(carried).toBe(0);
    expect(store.get<Order>('cluster/order/x')?.state).toBe('pending');
  });
});
