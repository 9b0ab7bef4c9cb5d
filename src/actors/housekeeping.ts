import type { EventLog } from '../ports/event-log.js';
import type { MetadataStore } from '../ports/metadata-store.js';
import type { Logger } from '../logger.js';
import { sourceSinksPrefix } from '../levels/import.js';
import { removeLocalSink } from '../levels/local.js';
import type { Staging } from '../ports/staging.js';
import { parseInstanceId } from '../levels/instances.js';
import { sinkPath, type SinkKey } from '../model/levels.js';
import type { SinkPositions } from '../levels/positions.js';
import { purgeSink } from '../levels/purge.js';
import type { MappingFailures } from '../levels/mapping-failures.js';
import type { TableService } from '../storage/tables.js';
import { clearFailing } from './sink-health.js';

export interface HousekeepingDeps {
  store: MetadataStore;
  positions: SinkPositions;
  failures: MappingFailures;
  eventLog: EventLog;
  tables: Pick<TableService, 'forgetPositions'>;
  logger: Logger;
  /** The local level's root: the data directory. */
  dataDir: string;
  staging: Staging;
  branchId: number;
  retention: { maxAgeMs: number; maxBytesPerTopic: number };
}

/** How often the event log's retention runs (on a check tick). */
const RETENTION_INTERVAL_MS = 60_000;

/**
 * The runtime's housekeeping: the event log's retention (with the mapping failures below what
 * the log still keeps), and the purge of sinks and sources deleted for good. Holds no actors:
 * the runtime says which sink instances it runs and how to stop a topic's routers.
 */
export class Housekeeping {
  private lastRetentionAt = 0;

  constructor(private readonly deps: HousekeepingDeps) {}

  /** At most once a minute: the event log's retention, then the mapping failures of `writers` below the log's tail. */
  retention(now: number, writers: Iterable<{ key: SinkKey; partitionId: string }>): void {
    if (now - this.lastRetentionAt < RETENTION_INTERVAL_MS) return;
    this.lastRetentionAt = now;
    const { eventLog, failures, logger } = this.deps;
    const removed = eventLog.applyRetention(this.deps.retention, now);
    for (const [topic, n] of removed) if (n > 0) logger.info({ topic, removed: n }, 'event log retention removed records');
    for (const { key, partitionId } of writers) failures.pruneBelow(key, eventLog.tailOffset(partitionId));
  }

  /**
   * Sinks deleted for good (cascade): their files, slices, offsets and failures go too, and the
   * topic of a source deleted for good. The local and staged files are removed last, so that
   * once they are gone everything else is (a source created again under the same id starts
   * empty, its sinks cannot read the old topic).
   *
   * `defined`: the sink paths still defined; `sourceIds`: the sources still defined;
   * `routedSources`: the sources this node has routers for (a source deleted for good is found
   * through them: a cascade delete removes its sinks' definitions and its own in one
   * transaction); `stopPartitions`: stops the routers of a source's topic and forgets its partitions.
   */
  async purgeDeleted(
    defined: Set<string>,
    sourceIds: Set<string>,
    routedSources: readonly string[],
    topicOf: (sourceId: string) => string,
    stopPartitions: (topic: string) => Promise<void>,
  ): Promise<void> {
    const { positions, failures, store, dataDir, staging, branchId, logger } = this.deps;
    const dropped = new Set<string>();
    const dropTopicOf = async (sourceId: string) => {
      if (sourceIds.has(sourceId) || dropped.has(sourceId)) return;
      dropped.add(sourceId);
      const topic = topicOf(sourceId);
      await stopPartitions(topic);
      await this.deps.eventLog.dropTopic(topic);
      // A topic created again restarts its offsets (Kafka): old positions would skip its records.
      await this.deps.tables.forgetPositions(sourceSinksPrefix(branchId, sourceId));
    };
    for (const sourceId of routedSources) await dropTopicOf(sourceId);
    for (const sink of positions.positionedSinks(branchId)) {
      const { sourceId, sinkId: instance } = sink;
      if (defined.has(sinkPath({ ...sink, sinkId: parseInstanceId(instance).sinkId }))) continue;
      await dropTopicOf(sourceId);
      purgeSink(store, sink);
      failures.purge(sink);
      store.transact((tx) => clearFailing(tx, sink));
      await removeLocalSink(dataDir, branchId, sourceId, instance);
      await staging.removeSink(branchId, sourceId, instance);
      logger.info({ sink: sinkPath(sink) }, 'deleted sink purged: its unimported data is removed');
    }
  }
}
