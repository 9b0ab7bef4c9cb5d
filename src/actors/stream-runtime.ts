import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { EventLog } from '../connectors/event-log/event-log.js';
import { parseStream, sourceTopic, streamOf } from '../connectors/event-log/event-log.js';
import { instanceId, parseInstanceId } from '../storage/levels/instances.js';
import type { Sink, Source } from '../definition/model.js';
import { readSinks, readSources } from '../definition/repository.js';
import { levelKeys, sinkPath, type SinkKey } from '../storage/levels/model.js';
import type { MappingFailures } from '../storage/mapping-failures.js';
import { SinkWriter, type ReprocessResult, type SinkWriterDeps } from './sink-writer.js';
import { SourceRouter } from './source-router.js';
import type { ReplayProgress, ReplayRequest } from './replay.js';
import { restartAt, SEEN_EVERYTHING, type SeenOffsets } from '../pipeline/seen-offsets.js';
import type { StorageOperator } from './storage-operator.js';
import type { StreamHandOver } from './hand-over.js';
import type { TableService } from '../storage/tables.js';
import type { OwnershipChange } from '../connectors/event-log/event-log.js';
import { sourceStreams } from '../storage/levels/importer.js';
import { removeSliceFiles } from '../storage/levels/local-slices.js';
import { adoptedAt } from '../pipeline/seen-offsets.js';
import type { ClusterOrders } from './cluster-orders.js';
import { SinkRecovery } from './sink-recovery.js';
import { FailureLogLimiter } from './failure-log.js';
import { failingKey, type SinkFailing } from './sink-health.js';

export interface StreamRuntimeDeps extends SinkWriterDeps {
  eventLog: EventLog;
  operator: StorageOperator;
  /** The tables: in cluster mode, where a sink taken over resumes (the target's stream positions). */
  tables: Pick<TableService, 'claimStream' | 'forgetPositions'>;
  /** Cluster mode: how streams pass between nodes (hand-over.ts). */
  handOver?: StreamHandOver;
  /** Cluster mode: replays and reprocessing asked of the partitions' owners (cluster-orders.ts). */
  orders?: ClusterOrders;
  /** Cluster mode: publishes this node's part of the sinks' statistics (storage/cluster-statistics.ts). */
  publishStatistics?: (sinks: () => readonly SinkKey[], now: number, force?: boolean) => void;
  failures: MappingFailures;
  projectId: number;
  branchId: number;
  checkIntervalMs: number;
  retention: { maxAgeMs: number; maxBytesPerTopic: number };
}

/** One writer to run: a sink on one stream (partition) of its source's topic. */
interface WantedWriter {
  source: Source;
  sink: Sink;
  stream: string;
  partition: number;
}

/**
 * Keeps the actors of the record's path in line with the definitions: a SourceRouter per
 * stream of a source (its topic, or each partition of it) and a SinkWriter per enabled sink and
 * stream. Definitions are reconciled after every management task and on every check tick; the
 * tick also drives the trigger checks of the writers, the storage operator, and the event log
 * retention. In cluster mode only the streams the log gave this node get actors.
 */
export class StreamRuntime {
  private readonly routers = new Map<string, SourceRouter>();
  private readonly writers = new Map<string, SinkWriter>();
  private timer?: NodeJS.Timeout;
  private reconciling = Promise.resolve();
  private lastRetentionAt = 0;
  private running = false;
  private isStopping = false;
  /** Cluster mode: streams lost and not released yet, and the streams waiting to be taken up (by ticket). */
  private readonly releasing = new Set<string>();
  private readonly gaining = new Map<string, number>();
  private tickets = 0;
  /**
   * Cluster mode (a coordinated log): the streams the log gave this node, each with the position
   * through which its records were done when it came (where its sinks resume).
   */
  private readonly owned = new Map<string, number>();
  private unsubscribeOwnership?: () => void;

  private readonly recovery: SinkRecovery;
  /** What every writer gets: the deps, with one failure log limiter for all (a sink's partitions share its window). */
  private readonly writerDeps: SinkWriterDeps;

  /** Whether this node runs sinks (the "sink" role): start() was called. */
  get started(): boolean {
    return this.running;
  }

  constructor(private readonly deps: StreamRuntimeDeps) {
    this.recovery = new SinkRecovery(this, deps);
    this.writerDeps = { ...deps, failureLog: deps.failureLog ?? new FailureLogLimiter() };
  }

  start(): void {
    this.running = true;
    this.unsubscribeOwnership = this.deps.eventLog.onOwnership((stream, change) => this.ownershipChanged(stream, change));
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
    const { store, branchId } = this.deps;
    const wanted = new Map<string, WantedWriter>();
    const defined = new Set<string>();
    const sourceIds = new Set<string>();
    for (const source of readSources(store, branchId)) {
      sourceIds.add(source.sourceId);
      for (const sink of readSinks(store, branchId, source.sourceId)) {
        defined.add(sinkPath(sink));
        if (!source.deleted && !sink.deleted && !sink.disabled) {
          for (const { stream, partition } of this.streamsToWork(source.sourceId)) {
            wanted.set(sinkPath({ ...sink, sinkId: instanceId(sink.sinkId, partition) }), { source, sink, stream, partition });
          }
        }
      }
    }
    for (const [key, writer] of this.writers) {
      if (wanted.has(key)) continue;
      const stream = this.streamOfWriter(writer);
      // A stream given up is released by releaseStream (queued behind this reconcile).
      if (this.releasing.has(stream)) continue;
      this.writers.delete(key);
      this.routers.get(stream)?.removeTarget(writer.sinkId);
      if (defined.has(sinkPath({ ...writer.key, sinkId: parseInstanceId(writer.sinkId).sinkId }))) {
        writer.send({ type: 'close' });
        void writer.stop();
        this.deps.logger.info({ sink: key }, 'sink stopped: its file is closed and will be imported');
      } else {
        await writer.stop();
      }
    }
    await this.purgeDeleted(defined, sourceIds);
    const started: SinkWriter[] = [];
    for (const [key, { source, sink, stream, partition }] of wanted) {
      const existing = this.writers.get(key);
      if (existing) {
        if (existing.versions !== `${source.version.number}/${sink.version.number}`) existing.send({ type: 'reload', sink, source });
        continue;
      }
      const start = this.deps.eventLog.coordinated ? await this.adoptionStart(sink, stream, partition) : this.startOffset(sink, stream, partition);
      const writer = new SinkWriter(sink, source, start, this.writerDeps, partition);
      this.writers.set(key, writer);
      this.routerFor(stream, source.sourceId).addTarget(writer);
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

  /**
   * Sinks deleted for good (cascade): their files, slices, offsets and failures go too, and the
   * topic of a source deleted for good. The local and staged files are removed last, so that
   * once they are gone everything else is (a source created again under the same id starts
   * empty, its sinks cannot read the old topic).
   */
  private async purgeDeleted(defined: Set<string>, sourceIds: Set<string>): Promise<void> {
    const { store, levels, failures, dataDir, branchId } = this.deps;
    const prefix = `storage/offset/${branchId}/`;
    const dropped = new Set<string>();
    const dropTopicOf = async (sourceId: string) => {
      if (sourceIds.has(sourceId) || dropped.has(sourceId)) return;
      dropped.add(sourceId);
      const topic = this.topicOf(sourceId);
      for (const [stream, router] of [...this.routers].filter(([s]) => parseStream(s).topic === topic)) {
        await router.stop();
        this.routers.delete(stream);
      }
      for (const stream of [...this.owned.keys()].filter((s) => parseStream(s).topic === topic)) this.owned.delete(stream);
      await this.deps.eventLog.dropTopic(topic);
      // A topic created again restarts its offsets (Kafka): old positions would skip its records.
      await this.deps.tables.forgetPositions(sourceStreams(branchId, sourceId));
    };
    // The routers outlive their writers: a source deleted for good is found through them (a
    // cascade delete removes its sinks' definitions and its own in one transaction).
    for (const router of [...this.routers.values()]) await dropTopicOf(router.sourceId);
    for (const { key } of store.list(prefix)) {
      const [sourceId, instance] = key.slice(prefix.length).split('/');
      const sink = { branchId, sourceId, sinkId: instance };
      if (defined.has(sinkPath({ ...sink, sinkId: parseInstanceId(instance).sinkId }))) continue;
      await dropTopicOf(sourceId);
      levels.purgeSink(sink);
      failures.purge(sink);
      store.transact((tx) => tx.delete(failingKey(sink)));
      for (const level of ['local', 'staging']) await rm(join(dataDir, level, String(branchId), sourceId, instance), { recursive: true, force: true });
      this.deps.logger.info({ sink: sinkPath(sink) }, 'deleted sink purged: its unimported data is removed');
    }
  }

  /**
   * Where a sink starts reading its source. A sink that stopped with a writing file (the process
   * stopped) resumes after its committed offset. A sink that starts anew, or again after being
   * disabled, takes what arrives from now on, like the other enabled sinks of its source; if no
   * sink of the source was enabled, it takes everything the log kept meanwhile. A sink that was
   * failing when it stopped (disabled, or the process stopped) resumes after its committed
   * offset in any case: what it missed while failing was acknowledged and is written now.
   */
  private startOffset(sink: Sink, stream: string, partition: number): number {
    const { levels, store } = this.deps;
    const key: SinkKey = { branchId: sink.branchId, sourceId: sink.sourceId, sinkId: instanceId(sink.sinkId, partition) };
    const committed = levels.consumerOffset(key);
    if (committed !== undefined && (levels.writingFile(key) || store.get(failingKey(key)) !== undefined)) return committed;
    const peers = [...this.writers.values()].filter((w) => this.streamOfWriter(w) === stream);
    const start = peers.length > 0
      ? Math.min(...peers.map((w) => w.committedOffset))
      : Math.max(0, ...readSinks(store, sink.branchId, sink.sourceId).map((s) => levels.consumerOffset({ ...key, sinkId: instanceId(s.sinkId, partition) }) ?? 0));
    const seen = store.get<SeenOffsets>(levelKeys.seen(key)) ?? (committed !== undefined ? SEEN_EVERYTHING : undefined);
    store.transact((tx) => {
      tx.put(levelKeys.offset(key), start);
      tx.put(levelKeys.seen(key), restartAt(seen, committed, start));
    });
    return start;
  }

  /**
   * A stream lost is released: its writers close and import their files first (in the
   * reconcile chain, so that no reconcile sees them meanwhile). A stream gained is taken up
   * once its previous owner released it (hand-over.ts).
   */
  private ownershipChanged(stream: string, change: OwnershipChange): void {
    if (!change.owned) {
      this.gaining.delete(stream);
      if (!this.owned.delete(stream)) return;
      this.releasing.add(stream);
      this.reconciling = this.reconciling
        .then(() => this.releaseStream(stream))
        .catch((err) => this.deps.logger.error({ err, stream }, 'releasing a stream failed'))
        .finally(() => this.releasing.delete(stream));
      void this.reconcile();
      return;
    }
    const ticket = ++this.tickets;
    this.gaining.set(stream, ticket);
    void (this.deps.handOver?.awaitRelease(stream) ?? Promise.resolve()).then(() => {
      // Still ours after the wait (the group may have taken it away meanwhile)?
      if (this.gaining.get(stream) !== ticket || this.isStopping) return;
      this.gaining.delete(stream);
      this.owned.set(stream, change.committedThrough);
      void this.reconcile();
    });
  }

  /** The writers of a stream this node gave up: their files closed and imported, then the stream marked released. */
  private async releaseStream(stream: string): Promise<void> {
    const leaving = [...this.writers].filter(([, w]) => this.streamOfWriter(w) === stream);
    const router = this.routers.get(stream);
    this.routers.delete(stream);
    for (const [key] of leaving) this.writers.delete(key);
    await router?.stop();
    const left = await this.flushWriters(leaving.map(([, w]) => w));
    await Promise.all(leaving.map(([, w]) => w.stop()));
    // What could not be imported in time is dropped: the next owner reads it again from its position.
    for (const key of left) await this.discardUnimported(key);
    this.deps.handOver?.released(stream);
    this.deps.logger.info({ stream, sinks: leaving.length, notImported: left.length }, 'stream released to another node');
  }

  /**
   * The streams of a source with enabled sinks that this node works on: its topic (one stream)
   * on a node of its own; in cluster mode the topic is claimed (this node takes part in the
   * split of its partitions) and the partitions the log gave this node are its streams.
   */
  private streamsToWork(sourceId: string): Array<{ stream: string; partition: number }> {
    const topic = this.topicOf(sourceId);
    if (!this.deps.eventLog.coordinated) return [{ stream: topic, partition: 0 }];
    this.deps.eventLog.claim(topic);
    return [...this.owned.keys()].map((stream) => ({ stream, ...parseStream(stream) })).filter((s) => s.topic === topic);
  }

  /** The stream (partition of its source's topic) a writer reads. */
  streamOfWriter(writer: SinkWriter): string {
    return streamOf(this.topicOf(writer.key.sourceId), writer.partition);
  }

  /**
   * Cluster mode: where a sink starts on this node. Whatever this node still has of it from an
   * earlier turn is dropped (another node may have imported those records since), and it reads
   * on after the later of the topic's group position (records every sink has in the target)
   * and the sink's own position in the target. A sink new to the cluster, on a topic this node
   * already works on, starts like on a single node (with its peers).
   */
  private async adoptionStart(sink: Sink, stream: string, partition: number): Promise<number> {
    const key: SinkKey = { branchId: sink.branchId, sourceId: sink.sourceId, sinkId: instanceId(sink.sinkId, partition) };
    const { levels, store } = this.deps;
    const previous = levels.consumerOffset(key);
    // The claim fences the sink's earlier owners: from here on the target refuses their imports.
    const position = await this.deps.tables.claimStream(sinkPath(key), this.nodeId());
    const hasPeers = [...this.writers.values()].some((w) => this.streamOfWriter(w) === stream);
    if (previous === undefined && position === undefined && hasPeers) return this.startOffset(sink, stream, partition);
    await this.discardUnimported(key);
    const start = Math.max(this.owned.get(stream) ?? 0, position ?? 0);
    const seen = store.get<SeenOffsets>(levelKeys.seen(key));
    store.transact((tx) => {
      tx.put(levelKeys.offset(key), start);
      tx.put(levelKeys.seen(key), adoptedAt(seen, previous, start));
    });
    this.deps.handOver?.working(stream);
    this.deps.logger.info({ sink: sinkPath(key), start, groupPosition: this.owned.get(stream), targetPosition: position }, 'sink taken up on this node');
    return start;
  }

  /** Cluster mode: this node, as the owner of the sinks' streams it claims. */
  private nodeId(): string {
    if (!this.deps.handOver) throw new Error('cluster mode without a hand-over: no node id to claim streams with');
    return this.deps.handOver.nodeId;
  }

  private async discardUnimported(key: SinkKey): Promise<void> {
    await removeSliceFiles(this.deps.dataDir, this.deps.levels.discardUnimported(key));
  }

  /** Cluster mode: the group position of each stream this node works on moves with the imports. */
  private acknowledgeImported(): void {
    const through = new Map<string, number>();
    for (const writer of this.writers.values()) {
      const stream = this.streamOfWriter(writer);
      const imported = this.deps.levels.importedThrough(writer.key);
      through.set(stream, Math.min(through.get(stream) ?? Infinity, imported));
    }
    for (const [stream, offset] of through) if (this.owned.has(stream)) this.deps.eventLog.acknowledge(stream, offset);
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

  private routerFor(stream: string, sourceId: string): SourceRouter {
    let router = this.routers.get(stream);
    if (!router) {
      router = new SourceRouter(stream, sourceId, this.deps.eventLog, this.deps.renderer, this.deps.logger);
      this.routers.set(stream, router);
    }
    return router;
  }

  tick(now = Date.now()): void {
    for (const writer of this.writers.values()) writer.send({ type: 'tick', now });
    this.deps.operator.tick(now);
    for (const router of this.routers.values()) router.pump();
    if (this.deps.eventLog.coordinated) {
      this.acknowledgeImported();
      this.deps.handOver?.heartbeat(now);
      this.publishStatistics(now);
      this.deps.orders?.serve((order, progress) => this.recovery.carryOut(order, progress), now);
    }
    if (now - this.lastRetentionAt >= 60_000) {
      this.lastRetentionAt = now;
      const removed = this.deps.eventLog.applyRetention(this.deps.retention, now);
      for (const [topic, n] of removed) if (n > 0) this.deps.logger.info({ topic, removed: n }, 'event log retention removed records');
      for (const writer of this.writers.values()) this.deps.failures.pruneBelow(writer.key, this.deps.eventLog.tailOffset(this.streamOfWriter(writer)));
    }
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

  /** Every sink writer of this node with the stream it reads and whether it is failing (the metrics' lag and failing gauges). */
  writerStreams(): Array<{ key: SinkKey; stream: string; failing: boolean }> {
    return [...this.writers.values()].map((w) => ({ key: w.key, stream: this.streamOfWriter(w), failing: w.failing !== undefined }));
  }

  /** Whether a sink is failing on this node (the first of its writers that is, by partition): for its statistics. */
  failingOf(sink: Pick<Sink, 'sourceId' | 'sinkId'>): SinkFailing | undefined {
    return this.writersOf(sink).find((w) => w.failing)?.failing;
  }

  /** Cluster mode: how many streams (topic partitions) this node works on now. */
  ownedStreamCount(): number {
    return this.owned.size;
  }

  /** The writers of a sink on this node (one per stream of its source this node works on). */
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
    this.acknowledgeImported();
    if (left.length === 0) for (const stream of this.owned.keys()) this.deps.handOver?.released(stream);
    if (left.length > 0) this.deps.logger.warn({ sinks: left.map(sinkPath) }, 'leaving with files not imported: the next owner of their topics reads them again');
    else this.deps.logger.info({ sinks: this.writers.size }, 'handed over: every file imported and the group positions committed');
  }

  /** Closes the writers' files and drives their imports; returns the writers' keys with files still not imported after `timeoutMs`. */
  private async flushWriters(writers: SinkWriter[], timeoutMs = 15_000): Promise<SinkKey[]> {
    const { levels, operator } = this.deps;
    const keys = writers.map((w) => w.key);
    for (const writer of writers) writer.send({ type: 'close' });
    const deadline = Date.now() + timeoutMs;
    const pending = () => keys.filter((k) => levels.writingFile(k) || levels.listFiles(k).some((f) => f.state !== 'imported'));
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
    this.isStopping = true;
    clearInterval(this.timer);
    this.unsubscribeOwnership?.();
    await this.reconciling;
    await Promise.all([...this.routers.values()].map((r) => r.stop()));
    if (this.deps.eventLog.coordinated && this.writers.size > 0) await this.handOver();
    await Promise.all([...this.writers.values()].map((w) => w.stop()));
    await this.deps.operator.stop();
    // What the hand-over imported, for the statistics the other nodes show.
    if (this.deps.eventLog.coordinated) this.publishStatistics(Date.now(), true);
  }
}
