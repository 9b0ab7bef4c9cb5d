import type { IngestRecord } from '../model/record.js';

/**
 * EventLog port (docs/architecture.md "The record's path"): the acknowledgement point. Records are
 * appended to one topic per source, in order, each getting the next offset of its topic
 * (offsets start at 1 and never repeat). Consumers (one per sink) read from their own committed
 * offsets. Embedded adapter: LMDB (lmdb-log.ts); at scale: Kafka.
 */
export interface LoggedRecord {
  offset: number;
  record: IngestRecord;
  /** The record in the form of pipeline/record-codec, when the adapter has it at hand (the embedded log). */
  readonly encoded?: Uint8Array;
}

export interface AppendResult {
  /**
   * Offset of the first and the last appended record; -1 when the adapter learns offsets only
   * from the broker's acknowledgement (Kafka).
   */
  firstOffset: number;
  lastOffset: number;
  /**
   * Resolves once the records are durable (synced commit); rejects if the write failed
   * (EventLogFullError when the log could not store them). A failed append's offsets stay
   * unused, so a topic's offsets may have gaps; they are never reused.
   */
  durable: Promise<void>;
}

export interface RetentionPolicy {
  /** Records older than this (by receive time) are removed. Default 7 days. */
  maxAgeMs: number;
  /** When a topic holds more bytes than this, its oldest records are removed. */
  maxBytesPerTopic: number;
}

export interface EventLog {
  /**
   * Appends records to a topic as one batch. The records of one topic are stored in call order
   * (the embedded log assigns offsets synchronously; Kafka keeps one send in flight). Appends
   * of the same moment are committed together (group commit). Throws EventLogFullError when
   * the log cannot take more.
   */
  append(topic: string, records: IngestRecord[]): AppendResult;
  /**
   * Records with offset > afterOffset, ascending, at most `limit`, of those available to this
   * process now. Only durable records are returned. The embedded log has every record at hand;
   * a remote log (Kafka) answers from what its consumer fetched, so fewer or none may come back
   * while it fetches: onDurable listeners are called when more arrive.
   */
  read(topic: string, afterOffset: number, limit: number): LoggedRecord[];
  /**
   * Random access for replays and inspections: the records with offset > afterOffset,
   * ascending, at most `limit`, waiting until they are fetched (the embedded log answers at
   * once). Fewer than `limit` only when the topic has no more records after `afterOffset` at
   * the time of the call. Independent of the sinks' reading (a Kafka adapter uses a consumer of
   * its own).
   */
  fetch(topic: string, afterOffset: number, limit: number): Promise<LoggedRecord[]>;
  /**
   * Every consumer of the topic is done with its records through `throughOffset` (single node:
   * committed to its slices; cluster mode: imported into the target): a remote log records the
   * position with the broker (Kafka consumer group offset), where a node taking the topic over
   * resumes. Without cluster mode it also releases them. The embedded log ignores this.
   */
  acknowledge(topic: string, throughOffset: number): void;
  /** The records through `throughOffset` need not be held in memory for reading any more. */
  release(topic: string, throughOffset: number): void;
  /**
   * Cluster mode: the log splits the topics between the nodes that read them (Kafka consumer
   * groups). A node claims the topics it could work on and works on those it is given (see
   * onOwnership). False for the embedded log: its node has every topic.
   */
  readonly coordinated: boolean;
  /** Cluster mode: takes part in the split of the topic's partitions (idempotent). */
  claim(topic: string): void;
  /**
   * Cluster mode: called when this node is given a partition (with the
   * position through which its records are done, where its sinks resume) or loses it.
   * Returns an unsubscribe function.
   */
  onOwnership(listener: (partitionId: string, change: OwnershipChange) => void): () => void;
  /** Highest durable offset of a topic (0 when empty). */
  headOffset(topic: string): number;
  /** Lowest offset still kept (retention may have removed older ones); head + 1 when empty. */
  tailOffset(topic: string): number;
  /** Called (asynchronously) after records of the topic became durable. Returns an unsubscribe function. */
  onDurable(topic: string, listener: (headOffset: number) => void): () => void;
  /** Removes records by age and size; returns how many records were removed per topic (Kafka: the broker does it, by the topic's retention settings). */
  applyRetention(policy: RetentionPolicy, now?: number): Map<string, number>;
  /**
   * Removes a topic completely (source deleted for good): reads see it empty at once; resolves
   * once the removal is committed. Whether later appends to it restart at offset 1 is up to the
   * adapter.
   */
  dropTopic(topic: string): Promise<void>;
  /**
   * Whether the log can take records now (readiness): undefined when it can, else the reason
   * (embedded: full or the disk nearly full, a failed commit; Kafka: the broker not answering).
   */
  ready(): Promise<string | undefined>;
  /** Bytes held per topic, where the log keeps them itself (embedded); undefined for Kafka (the broker keeps them). */
  bytesHeld(): Map<string, number> | undefined;
  close(): Promise<void>;
}

export type OwnershipChange = { owned: true; committedThrough: number } | { owned: false };

/** The log cannot accept more data (disk or map full): ingestion answers 503, never acknowledges. */
export class EventLogFullError extends Error {}

/**
 * A topic can have partitions (Kafka); each is read on its own, in its own order, with its own
 * offsets. A partition is named by its *partition id*: that of partition 0 is the topic's name
 * (so a topic of one partition has the id of the topic), that of partition p > 0 `<topic>#<p>`.
 * The embedded log has one partition per topic. The reading methods of the port (read, fetch,
 * acknowledge, release, headOffset, tailOffset, onDurable) take partition ids. (Before, the
 * code called a partition a "stream"; the word now means the product only. The hand-over's
 * metadata keys, `cluster/stream/<partition id>`, keep their old name.)
 */
export function partitionIdOf(topic: string, partition: number): string {
  return partition === 0 ? topic : `${topic}#${partition}`;
}

export function parsePartitionId(partitionId: string): { topic: string; partition: number } {
  const hash = partitionId.lastIndexOf('#');
  return hash < 0 ? { topic: partitionId, partition: 0 } : { topic: partitionId.slice(0, hash), partition: Number(partitionId.slice(hash + 1)) };
}

export function sourceTopic(projectId: number, branchId: number, sourceId: string): string {
  return `${projectId}.${branchId}.${sourceId}`;
}
