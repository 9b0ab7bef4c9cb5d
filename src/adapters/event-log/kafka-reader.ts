/**
 * The read side of the Kafka event log for one partition: a kafkajs
 * consumer feeding a buffer from which the port's synchronous `read` answers.
 *
 * Kafka pushes (a consumer's fetch loop calls back with batches) while the SourceRouter pulls
 * (`read(partition, afterOffset, limit)` when told that records arrived). The buffer joins the two:
 * it holds the records after the lowest position its readers still need, `read` hands out what
 * it holds, and each batch that lands calls `onRecords` (the port's onDurable listeners).
 * Records leave the buffer when `release` says every sink has committed them to its slices; the
 * consumer group's offset is what `acknowledge` says is done for good (cluster mode: imported),
 * the position the partition's next owner starts from.
 *
 * Offsets: the port counts from 1, Kafka from 0, so port offset = Kafka offset + 1. A random
 * access reader (no group) starts at its first `read`, at the requested position (seek); a
 * group reader (cluster mode) joins its partition's group at `claim` and starts at the group's
 * committed position. A `read` below what the buffer still holds seeks back. The buffer is
 * bounded: past `maxBuffered` records the partition is paused until releases make room.
 */
import { randomUUID } from 'node:crypto';
import type { Consumer, EachBatchPayload, Kafka } from 'kafkajs';
import type { Logger } from '../../logger.js';
import type { LoggedRecord, OwnershipChange } from '../../ports/event-log.js';
import { decodeKafkaRecord } from './kafka-record.js';
import { onePartitionAssigner } from './kafka-assigner.js';


/**
 * Cluster mode: the reader's consumer group decides which node reads the topic. The reader
 * starts at the group's committed position (no seek), and reports when the group gives the
 * topic to this node (with that position, where the node's sinks resume) or takes it away.
 */
export interface ReaderOwnership {
  /** This node's id, by which the groups' assigner orders the nodes (kafka-assigner.ts). */
  nodeId: string;
  /** The group's committed position (port offset through which records are done), 0 when none. */
  committed: () => Promise<number>;
  changed: (change: OwnershipChange) => void;
}

export interface ReaderOptions {
  /** Records held before the partition is paused (default 20000). */
  maxBuffered?: number;
  /** The acknowledged position is committed at most this often (default 1000 ms). */
  commitIntervalMs?: number;
}


export class TopicReader {
  /** Records with offset > floor, ascending and without holes except those Kafka has. */
  private buffer: LoggedRecord[] = [];
  /** Index in `buffer` of its first live record (acknowledged ones are cut off in bulk). */
  private start = 0;
  /** Offsets at or below this are not held (acknowledged, or before the start position). */
  private floor = 0;
  /** Last offset taken from Kafka. */
  private position = 0;
  private consumer: Consumer | undefined;
  private starting: Promise<void> | undefined;
  private failedAt = 0;
  private paused = false;
  private committed = 0;
  private acknowledged = 0;
  private commitTimer: NodeJS.Timeout | undefined;
  private closed = false;
  /** Counts consumer starts: batches of an earlier consumer are ignored. */
  private generation = 0;
  /** fetch() calls waiting for records. */
  private readonly waiters = new Set<() => void>();
  /** Cluster mode: whether the group gave this node the topic. */
  private owned = false;
  private readonly maxBuffered: number;
  private readonly commitIntervalMs: number;

  constructor(
    private readonly kafka: Kafka,
    readonly kafkaTopic: string,
    /** The partition this reader reads (its partition). */
    readonly partition: number,
    /**
     * The consumer group, whose offset records the acknowledged position; undefined for random
     * access: a throwaway group per start (`<throwawayPrefix><uuid>`), nothing committed.
     */
    private readonly groupId: string | undefined,
    private readonly throwawayPrefix: string,
    /** Creates the topic if Sluice owns it. */
    private readonly ensureTopic: () => Promise<unknown>,
    /** Called after a batch landed in the buffer, with the topic's high watermark (port offsets). */
    private readonly onRecords: (head: number) => void,
    private readonly log: Logger,
    options: ReaderOptions = {},
    private readonly ownership?: ReaderOwnership,
  ) {
    this.maxBuffered = options.maxBuffered ?? 20_000;
    this.commitIntervalMs = options.commitIntervalMs ?? 1000;
  }

  /** Cluster mode: joins the group (at its committed position) unless already in it. */
  claim(): void {
    if (this.closed || this.consumer || this.starting || Date.now() - this.failedAt <= 2000) return;
    this.begin(0);
  }

  /** Held records after `afterOffset`; empty while the consumer (re)starts or has nothing yet. */
  read(afterOffset: number, limit: number): LoggedRecord[] {
    if (this.closed) return [];
    if (!this.consumer) {
      // Started at the first read (cluster mode: by claim); a failed start is tried again after a pause.
      if (this.ownership) this.claim();
      else if (!this.starting && Date.now() - this.failedAt > 2000) this.begin(afterOffset);
      return [];
    }
    if (this.ownership && !this.owned) return [];
    if (afterOffset < this.floor) {
      this.log.info({ topic: this.kafkaTopic, from: afterOffset, held: this.floor }, 'kafka reader: repositioning');
      this.reposition(afterOffset);
      return [];
    }
    const out: LoggedRecord[] = [];
    for (let i = this.firstAfter(afterOffset); i < this.buffer.length && out.length < limit; i++) out.push(this.buffer[i]);
    return out;
  }

  /**
   * Waits until the records after `afterOffset` are fetched: `limit` of them, or all up to
   * `head` (the topic's end when asked). Random access (replays): a position before what the
   * buffer holds restarts the consumer there; what lies before `afterOffset` is let go.
   */
  async fetch(afterOffset: number, limit: number, head: number, timeoutMs = 30_000): Promise<LoggedRecord[]> {
    const deadline = Date.now() + timeoutMs;
    // Far ahead of what the consumer reached: seek there rather than read everything between.
    if (this.consumer && afterOffset > this.position + this.maxBuffered / 4) this.reposition(afterOffset);
    for (;;) {
      const got = this.read(afterOffset, limit);
      if (got.length >= limit || (this.consumer && this.position >= head)) {
        // Kept while there is room: a search that steps back is then served without a new seek.
        if (this.held() > this.maxBuffered / 2) this.release(afterOffset);
        return got;
      }
      const left = deadline - Date.now();
      if (left <= 0) throw new Error(`event log: Kafka did not deliver ${this.kafkaTopic} after offset ${afterOffset} within ${timeoutMs} ms`);
      // Woken by the next batch; the timer covers a consumer still starting.
      await new Promise<void>((resolve) => {
        const wake = () => {
          clearTimeout(timer);
          this.waiters.delete(wake);
          resolve();
        };
        const timer = setTimeout(wake, Math.min(left, 200));
        this.waiters.add(wake);
      });
    }
  }

  /** Records through `offset` need not be held any more: they leave the buffer. */
  release(offset: number): void {
    if (offset > this.floor) {
      this.start = this.firstAfter(offset);
      this.floor = offset;
      // Cut the array when the dead part is large, not on every release.
      if (this.start > 4096 || this.start >= this.buffer.length) {
        this.buffer = this.buffer.slice(this.start);
        this.start = 0;
      }
    }
    if (this.paused && this.held() < this.maxBuffered / 2) this.resume();
  }

  /**
   * Records through `offset` are done for good (single node: in the sinks' committed slices;
   * cluster mode: in the target): the position is committed as the group's offset, where the
   * next owner of the topic starts. Without cluster mode it also releases them.
   */
  acknowledge(offset: number): void {
    if (!this.ownership) this.release(offset);
    if (offset <= this.acknowledged) return;
    this.acknowledged = offset;
    if (this.groupId) this.scheduleCommit();
  }

  async close(): Promise<void> {
    this.closed = true;
    clearTimeout(this.commitTimer);
    await this.starting?.catch(() => undefined);
    await this.commit();
    await this.consumer?.disconnect().catch(() => undefined);
    this.consumer = undefined;
  }

  private held(): number {
    return this.buffer.length - this.start;
  }

  /** Index of the first held record with offset > `offset` (binary search). */
  private firstAfter(offset: number): number {
    let lo = this.start;
    let hi = this.buffer.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (this.buffer[mid].offset <= offset) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  private begin(afterOffset: number): void {
    this.buffer = [];
    this.start = 0;
    // Acknowledgements count from here again (the group offset itself never moves back).
    this.floor = this.position = this.acknowledged = afterOffset;
    this.paused = false;
    this.starting = this.run(afterOffset).then(
      () => {
        this.starting = undefined;
      },
      (err: unknown) => {
        this.starting = undefined;
        this.failedAt = Date.now();
        this.log.error({ err, topic: this.kafkaTopic }, 'kafka reader: could not start the consumer');
      },
    );
  }

  private async run(afterOffset: number): Promise<void> {
    const generation = ++this.generation;
    await this.ensureTopic();
    const consumer = this.kafka.consumer({
      groupId: this.groupId ?? `${this.throwawayPrefix}${randomUUID()}`,
      // After a crash the group still lists the dead member: a new one's join waits for it at
      // most the rebalance timeout (the member is alone in its group, nobody else to wait for).
      rebalanceTimeout: 3000,
      sessionTimeout: 10_000,
      heartbeatInterval: 1000,
      maxBytesPerPartition: 4 * 1024 * 1024,
      // Long-poll limit of an empty fetch: a seek takes effect only when the fetch in flight returns.
      maxWaitTimeInMs: 500,
      allowAutoTopicCreation: false,
      // Cluster mode: the group (one per partition) gives its partition to one node.
      ...(this.ownership ? { partitionAssigners: [onePartitionAssigner(this.kafkaTopic, this.partition, this.ownership.nodeId)] } : {}),
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (payload.restart) return;
      // kafkajs gave up: the next read starts a new consumer where the buffer ends.
      this.log.error({ err: payload.error, topic: this.kafkaTopic }, 'kafka reader: the consumer stopped');
      if (this.consumer === consumer) this.consumer = undefined;
      this.failedAt = Date.now();
      if (this.ownership && generation === this.generation) this.ownershipChanged(false);
    });
    consumer.on(consumer.events.GROUP_JOIN, ({ payload }) => {
      const assigned = (payload.memberAssignment[this.kafkaTopic] ?? []).includes(this.partition);
      if (this.ownership) {
        if (generation === this.generation) this.ownershipChanged(assigned);
      } else if (this.groupId && !assigned) {
        this.log.warn({ topic: this.kafkaTopic, group: payload.groupId }, 'kafka reader: another consumer of the group reads this topic; this node\'s sinks get nothing from it');
      }
    });
    try {
      await consumer.connect();
      await consumer.subscribe({ topics: [this.kafkaTopic], fromBeginning: true });
      await consumer.run({ autoCommit: false, eachBatchAutoResolve: true, eachBatch: (payload) => this.take(payload, generation) });
      // Kafka offset of the record after port offset `afterOffset` is `afterOffset`. In cluster
      // mode the group's committed position is where reading starts.
      if (!this.ownership) consumer.seek({ topic: this.kafkaTopic, partition: this.partition, offset: String(afterOffset) });
    } catch (err) {
      await consumer.disconnect().catch(() => undefined);
      throw err;
    }
    if (this.closed) {
      await consumer.disconnect().catch(() => undefined);
      return;
    }
    this.consumer = consumer;
  }

  private async take({ batch, isStale }: EachBatchPayload, generation: number): Promise<void> {
    // A batch fetched before a seek belongs to the old position, one of a replaced consumer to nobody.
    if (generation !== this.generation || isStale() || batch.messages.length === 0 || batch.partition !== this.partition) return;
    if (this.ownership && !this.owned) return;
    let added = 0;
    for (const message of batch.messages) {
      const offset = Number(message.offset) + 1;
      if (offset <= this.position) continue;
      this.buffer.push({ offset, record: decodeKafkaRecord(message) });
      this.position = offset;
      added++;
    }
    if (added === 0) return;
    if (!this.paused && this.held() >= this.maxBuffered) {
      this.paused = true;
      this.consumer?.pause([{ topic: this.kafkaTopic, partitions: [this.partition] }]);
    }
    this.onRecords(Math.max(this.position, Number(batch.highWatermark)));
    for (const wake of [...this.waiters]) wake();
  }

  private resume(): void {
    this.paused = false;
    this.consumer?.resume([{ topic: this.kafkaTopic, partitions: [this.partition] }]);
  }

  /** Restarts the consumer at `afterOffset` (a reader needs records the buffer let go). */
  private reposition(afterOffset: number): void {
    if (this.ownership && this.consumer) {
      // Cluster mode: a restart would leave and rejoin the group (a rebalance); seek instead.
      this.buffer = [];
      this.start = 0;
      this.floor = this.position = afterOffset;
      this.consumer.seek({ topic: this.kafkaTopic, partition: this.partition, offset: String(afterOffset) });
      return;
    }
    const old = this.consumer;
    this.consumer = undefined;
    this.generation++;
    this.buffer = [];
    this.start = 0;
    this.floor = this.position = afterOffset;
    this.starting = (old ? old.disconnect().catch(() => undefined) : Promise.resolve()).then(() => {
      this.starting = undefined;
      if (!this.closed) this.begin(afterOffset);
    });
  }

  /**
   * Cluster mode: the group gave this node the topic, or took it. A gained topic starts afresh
   * at the group's committed position (what the buffer held belongs to an earlier turn).
   */
  private ownershipChanged(assigned: boolean): void {
    if (assigned === this.owned) return;
    this.owned = assigned;
    this.buffer = [];
    this.start = 0;
    this.floor = this.position = 0;
    if (!assigned) {
      this.log.info({ topic: this.kafkaTopic, partition: this.partition }, 'kafka reader: this node no longer processes the topic');
      this.ownership!.changed({ owned: false });
      return;
    }
    this.ownership!.committed().then(
      (committedThrough) => {
        if (!this.owned || this.closed) return;
        this.acknowledged = this.committed = committedThrough;
        this.release(committedThrough);
        this.log.info({ topic: this.kafkaTopic, partition: this.partition, committedThrough }, 'kafka reader: this node now processes the topic');
        this.ownership!.changed({ owned: true, committedThrough });
      },
      (err: unknown) => {
        // Without the position the sinks cannot resume safely: give the topic back by leaving the group.
        this.log.error({ err, topic: this.kafkaTopic }, 'kafka reader: cannot read the group position; leaving the group');
        this.owned = false;
        const consumer = this.consumer;
        this.consumer = undefined;
        this.generation++;
        this.failedAt = Date.now();
        void consumer?.disconnect().catch(() => undefined);
      },
    );
  }

  private scheduleCommit(): void {
    if (this.commitTimer || this.closed) return;
    this.commitTimer = setTimeout(() => {
      this.commitTimer = undefined;
      void this.commit();
    }, this.commitIntervalMs);
    this.commitTimer.unref();
  }

  /** Commits the acknowledged position as the group offset (Kafka offset of the next record). */
  private async commit(): Promise<void> {
    const offset = this.acknowledged;
    if (!this.groupId || !this.consumer || offset <= this.committed) return;
    try {
      await this.consumer.commitOffsets([{ topic: this.kafkaTopic, partition: this.partition, offset: String(offset) }]);
      this.committed = Math.max(this.committed, offset);
    } catch (err) {
      // Tried again with the next acknowledgement; the sinks' own positions are what counts.
      this.log.warn({ err, topic: this.kafkaTopic }, 'kafka reader: committing the group offset failed');
    }
  }
}
