/**
 * Recovery work on a sink's records (docs/architecture.md, "Sink writers": a record a sink cannot map
 * is kept as a mapping failure and can be reprocessed or replayed after the mapping is fixed): reprocessing of the kept
 * mapping failures, and replays from the event log (replay.ts). Both write through the sink
 * writer of the record's partition, so they run where that partition is worked on: on this node
 * for its own partitions, and (cluster mode) through orders to the owners for the others
 * (cluster-orders.ts), whose progress and results add up to one answer.
 */
import { parsePartitionId, type EventLog } from '../ports/event-log.js';
import type { MetadataStore } from '../ports/metadata-store.js';
import type { Sink } from '../model/definition.js';
import { readSinks } from '../definition/repository.js';
import type { SinkPositions } from '../levels/positions.js';
import { fromFailureRecord, type MappingFailures } from '../levels/mapping-failures.js';
import type { ClusterOrders, Order } from './cluster-orders.js';
import type { PartitionHandOver } from './hand-over.js';
import { replaySink, type ReplayProgress, type ReplayRequest } from './replay.js';
import type { ReprocessResult, SinkWriter } from './sink-writer/index.js';

/**
 * A sink's partitions cannot be worked on right now (not enabled, no node has its topic yet, a
 * partition moving between nodes): the caller may try again; the API answers 503.
 */
export class SinkNotAvailableError extends Error {}

/** A replay request as an order carries it (JSON). */
type SerializedReplayRequest = Omit<ReplayRequest, 'since'> & { since: string };

const sinkKeyOf = (sink: Sink) => ({ branchId: sink.branchId, sourceId: sink.sourceId, sinkId: sink.sinkId });

/** The progress of several partitions as one (offsets are per partition: the range shown spans them). */
function sumProgress(parts: ReadonlyArray<ReplayProgress | undefined>): ReplayProgress {
  let sum: ReplayProgress | undefined;
  for (const b of parts) {
    if (!b) continue;
    sum = sum === undefined ? { ...b } : {
      fromOffset: Math.min(sum.fromOffset, b.fromOffset), toOffset: Math.max(sum.toOffset, b.toOffset),
      scanned: sum.scanned + b.scanned, total: sum.total + b.total, written: sum.written + b.written, failed: sum.failed + b.failed, skipped: sum.skipped + b.skipped,
    };
  }
  return sum ?? { fromOffset: 0, toOffset: 0, scanned: 0, total: 0, written: 0, failed: 0, skipped: 0 };
}

/** Like Promise.all, but waits for every part before it rejects (no partition's work is left running unseen). */
async function settleAll<T>(work: ReadonlyArray<Promise<T>>): Promise<T[]> {
  const settled = await Promise.allSettled(work);
  const failed = settled.find((r): r is PromiseRejectedResult => r.status === 'rejected');
  if (failed) throw failed.reason;
  return settled.map((r) => (r as PromiseFulfilledResult<T>).value);
}

/** What the recovery needs of the runtime: the sink writers on this node. */
export interface SinkWorkers {
  /** Whether this node runs sinks (the "sink" role). */
  readonly started: boolean;
  /** The writers of a sink on this node (one per partition of its source this node works on), by partition. */
  writersOf(sink: Pick<Sink, 'sourceId' | 'sinkId'>): SinkWriter[];
  /** The partition a writer reads. */
  partitionIdOfWriter(writer: SinkWriter): string;
  topicOf(sourceId: string): string;
}

export interface SinkRecoveryDeps {
  store: MetadataStore;
  eventLog: EventLog;
  positions: SinkPositions;
  failures: MappingFailures;
  /** Cluster mode: who works on which partition (hand-over marks, liveness). */
  handOver?: PartitionHandOver;
  /** Cluster mode: work asked of the partitions' owners. */
  orders?: ClusterOrders;
}

export class SinkRecovery {
  constructor(
    private readonly workers: SinkWorkers,
    private readonly deps: SinkRecoveryDeps,
  ) {}

  /**
   * Replays a sink's kept mapping failures through its current mapping, on every partition: here
   * for those this node works on, through their owners for the others (cluster mode).
   */
  async reprocessFailures(sink: Sink): Promise<ReprocessResult> {
    const { local, remote } = this.partsOf(sink, 'reprocessing its failed records');
    const orders = this.deps.orders;
    const results = await settleAll([
      ...local.map((writer) => this.reprocessWriter(writer, sink)),
      ...remote.map(({ partitionId, node }) => orders!.ask<null, ReprocessResult>({ kind: 'reprocess', partitionId, node, sink: sinkKeyOf(sink), request: null })),
    ]);
    const total: ReprocessResult = { reprocessed: 0, failed: 0 };
    let filtered = 0;
    for (const r of results) {
      total.reprocessed += r.reprocessed;
      total.failed += r.failed;
      filtered += r.filtered ?? 0;
    }
    // `filtered` only when the sink's filter skipped any: the reference's answer otherwise.
    return filtered > 0 ? { ...total, filtered } : total;
  }

  private async reprocessWriter(writer: SinkWriter, sink: Sink): Promise<ReprocessResult> {
    const signal = (sink.allowedSignals?.[0] ?? '') as '';
    const kept = this.deps.failures.all(writer.key);
    return writer.replay(kept.map((f) => ({ offset: f.offset, record: fromFailureRecord(f.record, signal) })));
  }

  /**
   * Where a sink's partitions are worked on: its writers on this node, and (cluster mode) the
   * partitions of its topic other nodes work on, by the hand-over marks. Throws when there is
   * nothing to work on, or when a partition is between owners right now.
   */
  private partsOf(sink: Sink, what: string): { local: SinkWriter[]; remote: Array<{ partitionId: string; node: string }> } {
    const { handOver, orders } = this.deps;
    if (!this.deps.eventLog.coordinated || !handOver || !orders) {
      if (!this.workers.started) throw new Error('This node does not run sinks (its --roles has no "sink"): call a node that does.');
      const local = this.workers.writersOf(sink);
      if (local.length === 0) throw new SinkNotAvailableError(`The sink is not enabled: enable it before ${what}.`);
      return { local, remote: [] };
    }
    const local = this.workers.started ? this.workers.writersOf(sink) : [];
    const here = new Set(local.map((w) => this.workers.partitionIdOfWriter(w)));
    const others = handOver.marks(this.workers.topicOf(sink.sourceId)).filter((m) => !here.has(m.partitionId));
    const moving = others.filter((m) => m.node === handOver.nodeId || m.state !== 'working' || !handOver.isAlive(m.node));
    if (moving.length > 0) {
      throw new SinkNotAvailableError(`Partition ${moving.map((m) => parsePartitionId(m.partitionId).partition).join(', ')} of the sink's topic is moving between nodes right now: try again in a moment.`);
    }
    if (local.length === 0 && others.length === 0) throw new SinkNotAvailableError(`No node works on the sink's topic yet: enable the sink (and wait for a node with the "sink" role to take it up) before ${what}.`);
    return { local, remote: others.map((m) => ({ partitionId: m.partitionId, node: m.node })) };
  }

  /**
   * Re-processes a sink's records from the log, from the first record received at or after
   * `since` up to what the sink has consumed (later records reach it anyway), on every
   * partition: here for those this node works on, through their owners for the others. See
   * replay.ts.
   */
  async replay(sink: Sink, request: ReplayRequest, progress: (p: ReplayProgress) => void): Promise<ReplayProgress> {
    const { local, remote } = this.partsOf(sink, 'replaying its records');
    const orders = this.deps.orders;
    // Each partition reports on its own; the counts add up (offsets are per partition: the range shown spans them).
    const parts: Array<ReplayProgress | undefined> = [];
    const report = (i: number) => (p: ReplayProgress) => {
      parts[i] = p;
      progress(sumProgress(parts));
    };
    const results = await settleAll([
      ...local.map((writer, i) => this.replayWriter(writer, request, report(i))),
      ...remote.map(({ partitionId, node }, j) => orders!.ask<SerializedReplayRequest, ReplayProgress>(
        { kind: 'replay', partitionId, node, sink: sinkKeyOf(sink), request: { ...request, since: request.since.toISOString() } },
        report(local.length + j),
      )),
    ]);
    return sumProgress(results);
  }

  private replayWriter(writer: SinkWriter, request: ReplayRequest, progress: (p: ReplayProgress) => void): Promise<ReplayProgress> {
    return replaySink({
      log: this.deps.eventLog,
      topic: this.workers.partitionIdOfWriter(writer),
      writer,
      seen: () => this.deps.positions.seenOffsets(writer.key),
      hasFailed: (offset) => this.deps.failures.hasFailed(writer.key, offset),
      request,
      progress,
    });
  }

  /** Cluster mode: an order another node sent for a partition this node works on (cluster-orders.ts). */
  async carryOut(order: Order, progress: (p: unknown) => void): Promise<unknown> {
    const { branchId, sourceId, sinkId } = order.sink;
    const sink = readSinks(this.deps.store, branchId, sourceId).find((s) => s.sinkId === sinkId && !s.deleted);
    const writer = sink && this.workers.writersOf(sink).find((w) => this.workers.partitionIdOfWriter(w) === order.partitionId);
    if (!sink || !writer) throw new Error(`partition ${parsePartitionId(order.partitionId).partition} of the sink is not worked on by node ${this.deps.handOver?.nodeId} any more: try again`);
    if (order.kind === 'reprocess') return this.reprocessWriter(writer, sink);
    const request = order.request as SerializedReplayRequest;
    return this.replayWriter(writer, { ...request, since: new Date(request.since) }, progress);
  }
}
