/**
 * Cluster mode: work on a sink that only the owner of a partition can do (a replay from the
 * event log, the reprocessing of kept mapping failures: both write through the partition's
 * sink writer), asked of that owner through the shared metadata. The node that took the API
 * call writes an order per partition another node works on, and waits; the owner finds the
 * order on its next check tick, runs it, and writes its progress and result into the order.
 *
 * Keys: `cluster/order/<id>`. The asking node deletes its orders when it has their results; an
 * owner deletes finished orders nobody collected after ORPHAN_MS (the asking node died).
 */
import { randomUUID } from 'node:crypto';
import type { KeySpace, MetadataStore } from '../ports/metadata-store.js';

const PREFIX = 'cluster/order/';
/** Orders to the partitions' owners: shared, written in the background. */
export const CLUSTER_ORDER_KEY_SPACES: readonly KeySpace[] = [{ prefix: PREFIX, shared: true, background: true }];
const ORPHAN_MS = 10 * 60_000;

export type OrderKind = 'replay' | 'reprocess';

export interface Order<Request = unknown, Result = unknown> {
  id: string;
  kind: OrderKind;
  /** The partition's id (event-log naming: `<topic>` or `<topic>#<p>`). */
  partitionId: string;
  /** The node process asked to do it. */
  node: string;
  sink: { branchId: number; sourceId: string; sinkId: string };
  request: Request;
  state: 'pending' | 'running' | 'done' | 'failed';
  /** The latest progress (replays), then the result. */
  progress?: Result;
  error?: string;
  at: string;
}

/** An order the owner could not carry out, or whose owner went away: the caller's call fails with this message. */
export class OrderFailedError extends Error {}

export class ClusterOrders {
  /** Orders this node is carrying out (never started twice). */
  private readonly running = new Set<string>();

  constructor(
    private readonly store: MetadataStore,
    readonly nodeId: string,
    private readonly isAlive: (node: string) => boolean,
    private readonly pollMs = 200,
  ) {}

  /**
   * Asks `node` to do the work on `partition`; resolves with its result, reporting its progress on
   * the way. Rejects with OrderFailedError when the owner failed, died, or did not start it
   * within `startTimeoutMs`.
   */
  async ask<Request, Result>(
    order: Pick<Order<Request, Result>, 'kind' | 'partitionId' | 'node' | 'sink' | 'request'>,
    onProgress: (p: Result) => void = () => undefined,
    startTimeoutMs = 30_000,
    /** A running order that shows no change for this long is given up (its answer got lost). */
    quietTimeoutMs = 5 * 60_000,
  ): Promise<Result> {
    const id = randomUUID();
    const key = PREFIX + id;
    this.store.transact((tx) => tx.put(key, { ...order, id, state: 'pending', at: new Date().toISOString() } satisfies Order<Request, Result>));
    const asked = Date.now();
    let lastProgress: string | undefined;
    let lastChange = { at: '', seen: asked };
    try {
      for (;;) {
        await new Promise((r) => setTimeout(r, this.pollMs));
        const current = this.store.get<Order<Request, Result>>(key);
        if (!current) throw new OrderFailedError(`the order to node ${order.node} for ${order.partitionId} disappeared`);
        if (current.progress !== undefined) {
          const json = JSON.stringify(current.progress);
          if (json !== lastProgress) {
            lastProgress = json;
            if (current.state !== 'done') onProgress(current.progress);
          }
        }
        if (current.state === 'done') return current.progress as Result;
        if (current.state === 'failed') throw new OrderFailedError(current.error ?? `node ${order.node} failed on ${order.partitionId}`);
        if (!this.isAlive(order.node)) throw new OrderFailedError(`node ${order.node}, which processes ${order.partitionId}, stopped answering: try again once another node has taken it over`);
        if (current.state === 'pending' && Date.now() - asked > startTimeoutMs) {
          throw new OrderFailedError(`node ${order.node}, which processes ${order.partitionId}, did not take the order up within ${startTimeoutMs} ms`);
        }
        if (current.at !== lastChange.at) lastChange = { at: current.at, seen: Date.now() };
        else if (current.state === 'running' && Date.now() - lastChange.seen > quietTimeoutMs) {
          throw new OrderFailedError(`node ${order.node}, which processes ${order.partitionId}, reported nothing for ${quietTimeoutMs} ms: its answer was lost; try again`);
        }
      }
    } finally {
      this.store.transact((tx) => tx.delete(key));
    }
  }

  /**
   * The owner's side, on every check tick: starts the orders addressed to this node with
   * `carryOut` (which reports progress through its callback), and removes orphaned ones.
   */
  serve(carryOut: (order: Order, progress: (p: unknown) => void) => Promise<unknown>, now = Date.now()): void {
    for (const { key, value: order } of this.store.list<Order>(PREFIX)) {
      if (order.state === 'done' || order.state === 'failed') {
        if (order.node === this.nodeId && now - Date.parse(order.at) > ORPHAN_MS) this.store.transact((tx) => tx.delete(key));
        continue;
      }
      if (order.node !== this.nodeId || this.running.has(order.id)) continue;
      this.running.add(order.id);
      const update = (patch: Partial<Order>) => {
        // The asking node may have given up (and deleted it) meanwhile.
        if (this.store.get(key) === undefined) return;
        this.store.transact((tx) => tx.put(key, { ...order, ...patch, at: new Date().toISOString() }));
      };
      update({ state: 'running' });
      let last = 0;
      void carryOut(order, (p) => {
        // At most a few writes a second into the shared metadata.
        if (Date.now() - last < 500) return;
        last = Date.now();
        update({ state: 'running', progress: p });
      }).then(
        (result) => update({ state: 'done', progress: result }),
        (err: unknown) => update({ state: 'failed', error: err instanceof Error ? err.message : String(err) }),
      )
        // Recording the end can fail only with the metadata store (closing): the asker then meets its deadline.
        .catch(() => undefined)
        .finally(() => this.running.delete(order.id));
    }
  }
}
