import type { EventLog } from '../ports/event-log.js';
import { parsePartitionId, sourceTopic, partitionIdOf } from '../ports/event-log.js';
import { instanceId, parseInstanceId } from '../levels/instances.js';
import type { Sink } from '../model/definition.js';
import { readSinks, readSources } from '../definition/repository.js';
import { sinkPath, type SinkKey } from '../model/levels.js';
import type { MappingFailures } from '../levels/mapping-failures.js';
import { FailureLogLimiter, SinkWriter, type ReprocessResult, type SinkWriterDeps } from './sink-writer/index.js';
import { SourceRouter } from './source-router.js';
import type { BacklogGate } from './backlog-gate.js';
import type { ReplayProgress, ReplayRequest } from './replay.js';
import type { LevelOperator } from './level-operator/index.js';
import type { PartitionHandOver } from './hand-over.js';
import type { TableService } from '../storage/tables.js';
import type { ClusterOrders } from './cluster-orders.js';
import { SinkRecovery } from './sink-recovery.js';
import type { SinkFailing } from './sink-health.js';
import { Housekeeping } from './housekeeping.js';
import type { LeftMark } from './render/inflight.js';
import { parkStoppedMappings } from './stopped-mappings.js';
import { ClusterMembership } from './cluster-membership.js';
import { desiredWriters, startOffset } from './reconciliation.js';
import type { Staging } from '../ports/staging.js';

export interface StreamRuntimeDeps extends SinkWriterDeps {
  eventLog: EventLog;
  operator: LevelOperator;
  /** The staging level (its port): a purged sink's staged files go, a discarded file's too. */
  staging: Staging;
  /** The tables: in cluster mode, where a sink taken over resumes (the target's sink positions). */
  tables: Pick<TableService, 'claimSink' | 'forgetPositions'>;
  /** Cluster mode: how partitions pass between nodes (hand-over.ts). */
  handOver?: PartitionHandOver;
  /** Cluster mode: replays and reprocessing asked of the partitions' owners (cluster-orders.ts). */
  orders?: ClusterOrders;
  /** Cluster mode: publishes this node's part of the sinks' statistics (levels/cluster-statistics.ts). */
  publishStatistics?: (sinks: () => readonly SinkKey[], now: number, force?: boolean) => void;
  failures: MappingFailures;
  projectId: number;
  branchId: number;
  checkIntervalMs: number;
  retention: { maxAgeMs: number; maxBytesPerTopic: number };
  /** Where the routers say how far their sinks are behind, for ingestion to hold back (backlog-gate.ts). */
  backlogGate?: BacklogGate;
  /** The in-flight marks the previous process left (render/inflight.ts leftMarks): parked at the start, before any mapping. */
  leftMarks?: { marks: readonly LeftMark[]; files: readonly string[] };
}

/**
 * Keeps the actors of the record's path in line with the definitions: a SourceRouter per
 * partition of a source (its topic, or each partition of it) and a SinkWriter per enabled sink and
 * partition. Definitions are reconciled after every management task and on every check tick; the
 * tick also drives the trigger checks of the writers, the level operator, and the event log
 * retention. In cluster mode only the partitions the log gave this node get actors.
 *
 * The runtime holds the actors and composes the parts that each do one job: which sinks run
 * where (reconciliation.ts), where a sink resumes (levels/positions.ts owns the positions),
 * cluster membership and hand-over (cluster-membership.ts), housekeeping: retention and the
 * purge of what was deleted for good (housekeeping.ts), reprocessing and replays
 * (sink-recovery.ts).
 */
export class StreamRuntime {
  private readonly routers = new Map<string, SourceRouter>();
  private readonly writers = new Map<string, SinkWriter>();
  private timer?: NodeJS.Timeout;
  private reconciling = Promise.resolve();
  private running = false;

  private readonly recovery: SinkRecovery;
  private readonly housekeeping: Housekeeping;
  /** Cluster mode: the partitions this node works on, and their hand-over. */
  private readonly membership: ClusterMembership;
  /** What every writer gets: the deps, with one failure log limiter for all (a sink's partitions share its window). */
  private readonly writerDeps: SinkWriterDeps;

  /** Whether this node runs sinks (the "sink" role): start() was called. */
  get started(): boolean {
    return this.running;
  }

  constructor(private readonly deps: StreamRuntimeDeps) {
    this.recovery = new SinkRecovery(this, deps);
    this.housekeeping = new Housekeeping(deps);
    this.membership = new ClusterMembership(deps);
    this.writerDeps = { ...deps, failureLog: deps.failureLog ?? new FailureLogLimiter() };
  }

  start(): void {
    this.running = true;
    // What the previous process died mapping is parked before a writer starts (see stopped-mappings.ts).
    const left = this.deps.leftMarks;
    if (left && left.files.length > 0) {
      void parkStoppedMappings(left, { ...this.deps, topicOf: (sourceId) => this.topicOf(sourceId) });
    }
    this.membership.start({
      // A partition lost is released: its writers close and import their files first (in the
      // reconcile chain, so that no reconcile sees them meanwhile).
      lost: (partitionId) => {
        const previous = this.reconciling;
        this.reconciling = this.membership.release(partitionId, () => previous.then(() => this.releasePartition(partitionId)))
          .catch((err) => this.deps.logger.error({ err, partitionId }, 'releasing a partition failed'));
        void this.reconcile();
      },
      gained: () => void this.reconcile(),
    });
    this.reconcile();
    this.timer = setInterval(() => this.tick(), this.deps.checkIntervalMs);
    this.timer.unref();
  }

  /**
   * Resolves once the reconciles asked for so far are done: a management task that finished
   * before the call has its definition changes applied (a sink enabled by it has its writing
   * file). Starts no reconcile of its own.
   */
  settled(): Promise<void> {
    return this.reconciling;
  }

  /** Applies definition changes (sink created, changed, disabled, deleted; source deleted). */
  reconcile(): Promise<void> {
    // A node without the sink role runs no actors (definitions change all the same).
    if (!this.running) return this.reconciling;
    this.reconciling = this.reconciling.then(() => this.doReconcile()).catch((err) => this.deps.logger.error({ err }, 'reconcile failed'));
    return this.reconciling;
  }

  private async doReconcile(): Promise<void> {
    const { wanted, defined, sourceIds } = desiredWriters(this.deps.store, this.deps.branchId, (sourceId) => this.partitionsToWork(sourceId));
    for (const [key, writer] of this.writers) {
      if (wanted.has(key)) continue;
      const partitionId = this.partitionIdOfWriter(writer);
      // A partition given up is released by releasePartition (queued behind this reconcile).
      if (this.membership.isReleasing(partitionId)) continue;
      this.writers.delete(key);
      this.routers.get(partitionId)?.removeTarget(writer.sinkId);
      if (defined.has(sinkPath({ ...writer.key, sinkId: parseInstanceId(writer.sinkId).sinkId }))) {
        writer.send({ type: 'close' });
        void writer.stop().catch((err: unknown) => this.deps.logger.error({ err, sink: key }, 'stopping a sink failed'));
        this.deps.logger.info({ sink: key }, 'sink stopped: its file is closed and will be imported');
      } else {
        await writer.stop();
      }
    }
    await this.purgeDeleted(defined, sourceIds);
    const started: SinkWriter[] = [];
    for (const [key, { source, sink, partitionId, partition }] of wanted) {
      const existing = this.writers.get(key);
      if (existing) {
        if (existing.versions !== `${source.version.number}/${sink.version.number}`) existing.send({ type: 'reload', sink, source });
        continue;
      }
      const start = this.deps.eventLog.coordinated ? await this.adoptionStart(sink, partitionId, partition) : this.startOffset(sink, partitionId, partition);
      const writer = new SinkWriter(sink, source, start, this.writerDeps, partition);
      this.writers.set(key, writer);
      this.routerFor(partitionId, source.sourceId).addTarget(writer);
      started.push(writer);
    }
    // An active sink has its writing file from the start (the reference opens it with the sink),
    // not from the next check tick: the statistics, which wait for this reconcile (settled()),
    // list it right after the task that created or enabled the sink. A writer that cannot open
    // it retries (the actor restarts) a bounded number of times, and is then failing (sink-health.ts).
    await Promise.all(started.map((writer) => writer.open().then(
      () => undefined,
      (err: unknown) => this.deps.logger.warn({ err, sink: sinkPath(writer.key) }, 'the sink writer could not open its file yet'),
    )));
  }

  /** Sinks and sources deleted for good: see Housekeeping.purgeDeleted. */
  private purgeDeleted(defined: Set<string>, sourceIds: Set<string>): Promise<void> {
    return this.housekeeping.purgeDeleted(
      defined,
      sourceIds,
      [...this.routers.values()].map((r) => r.sourceId),
      (sourceId) => this.topicOf(sourceId),
      async (topic) => {
        for (const [partitionId, router] of [...this.routers].filter(([s]) => parsePartitionId(s).topic === topic)) {
          await router.stop();
          this.routers.delete(partitionId);
        }
        this.membership.forgetTopic(topic);
      },
    );
  }

  /** Where a sink starts reading its source on a node of its own (reconciliation.ts startOffset), with the writers of its partition as peers. */
  private startOffset(sink: Sink, partitionId: string, partition: number): number {
    const peers = [...this.writers.values()].filter((w) => this.partitionIdOfWriter(w) === partitionId);
    return startOffset(this.deps.store, this.deps, sink, partition, peers.map((w) => w.committedOffset));
  }

  /** The writers of a partition this node gave up: their files closed and imported, then the partition marked released. */
  private async releasePartition(partitionId: string): Promise<void> {
    const leaving = [...this.writers].filter(([, w]) => this.partitionIdOfWriter(w) === partitionId);
    const router = this.routers.get(partitionId);
    this.routers.delete(partitionId);
    for (const [key] of leaving) this.writers.delete(key);
    await router?.stop();
    const left = await this.flushWriters(leaving.map(([, w]) => w));
    await Promise.all(leaving.map(([, w]) => w.stop()));
    // What could not be imported in time is dropped: the next owner reads it again from its position.
    for (const key of left) await this.membership.discardUnimported(key);
    this.membership.released(partitionId);
    this.deps.logger.info({ partitionId, sinks: leaving.length, notImported: left.length }, 'partition released to another node');
  }

  /**
   * The partitions of a source with enabled sinks that this node works on: its topic (one partition)
   * on a node of its own; in cluster mode the topic is claimed (this node takes part in the
   * split of its partitions) and the partitions the log gave this node are its partitions.
   */
  private partitionsToWork(sourceId: string): Array<{ partitionId: string; partition: number }> {
    const topic = this.topicOf(sourceId);
    if (!this.deps.eventLog.coordinated) return [{ partitionId: topic, partition: 0 }];
    this.deps.eventLog.claim(topic);
    return this.membership.partitionIdsOf(topic).map((partitionId) => ({ partitionId, partition: parsePartitionId(partitionId).partition }));
  }

  /** The partition a writer reads. */
  partitionIdOfWriter(writer: SinkWriter): string {
    return partitionIdOf(this.topicOf(writer.key.sourceId), writer.partition);
  }

  /** Cluster mode: where a sink starts on this node (ClusterMembership.adopt). */
  private adoptionStart(sink: Sink, partitionId: string, partition: number): Promise<number> {
    const key: SinkKey = { branchId: sink.branchId, sourceId: sink.sourceId, sinkId: instanceId(sink.sinkId, partition) };
    return this.membership.adopt(
      key,
      partitionId,
      () => [...this.writers.values()].some((w) => this.partitionIdOfWriter(w) === partitionId),
      () => this.startOffset(sink, partitionId, partition),
    );
  }

  /** Every writer of this node with the partition it reads. */
  private writerPartitionKeys(): Array<{ key: SinkKey; partitionId: string }> {
    return [...this.writers.values()].map((w) => ({ key: w.key, partitionId: this.partitionIdOfWriter(w) }));
  }

  topicOf(sourceId: string): string {
    return sourceTopic(this.deps.projectId, this.deps.branchId, sourceId);
  }

  /** Cluster mode: this node's part of the statistics of every sink of the branch. */
  private publishStatistics(now: number, force = false): void {
    const publish = this.deps.publishStatistics;
    if (!publish) return;
    const { store, branchId } = this.deps;
    // Read only when a publication is due (every few seconds), not on every tick.
    const sinks = () => readSources(store, branchId).flatMap((source) => readSinks(store, branchId, source.sourceId))
      .filter((sink) => !sink.deleted)
      .map((sink) => ({ branchId, sourceId: sink.sourceId, sinkId: sink.sinkId }));
    try {
      publish(sinks, now, force);
    } catch (err) {
      this.deps.logger.warn({ err }, 'publishing the statistics of this node failed');
    }
  }

  private routerFor(partitionId: string, sourceId: string): SourceRouter {
    let router = this.routers.get(partitionId);
    if (!router) {
      router = new SourceRouter(partitionId, sourceId, this.deps.eventLog, this.deps.renderer, this.deps.logger, this.deps.backlogGate);
      this.routers.set(partitionId, router);
    }
    return router;
  }

  tick(now = Date.now()): void {
    for (const writer of this.writers.values()) writer.send({ type: 'tick', now });
    this.deps.operator.tick(now);
    for (const router of this.routers.values()) router.pump();
    if (this.deps.eventLog.coordinated) {
      this.membership.acknowledgeImported(this.writerPartitionKeys());
      this.membership.heartbeat(now);
      this.publishStatistics(now);
      this.deps.orders?.serve((order, progress) => this.recovery.carryOut(order, progress), now);
    }
    this.housekeeping.retention(now, this.writerPartitionKeys());
    void this.reconcile();
  }

  /** See SinkRecovery.reprocessFailures. */
  reprocessFailures(sink: Sink): Promise<ReprocessResult> {
    return this.recovery.reprocessFailures(sink);
  }

  /** See SinkRecovery.replay. */
  replay(sink: Sink, request: ReplayRequest, progress: (p: ReplayProgress) => void): Promise<ReplayProgress> {
    return this.recovery.replay(sink, request, progress);
  }

  /** Every sink writer of this node with the partition it reads and whether it is failing (the metrics' lag and failing gauges). */
  writerPartitions(): Array<{ key: SinkKey; partitionId: string; failing: boolean }> {
    return [...this.writers.values()].map((w) => ({ key: w.key, partitionId: this.partitionIdOfWriter(w), failing: w.failing !== undefined }));
  }

  /** Whether a sink is failing on this node (the first of its writers that is, by partition): for its statistics. */
  failingOf(sink: Pick<Sink, 'sourceId' | 'sinkId'>): SinkFailing | undefined {
    return this.writersOf(sink).find((w) => w.failing)?.failing;
  }

  /** Cluster mode: how many partitions this node works on now. */
  ownedPartitionCount(): number {
    return this.membership.size;
  }

  /** The writers of a sink on this node (one per partition of its source this node works on). */
  writersOf(sink: Pick<Sink, 'sourceId' | 'sinkId'>): SinkWriter[] {
    return [...this.writers.values()].filter((w) => w.key.sourceId === sink.sourceId && parseInstanceId(w.sinkId).sinkId === sink.sinkId).sort((a, b) => a.partition - b.partition);
  }

  /**
   * Cluster mode, before a node leaves: its sinks' files are closed and imported, and the group
   * positions moved past them, so that the node taking its topics over starts where it stopped
   * instead of reading again what was not imported yet. Bounded: what is left after the timeout
   * is read again by the next owner (nothing is lost, the group position was never past it).
   */
  private async handOver(): Promise<void> {
    const left = await this.flushWriters([...this.writers.values()]);
    this.membership.acknowledgeImported(this.writerPartitionKeys());
    if (left.length === 0) this.membership.releaseAll();
    if (left.length > 0) this.deps.logger.warn({ sinks: left.map(sinkPath) }, 'leaving with files not imported: the next owner of their topics reads them again');
    else this.deps.logger.info({ sinks: this.writers.size }, 'handed over: every file imported and the group positions committed');
  }

  /** Closes the writers' files and drives their imports; returns the writers' keys with files still not imported after `timeoutMs`. */
  private async flushWriters(writers: SinkWriter[], timeoutMs = 15_000): Promise<SinkKey[]> {
    const { files, operator } = this.deps;
    const keys = writers.map((w) => w.key);
    for (const writer of writers) writer.send({ type: 'close' });
    const deadline = Date.now() + timeoutMs;
    const pending = () => keys.filter((k) => files.writingFile(k) || files.listFiles(k).some((f) => f.state !== 'imported'));
    let left = pending();
    while (left.length > 0 && Date.now() < deadline) {
      operator.tick(Date.now());
      await new Promise((r) => setTimeout(r, 100));
      left = pending();
    }
    return left;
  }

  /** Stops taking work and lets the actors finish what they hold; writing files stay open for the next start. */
  async stop(): Promise<void> {
    clearInterval(this.timer);
    this.membership.stop();
    await this.reconciling;
    await Promise.all([...this.routers.values()].map((r) => r.stop()));
    if (this.deps.eventLog.coordinated && this.writers.size > 0) await this.handOver();
    await Promise.all([...this.writers.values()].map((w) => w.stop()));
    await this.deps.operator.stop();
    // What the hand-over imported, for the statistics the other nodes show.
    if (this.deps.eventLog.coordinated) this.publishStatistics(Date.now(), true);
  }
}
