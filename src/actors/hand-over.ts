/**
 * Cluster mode: the hand-over of a partition between nodes, through the shared
 * metadata. kafkajs lets no rebalance wait for the node that gives a partition up, so the two
 * nodes agree here instead:
 *
 *  - the owner marks the partition `working` when it takes it up;
 *  - a node that loses it closes its sinks' files for it, imports them, and marks it `released`
 *    (the import moved the sinks' positions in the target, where the next owner starts);
 *  - the next owner waits for `released` before it starts, unless the previous owner is dead
 *    (no heartbeat for `deadAfterMs`: a killed node imports nothing more) or the wait times out.
 *
 * So nothing a previous owner imports can also be read again by the next one, whether the
 * partition moved because a node came, left, or died.
 */
import { parsePartitionId } from '../ports/event-log.js';
import type { KeySpace, MetadataStore } from '../ports/metadata-store.js';
import type { Logger } from '../logger.js';
import type { Metrics } from '../observability/metrics.js';
import { HandOverEvents } from './hand-over-events.js';

interface PartitionMarker {
  node: string;
  state: 'working' | 'released';
  at: string;
}

/** The marks' keys: `cluster/stream/<partition id>` (named before a partition was called a partition; kept, so that the shared metadata stays readable). */
const MARK = 'cluster/stream/';
const NODE = 'cluster/node/';
/** Which node works on which partition, and the nodes' heartbeats: shared, written in the background. */
export const HAND_OVER_KEY_SPACES: readonly KeySpace[] = [
  { prefix: MARK, shared: true, background: true },
  { prefix: NODE, shared: true, background: true },
];

export interface HandOverOptions {
  /** How often this node says it is alive (default 3 s). */
  heartbeatMs?: number;
  /** A node silent this long is dead (default 10 s). */
  deadAfterMs?: number;
  /** The longest wait for a live previous owner (default 20 s). */
  waitMs?: number;
  /** Where the hand-overs are counted (none in tests that do not look). */
  metrics?: Metrics;
}

export class PartitionHandOver {
  private lastBeat = 0;
  /** Streams this node marked working (only those it may mark released). */
  private readonly mine = new Set<string>();
  private readonly heartbeatMs: number;
  private readonly deadAfterMs: number;
  private readonly waitMs: number;

  constructor(
    private readonly store: MetadataStore,
    readonly nodeId: string,
    log: Logger,
    options: HandOverOptions = {},
  ) {
    this.heartbeatMs = options.heartbeatMs ?? 3000;
    this.deadAfterMs = options.deadAfterMs ?? 10_000;
    this.waitMs = options.waitMs ?? 20_000;
    this.events = new HandOverEvents(log, options.metrics);
  }

  private readonly events: HandOverEvents;

  /** Called on every check tick: a heartbeat at most every `heartbeatMs`. */
  heartbeat(now = Date.now()): void {
    if (now - this.lastBeat < this.heartbeatMs) return;
    this.lastBeat = now;
    this.store.transact((tx) => tx.put(NODE + this.nodeId, now));
  }

  /** Whether a node process is alive: this one, or one whose heartbeat is recent. */
  isAlive(node: string, now = Date.now()): boolean {
    if (node === this.nodeId) return true;
    const beat = this.store.get<number>(NODE + node);
    return beat !== undefined && now - beat <= this.deadAfterMs;
  }

  /** The marks of a topic's partitions: which node works on each (or released it last). */
  marks(topic: string): Array<{ partitionId: string } & PartitionMarker> {
    return this.store.list<PartitionMarker>(MARK + topic)
      .map((e) => ({ partitionId: e.key.slice(MARK.length), ...e.value }))
      .filter((m) => parsePartitionId(m.partitionId).topic === topic);
  }

  working(partitionId: string): void {
    // Every sink of the partition says so when it starts: the partition is taken up once.
    if (!this.mine.has(partitionId)) this.events.taken();
    this.mine.add(partitionId);
    this.mark(partitionId, 'working');
  }

  /** Marks the partition released, if this node was the one working on it (never another node's mark). */
  released(partitionId: string): void {
    if (!this.mine.delete(partitionId)) return;
    this.events.released();
    this.mark(partitionId, 'released');
  }

  /** Resolves once the partition's previous owner released it, is dead, or the wait timed out. */
  async awaitRelease(partitionId: string): Promise<void> {
    const started = Date.now();
    for (;;) {
      const marker = this.store.get<PartitionMarker>(MARK + partitionId);
      if (!marker || marker.node === this.nodeId || marker.state === 'released') return;
      if (!this.isAlive(marker.node)) {
        this.events.previousOwnerGone(partitionId, marker.node);
        return;
      }
      if (Date.now() - started > this.waitMs) {
        this.events.releaseTimedOut(partitionId, marker.node, this.waitMs);
        return;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private mark(partitionId: string, state: PartitionMarker['state']): void {
    this.store.transact((tx) => tx.put(MARK + partitionId, { node: this.nodeId, state, at: new Date().toISOString() } satisfies PartitionMarker));
  }
}
