/**
 * Cluster mode: the hand-over of a stream (a topic partition) between nodes, through the shared
 * metadata. kafkajs lets no rebalance wait for the node that gives a partition up, so the two
 * nodes agree here instead:
 *
 *  - the owner marks the stream `working` when it takes it up;
 *  - a node that loses it closes its sinks' files for it, imports them, and marks it `released`
 *    (the import moved the sinks' positions in the target, where the next owner starts);
 *  - the next owner waits for `released` before it starts, unless the previous owner is dead
 *    (no heartbeat for `deadAfterMs`: a killed node imports nothing more) or the wait times out.
 *
 * So nothing a previous owner imports can also be read again by the next one, whether the
 * partition moved because a node came, left, or died.
 */
import { parseStream } from '../connectors/event-log/event-log.js';
import type { KeySpace, MetadataStore } from '../connectors/metadata/store.js';
import type { Logger } from '../logger.js';

interface StreamMarker {
  node: string;
  state: 'working' | 'released';
  at: string;
}

const STREAM = 'cluster/stream/';
const NODE = 'cluster/node/';
/** Which node works on which stream, and the nodes' heartbeats: shared, written in the background. */
export const HAND_OVER_KEY_SPACES: readonly KeySpace[] = [
  { prefix: STREAM, shared: true, background: true },
  { prefix: NODE, shared: true, background: true },
];

export interface HandOverOptions {
  /** How often this node says it is alive (default 3 s). */
  heartbeatMs?: number;
  /** A node silent this long is dead (default 10 s). */
  deadAfterMs?: number;
  /** The longest wait for a live previous owner (default 20 s). */
  waitMs?: number;
  /** Called when this node takes a stream up or releases one (the metrics' hand-overs). */
  onHandOver?: (direction: 'taken' | 'released') => void;
}

export class StreamHandOver {
  private lastBeat = 0;
  /** Streams this node marked working (only those it may mark released). */
  private readonly mine = new Set<string>();
  private readonly heartbeatMs: number;
  private readonly deadAfterMs: number;
  private readonly waitMs: number;

  constructor(
    private readonly store: MetadataStore,
    readonly nodeId: string,
    private readonly log: Logger,
    options: HandOverOptions = {},
  ) {
    this.heartbeatMs = options.heartbeatMs ?? 3000;
    this.deadAfterMs = options.deadAfterMs ?? 10_000;
    this.waitMs = options.waitMs ?? 20_000;
    this.onHandOver = options.onHandOver;
  }

  private readonly onHandOver?: (direction: 'taken' | 'released') => void;

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

  /** The marks of a topic's streams: which node works on each (or released it last). */
  marks(topic: string): Array<{ stream: string } & StreamMarker> {
    return this.store.list<StreamMarker>(STREAM + topic)
      .map((e) => ({ stream: e.key.slice(STREAM.length), ...e.value }))
      .filter((m) => parseStream(m.stream).topic === topic);
  }

  working(stream: string): void {
    // Every sink of the stream says so when it starts: the stream is taken up once.
    if (!this.mine.has(stream)) this.onHandOver?.('taken');
    this.mine.add(stream);
    this.mark(stream, 'working');
  }

  /** Marks the stream released, if this node was the one working on it (never another node's mark). */
  released(stream: string): void {
    if (!this.mine.delete(stream)) return;
    this.onHandOver?.('released');
    this.mark(stream, 'released');
  }

  /** Resolves once the stream's previous owner released it, is dead, or the wait timed out. */
  async awaitRelease(stream: string): Promise<void> {
    const started = Date.now();
    for (;;) {
      const marker = this.store.get<StreamMarker>(STREAM + stream);
      if (!marker || marker.node === this.nodeId || marker.state === 'released') return;
      if (!this.isAlive(marker.node)) {
        this.log.info({ stream, previous: marker.node }, 'hand-over: the previous owner is gone; taking the stream up');
        return;
      }
      if (Date.now() - started > this.waitMs) {
        this.log.warn({ stream, previous: marker.node, waitedMs: this.waitMs }, 'hand-over: the previous owner did not release the stream in time; taking it up');
        return;
      }
      await new Promise((r) => setTimeout(r, 200));
    }
  }

  private mark(stream: string, state: StreamMarker['state']): void {
    this.store.transact((tx) => tx.put(STREAM + stream, { node: this.nodeId, state, at: new Date().toISOString() } satisfies StreamMarker));
  }
}
