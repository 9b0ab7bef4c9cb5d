import type { IngestRecord } from '../../pipeline/record.js';

/**
 * EventLog port (DESIGN.md "The record's path"): the acknowledgement point. Records are
 * appended to one topic per source, in order, each getting the next offset of its topic
 * (offsets start at 1 and never repeat). Consumers (one per sink) read from their own committed
 * offsets. Embedded adapter: LMDB (lmdb-log.ts); at scale: Kafka.
 */
export interface LoggedRecord {
  offset: number;
  record: IngestRecord;
}

export interface AppendResult {
  /** Offset of the first and the last appended record. */
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
   * Appends records to a topic as one batch. Offsets are assigned synchronously, so that
   * callers of one topic see their records in call order. Appends of the same moment are
   * committed together (group commit). Throws EventLogFullError when the log cannot take more.
   */
  append(topic: string, records: IngestRecord[]): AppendResult;
  /** Records with offset > afterOffset, ascending, at most `limit`. Only durable records are returned. */
  read(topic: string, afterOffset: number, limit: number): LoggedRecord[];
  /** Highest durable offset of a topic (0 when empty). */
  headOffset(topic: string): number;
  /** Lowest offset still kept (retention may have removed older ones); head + 1 when empty. */
  tailOffset(topic: string): number;
  /** Called (asynchronously) after records of the topic became durable. Returns an unsubscribe function. */
  onDurable(topic: string, listener: (headOffset: number) => void): () => void;
  /** Removes records by age and size; returns how many records were removed per topic. */
  applyRetention(policy: RetentionPolicy, now?: number): Map<string, number>;
  /**
   * Removes a topic completely (source deleted for good): reads see it empty at once; resolves
   * once the removal is committed. Whether later appends to it restart at offset 1 is up to the
   * adapter.
   */
  dropTopic(topic: string): Promise<void>;
  close(): Promise<void>;
}

/** The log cannot accept more data (disk or map full): ingestion answers 503, never acknowledges. */
export class EventLogFullError extends Error {}

export function sourceTopic(projectId: number, branchId: number, sourceId: string): string {
  return `${projectId}.${branchId}.${sourceId}`;
}
