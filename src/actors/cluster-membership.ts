import type { EventLog, OwnershipChange } from '../connectors/event-log/event-log.js';
import { parseStream } from '../connectors/event-log/event-log.js';
import type { Logger } from '../logger.js';
import { removeLocalFiles } from '../storage/levels/local.js';
import { sinkPath, type SinkKey } from '../storage/levels/model.js';
import type { LevelRepository } from '../storage/levels/repository.js';
import type { TableService } from '../storage/tables.js';
import type { Staging } from '../storage/levels/staging.js';
import type { StreamHandOver } from './hand-over.js';

export interface ClusterMembershipDeps {
  eventLog: EventLog;
  levels: LevelRepository;
  tables: Pick<TableService, 'claimStream'>;
  logger: Logger;
  /** The local level's root: the data directory. */
  dataDir: string;
  staging: Staging;
  /** Cluster mode: how streams pass between nodes (hand-over.ts). */
  handOver?: StreamHandOver;
}

/** What the runtime does when this node's streams change. */
export interface MembershipEvents {
  /** A stream this node worked on went to another node: its writers are to be released. */
  lost(stream: string): void;
  /** A stream came to this node and its previous owner released it: its writers are to start. */
  gained(stream: string): void;
}

/**
 * Cluster mode: which streams (topic partitions) this node works on, and their hand-over. The
 * log gives and takes streams; a stream gained is taken up once its previous owner released it
 * (hand-over.ts), a stream lost is released by the runtime (its writers' files closed and
 * imported first). A sink taken up on this node resumes where the cluster left it (adopt), and
 * the group position of each stream moves with the imports (acknowledgeImported). On a node of
 * its own (a log that is not coordinated) nothing ever changes here.
 */
export class ClusterMembership {
  /** The streams the log gave this node, each with the position through which its records were done when it came. */
  private readonly owned = new Map<string, number>();
  /** Streams lost and not released yet. */
  private readonly releasing = new Set<string>();
  /** The streams waiting to be taken up (by ticket). */
  private readonly gaining = new Map<string, number>();
  private tickets = 0;
  private stopping = false;
  private unsubscribe?: () => void;

  constructor(private readonly deps: ClusterMembershipDeps) {}

  start(events: MembershipEvents): void {
    this.unsubscribe = this.deps.eventLog.onOwnership((stream, change) => this.changed(stream, change, events));
  }

  /** Takes no more streams. */
  stop(): void {
    this.stopping = true;
    this.unsubscribe?.();
  }

  private changed(stream: string, change: OwnershipChange, events: MembershipEvents): void {
    if (!change.owned) {
      this.gaining.delete(stream);
      if (!this.owned.delete(stream)) return;
      events.lost(stream);
      return;
    }
    const ticket = ++this.tickets;
    this.gaining.set(stream, ticket);
    void (this.deps.handOver?.awaitRelease(stream) ?? Promise.resolve()).then(() => {
      // Still ours after the wait (the group may have taken it away meanwhile)?
      if (this.gaining.get(stream) !== ticket || this.stopping) return;
      this.gaining.delete(stream);
      this.owned.set(stream, change.committedThrough);
      events.gained(stream);
    }).catch((err: unknown) => this.deps.logger.error({ err, stream }, 'taking up a stream failed'));
  }

  /** Runs the release of a stream lost; meanwhile isReleasing(stream) holds. */
  async release(stream: string, release: () => Promise<void>): Promise<void> {
    this.releasing.add(stream);
    try {
      await release();
    } finally {
      this.releasing.delete(stream);
    }
  }

  /** Whether a stream lost is being released (its writers are left to the release). */
  isReleasing(stream: string): boolean {
    return this.releasing.has(stream);
  }

  /** The streams of a topic this node works on. */
  streamsOf(topic: string): string[] {
    return [...this.owned.keys()].filter((s) => parseStream(s).topic === topic);
  }

  /** Forgets the streams of a topic dropped for good. */
  forgetTopic(topic: string): void {
    for (const stream of this.streamsOf(topic)) this.owned.delete(stream);
  }

  /** How many streams (topic partitions) this node works on now. */
  get size(): number {
    return this.owned.size;
  }

  /** Marks a stream released (its writers' files imported): the next owner may start. */
  released(stream: string): void {
    this.deps.handOver?.released(stream);
  }

  /** Every stream this node works on, released (leaving, with everything imported). */
  releaseAll(): void {
    for (const stream of this.owned.keys()) this.released(stream);
  }

  heartbeat(now: number): void {
    this.deps.handOver?.heartbeat(now);
  }

  /**
   * Where a sink starts on this node. Whatever this node still has of it from an earlier turn
   * is dropped (another node may have imported those records since), and it reads on after the
   * later of the topic's group position (records every sink has in the target) and the sink's
   * own position in the target. A sink new to the cluster, on a topic this node already works
   * on (`hasPeers`), starts like on a single node, with its peers (`startWithPeers`).
   */
  async adopt(key: SinkKey, stream: string, hasPeers: () => boolean, startWithPeers: () => number): Promise<number> {
    const { levels } = this.deps;
    const previous = levels.consumerOffset(key);
    // The claim fences the sink's earlier owners: from here on the target refuses their imports.
    const position = await this.deps.tables.claimStream(sinkPath(key), this.nodeId());
    if (previous === undefined && position === undefined && hasPeers()) return startWithPeers();
    await this.discardUnimported(key);
    const start = Math.max(this.owned.get(stream) ?? 0, position ?? 0);
    levels.adoptAt(key, start, previous);
    this.deps.handOver?.working(stream);
    this.deps.logger.info({ sink: sinkPath(key), start, groupPosition: this.owned.get(stream), targetPosition: position }, 'sink taken up on this node');
    return start;
  }

  /** Drops what a sink has on this node and is not imported (the next owner reads it again). */
  async discardUnimported(key: SinkKey): Promise<void> {
    const slices = this.deps.levels.discardUnimported(key);
    await removeLocalFiles(this.deps.dataDir, slices);
    await this.deps.staging.remove(slices.flatMap((s) => (s.stagingPath ? [s.stagingPath] : [])));
  }

  /** The group position of each stream this node works on moves with the imports of its writers. */
  acknowledgeImported(writers: Iterable<{ key: SinkKey; stream: string }>): void {
    const through = new Map<string, number>();
    for (const { key, stream } of writers) {
      const imported = this.deps.levels.importedThrough(key);
      through.set(stream, Math.min(through.get(stream) ?? Infinity, imported));
    }
    for (const [stream, offset] of through) if (this.owned.has(stream)) this.deps.eventLog.acknowledge(stream, offset);
  }

  /** This node, as the owner of the sinks' streams it claims. */
  private nodeId(): string {
    if (!this.deps.handOver) throw new Error('cluster mode without a hand-over: no node id to claim streams with');
    return this.deps.handOver.nodeId;
  }
}
