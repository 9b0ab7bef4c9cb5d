import type { EventLog, OwnershipChange } from '../ports/event-log.js';
import { parsePartitionId } from '../ports/event-log.js';
import type { Logger } from '../logger.js';
import { sinkPath, type SinkKey } from '../model/levels.js';
import type { FilesRepository } from '../levels/files-repository.js';
import type { SinkPositions } from '../levels/positions.js';
import type { TableService } from '../storage/tables.js';
import { removeSliceFiles } from '../levels/staging.js';
import type { Staging } from '../ports/staging.js';
import type { PartitionHandOver } from './hand-over.js';

export interface ClusterMembershipDeps {
  eventLog: EventLog;
  files: FilesRepository;
  positions: SinkPositions;
  tables: Pick<TableService, 'claimSink'>;
  logger: Logger;
  /** The local level's root: the data directory. */
  dataDir: string;
  staging: Staging;
  /** Cluster mode: how partitions pass between nodes (hand-over.ts). */
  handOver?: PartitionHandOver;
}

/** What the runtime does when this node's partitions change. */
export interface MembershipEvents {
  /** A partition this node worked on went to another node: its writers are to be released. */
  lost(partitionId: string): void;
  /** A partition came to this node and its previous owner released it: its writers are to start. */
  gained(partitionId: string): void;
}

/**
 * Cluster mode: which partitions of the topics this node works on, and their hand-over. The
 * log gives and takes partitions; a partition gained is taken up once its previous owner released it
 * (hand-over.ts), a partition lost is released by the runtime (its writers' files closed and
 * imported first). A sink taken up on this node resumes where the cluster left it (adopt), and
 * the group position of each partition moves with the imports (acknowledgeImported). On a node of
 * its own (a log that is not coordinated) nothing ever changes here.
 */
export class ClusterMembership {
  /** The partitions the log gave this node, each with the position through which its records were done when it came. */
  private readonly owned = new Map<string, number>();
  /** Streams lost and not released yet. */
  private readonly releasing = new Set<string>();
  /** The partitions waiting to be taken up (by ticket). */
  private readonly gaining = new Map<string, number>();
  private tickets = 0;
  private stopping = false;
  private unsubscribe?: () => void;

  constructor(private readonly deps: ClusterMembershipDeps) {}

  start(events: MembershipEvents): void {
    this.unsubscribe = this.deps.eventLog.onOwnership((partitionId, change) => this.changed(partitionId, change, events));
  }

  /** Takes no more partitions. */
  stop(): void {
    this.stopping = true;
    this.unsubscribe?.();
  }

  private changed(partitionId: string, change: OwnershipChange, events: MembershipEvents): void {
    if (!change.owned) {
      this.gaining.delete(partitionId);
      if (!this.owned.delete(partitionId)) return;
      events.lost(partitionId);
      return;
    }
    const ticket = ++this.tickets;
    this.gaining.set(partitionId, ticket);
    void (this.deps.handOver?.awaitRelease(partitionId) ?? Promise.resolve()).then(() => {
      // Still ours after the wait (the group may have taken it away meanwhile)?
      if (this.gaining.get(partitionId) !== ticket || this.stopping) return;
      this.gaining.delete(partitionId);
      this.owned.set(partitionId, change.committedThrough);
      events.gained(partitionId);
    }).catch((err: unknown) => this.deps.logger.error({ err, partitionId }, 'taking up a partition failed'));
  }

  /** Runs the release of a partition lost; meanwhile isReleasing(partition) holds. */
  async release(partitionId: string, release: () => Promise<void>): Promise<void> {
    this.releasing.add(partitionId);
    try {
      await release();
    } finally {
      this.releasing.delete(partitionId);
    }
  }

  /** Whether a partition lost is being released (its writers are left to the release). */
  isReleasing(partitionId: string): boolean {
    return this.releasing.has(partitionId);
  }

  /** The partitions of a topic this node works on. */
  partitionIdsOf(topic: string): string[] {
    return [...this.owned.keys()].filter((s) => parsePartitionId(s).topic === topic);
  }

  /** Forgets the partitions of a topic dropped for good. */
  forgetTopic(topic: string): void {
    for (const partitionId of this.partitionIdsOf(topic)) this.owned.delete(partitionId);
  }

  /** How many partitions this node works on now. */
  get size(): number {
    return this.owned.size;
  }

  /** Marks a partition released (its writers' files imported): the next owner may start. */
  released(partitionId: string): void {
    this.deps.handOver?.released(partitionId);
  }

  /** Every partition this node works on, released (leaving, with everything imported). */
  releaseAll(): void {
    for (const partitionId of this.owned.keys()) this.released(partitionId);
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
  async adopt(key: SinkKey, partitionId: string, hasPeers: () => boolean, startWithPeers: () => number): Promise<number> {
    const { positions } = this.deps;
    const previous = positions.consumerOffset(key);
    // What this node has of the sink from an earlier turn goes before the claim: once this node
    // owns the sink again the fence lets its imports through, and a stale file imported after
    // the claim would write rows that another node imported meanwhile. An import of such a file
    // already under way is refused by the fence (the claim waits for it), or reads a file this
    // removes and fails.
    await this.discardUnimported(key);
    // The claim fences the sink's earlier owners: from here on the target refuses their imports.
    const position = await this.deps.tables.claimSink(sinkPath(key), this.nodeId());
    if (previous === undefined && position === undefined && hasPeers()) return startWithPeers();
    const start = Math.max(this.owned.get(partitionId) ?? 0, position ?? 0);
    positions.adoptAt(key, start, previous);
    this.deps.handOver?.working(partitionId);
    this.deps.logger.info({ sink: sinkPath(key), start, groupPosition: this.owned.get(partitionId), targetPosition: position }, 'sink taken up on this node');
    return start;
  }

  /** Drops what a sink has on this node and is not imported (the next owner reads it again). */
  async discardUnimported(key: SinkKey): Promise<void> {
    await removeSliceFiles(this.deps.dataDir, this.deps.staging, this.deps.files.discardUnimported(key));
  }

  /** The group position of each partition this node works on moves with the imports of its writers. */
  acknowledgeImported(writers: Iterable<{ key: SinkKey; partitionId: string }>): void {
    const through = new Map<string, number>();
    for (const { key, partitionId } of writers) {
      const imported = this.deps.positions.importedThrough(key);
      through.set(partitionId, Math.min(through.get(partitionId) ?? Infinity, imported));
    }
    for (const [partitionId, offset] of through) if (this.owned.has(partitionId)) this.deps.eventLog.acknowledge(partitionId, offset);
  }

  /** This node, as the owner of the sinks it claims. */
  private nodeId(): string {
    if (!this.deps.handOver) throw new Error('cluster mode without a hand-over: no node id to claim sinks with');
    return this.deps.handOver.nodeId;
  }
}
