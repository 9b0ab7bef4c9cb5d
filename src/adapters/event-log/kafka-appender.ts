/**
 * The write side of the Kafka event log: group commit over one idempotent kafkajs producer.
 *
 * Appends of one event-loop turn, and those that arrive while a send is in flight, go to the
 * broker together in one `sendBatch` with acks=-1 (every in-sync replica has them before the
 * broker answers), and only one send is in flight at a time. That keeps each topic's records in
 * call order (an idempotent producer with one request in flight never reorders) and makes one
 * round trip carry many requests' records, as the embedded log's group commit does.
 *
 * The idempotent producer retries for ever (kafkajs: a limited retry count breaks its
 * guarantees), so a broker that is down would hold an append's durability open indefinitely.
 * An append therefore reports failure after `timeoutMs` (ingestion answers 503; the send may
 * still succeed later, so a client's retry can duplicate it: at least once), and appends are
 * refused at once while more than `maxPendingBytes` wait.
 *
 * One send carries at most `maxBatchBytes` (Kafka refuses a partition's record batch above the
 * topic's `max.message.bytes`, 1 MB by default, and with it every append of the send): what is
 * queued beyond goes in the next send, and an append larger than that is split over sends (it
 * succeeds when all its parts did). A single record larger than the budget goes alone.
 */
import type { Producer, RecordMetadata, TopicMessages } from 'kafkajs';
import { EventLogFullError } from '../../ports/event-log.js';
import type { KafkaOutMessage } from './kafka-record.js';
import { DEFAULT_MAX_BATCH_BYTES, recordBytes } from '../kafka/record-batches.js';

export interface AppenderOptions {
  /** An append that is not acknowledged within this time fails (default 10 s). */
  timeoutMs?: number;
  /** Bytes of appends waiting for the broker beyond which appends are refused (default 64 MiB). */
  maxPendingBytes?: number;
  /** Most bytes of records in one send (default DEFAULT_MAX_BATCH_BYTES, under Kafka's default limit). */
  maxBatchBytes?: number;
}

interface PendingAppend {
  topic: string;
  /** Chosen once the topic's partition count is known. */
  partition: number;
  messages: KafkaOutMessage[];
  /** Upper bound of each message's size in a record batch. */
  sizes: number[];
  bytes: number;
  /** Messages handed to sends so far (an append larger than a send is split over several). */
  sent: number;
  /** Sends in flight with a part of this append. */
  inFlight: number;
  failed: boolean;
  resolve: () => void;
  reject: (err: Error) => void;
}

/** The broker did not take the records in time (down, no leader, too few in-sync replicas). */
export class EventLogUnavailableError extends EventLogFullError {}

export class KafkaAppender {
  private queue: PendingAppend[] = [];
  private pendingBytes = 0;
  private sending: Promise<void> | undefined;
  private flushScheduled = false;
  private closed = false;
  /** Per topic, the partition the next append goes to (round robin). */
  private readonly nextPartition = new Map<string, number>();
  private readonly timeoutMs: number;
  private readonly maxPendingBytes: number;
  private readonly maxBatchBytes: number;

  constructor(
    private readonly producer: Producer,
    /** Told the highest offset (Kafka offset + 1) acknowledged per topic partition after each send. */
    private readonly onAcked: (topic: string, partition: number, headOffset: number) => void,
    options: AppenderOptions = {},
  ) {
    this.timeoutMs = options.timeoutMs ?? 10_000;
    this.maxPendingBytes = options.maxPendingBytes ?? 64 * 1024 ** 2;
    this.maxBatchBytes = options.maxBatchBytes ?? DEFAULT_MAX_BATCH_BYTES;
  }

  /**
   * Queues the messages; the promise resolves once every in-sync replica has them. `before`
   * resolves with the topic's partition count: the messages of one append go to one partition
   * (in order), successive appends take the partitions in turn.
   */
  append(topic: string, messages: KafkaOutMessage[], before: Promise<number>): Promise<void> {
    if (this.closed) throw new Error('event log is closed');
    const sizes = messages.map(recordBytes);
    let bytes = 0;
    for (const size of sizes) bytes += size;
    if (this.pendingBytes + bytes > this.maxPendingBytes) {
      throw new EventLogUnavailableError(`event log: ${this.pendingBytes} bytes wait for the Kafka broker; try again later`);
    }
    this.pendingBytes += bytes;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new EventLogUnavailableError(`event log: Kafka did not acknowledge the records within ${this.timeoutMs} ms`)), this.timeoutMs);
      const entry: PendingAppend = {
        topic,
        partition: 0,
        messages,
        sizes,
        bytes,
        sent: 0,
        inFlight: 0,
        failed: false,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
        reject: (err) => {
          clearTimeout(timer);
          reject(err);
        },
      };
      // The topic must exist first (created on its first append); order is kept because the
      // topic's later appends wait for the same promise, and promise reactions run in order.
      before.then(
        (partitions) => {
          const next = this.nextPartition.get(topic) ?? 0;
          entry.partition = next % partitions;
          this.nextPartition.set(topic, (next + 1) % partitions);
          this.enqueue(entry);
        },
        (err: unknown) => {
          this.pendingBytes -= bytes;
          entry.reject(new EventLogUnavailableError(`event log: ${(err as Error).message}`, { cause: err }));
        },
      );
    });
  }

  /** Waits for the appends queued so far; later appends are refused. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.sending || this.queue.length > 0) {
      if (!this.sending) this.flush();
      await this.sending;
    }
  }

  private enqueue(entry: PendingAppend): void {
    this.queue.push(entry);
    if (this.flushScheduled || this.sending) return;
    this.flushScheduled = true;
    // The rest of this turn's appends join the same send.
    setImmediate(() => {
      this.flushScheduled = false;
      if (!this.sending) this.flush();
    });
  }

  /**
   * Sends what is queued, up to maxBatchBytes (at least one message), in queue order: appends
   * taken whole leave the queue; one taken in part stays at its head with the rest.
   */
  private flush(): void {
    if (this.queue.length === 0) return;
    const parts: Array<{ entry: PendingAppend; messages: KafkaOutMessage[]; last: boolean }> = [];
    let budget = this.maxBatchBytes;
    while (this.queue.length > 0) {
      const entry = this.queue[0];
      const from = entry.sent;
      let to = from;
      while (to < entry.messages.length && (entry.sizes[to] <= budget || (parts.length === 0 && to === from))) budget -= entry.sizes[to++];
      if (to === from) break;
      entry.sent = to;
      entry.inFlight++;
      const last = to === entry.messages.length;
      parts.push({ entry, messages: entry.messages.slice(from, to), last });
      if (!last) break;
      this.queue.shift();
    }
    const byTopic = new Map<string, Array<KafkaOutMessage & { partition: number }>>();
    const counts = new Map<string, number>();
    for (const { entry, messages } of parts) {
      let list = byTopic.get(entry.topic);
      if (!list) byTopic.set(entry.topic, (list = []));
      for (const m of messages) list.push({ ...m, partition: entry.partition });
      const key = `${entry.topic}\u0000${entry.partition}`;
      counts.set(key, (counts.get(key) ?? 0) + messages.length);
    }
    const topicMessages: TopicMessages[] = [...byTopic].map(([topic, messages]) => ({ topic, messages }));
    this.sending = this.producer
      .sendBatch({ acks: -1, topicMessages })
      .then(
        (metadata: RecordMetadata[]) => {
          for (const m of metadata) {
            const count = counts.get(`${m.topicName}\u0000${m.partition}`) ?? 0;
            if (m.baseOffset !== undefined) this.onAcked(m.topicName, m.partition, Number(m.baseOffset) + count);
          }
          for (const { entry, last } of parts) {
            entry.inFlight--;
            if (last && !entry.failed && entry.inFlight === 0) this.settle(entry);
          }
        },
        (err: unknown) => {
          const error = new EventLogUnavailableError(`event log: Kafka refused the records: ${(err as Error).message}`, { cause: err });
          for (const { entry } of parts) {
            entry.inFlight--;
            if (entry.failed) continue;
            entry.failed = true;
            // The rest of a split append is not sent: the append failed (its sent parts may stay: at least once).
            const at = this.queue.indexOf(entry);
            if (at >= 0) this.queue.splice(at, 1);
            this.settle(entry, error);
          }
        },
      )
      .finally(() => {
        this.sending = undefined;
        if (this.queue.length > 0) this.flush();
      });
  }

  /** Resolves or rejects an append, once, and releases its bytes. */
  private settle(entry: PendingAppend, error?: Error): void {
    this.pendingBytes -= entry.bytes;
    if (error) entry.reject(error);
    else entry.resolve();
  }
}
