/**
 * The Kafka adapter of the EventLog port (docs/architecture.md "Ports and adapters"): each event-log topic
 * (one per source) is a Kafka topic (model/kafka-topic-names.ts names them) whose partitions are the
 * port's partitions (event-log.ts partitionIdOf), records are Kafka records in the format producers can
 * write themselves (kafka-record.ts), appends go through one idempotent producer with acks=-1
 * and group commit (kafka-appender.ts; each append to one partition, in turn), and each partition
 * that is read has a consumer, in a group of its own, feeding a buffer (kafka-reader.ts).
 *
 * Offsets: port offset = Kafka offset + 1 (the port counts from 1), per partition. Append results carry -1
 * offsets: Kafka assigns them when it acknowledges. Retention is the broker's (the topics are
 * created with retention.ms and retention.bytes); applyRetention removes nothing here.
 */
import { randomUUID } from 'node:crypto';
import { Partitioners, type Admin, type Kafka, type Producer } from 'kafkajs';
import { createKafkaClient, type KafkaClientOptions } from '../kafka/client.js';
import type { Logger } from '../../logger.js';
import type { IngestRecord } from '../../model/record.js';
import { parsePartitionId, partitionIdOf, type AppendResult, type EventLog, type LoggedRecord, type OwnershipChange } from '../../ports/event-log.js';
import { KafkaAppender, type AppenderOptions } from './kafka-appender.js';
import { encodeKafkaRecord } from './kafka-record.js';
import { TopicReader, type ReaderOptions } from './kafka-reader.js';
import { TopicManager, type TopicSettings } from './kafka-topics.js';
import { kafkaTopicOf, type KafkaTopicOptions } from '../../model/kafka-topic-names.js';

/** How long close() waits for consumers and connections to end. */
const CLOSE_WAIT_MS = 5000;
/** A random-access reader unused this long is closed. */
const RANDOM_READER_IDLE_MS = 30_000;

export interface KafkaEventLogOptions extends AppenderOptions, ReaderOptions, KafkaClientOptions {
  topics: KafkaTopicOptions;
  settings: TopicSettings;
  /**
   * The sinks read a topic in consumer group `<groupPrefix><topic>` (default prefix
   * `sluice-log.`), whose offset is their acknowledged position; replays in throwaway groups
   * `<groupPrefix>random.<topic>.<uuid>`.
   */
  groupPrefix?: string;
  /** This process in the cluster (the server's node id); a random one when not given. */
  nodeId?: string;
}

export class KafkaEventLog implements EventLog {
  private readonly readers = new Map<string, TopicReader>();
  /** Readers of random access (fetch), closed when unused for a while. */
  private readonly randomReaders = new Map<string, { reader: TopicReader; idle?: NodeJS.Timeout }>();
  private readonly listeners = new Map<string, Set<(head: number) => void>>();
  private readonly ownershipListeners = new Set<(partitionId: string, change: OwnershipChange) => void>();
  /** This process's id in the partition groups (kafka-assigner.ts orders the nodes by it). */
  private readonly nodeId: string;
  /** Highest offset known per event-log topic (acknowledged appends, fetched high watermarks). */
  private readonly heads = new Map<string, number>();
  /** Kafka topic -> event-log topic, for acknowledgements that name the Kafka topic. */
  private readonly logTopics = new Map<string, string>();
  private closed = false;
  private readonly appender: KafkaAppender;
  private readonly topicManager: TopicManager;

  private constructor(
    private readonly kafka: Kafka,
    private readonly admin: Admin,
    private readonly producer: Producer,
    private readonly options: KafkaEventLogOptions,
    private readonly log: Logger,
  ) {
    this.appender = new KafkaAppender(producer, (kafkaTopic, partition, head) => this.noteHead(kafkaTopic, partition, head), options);
    this.topicManager = new TopicManager(admin, options.settings);
    this.nodeId = options.nodeId ?? randomUUID();
  }

  /** Connects the producer and the admin client; fails when no broker answers. */
  static async open(options: KafkaEventLogOptions, logger: Logger): Promise<KafkaEventLog> {
    const log = logger.child({ component: 'kafka-log' });
    const kafka = createKafkaClient(options, log);
    const admin = kafka.admin();
    // Idempotent: the broker drops duplicates of retried sends; one request in flight keeps order.
    // Partitions are chosen explicitly (0): the partitioner only matters for its v2 warning.
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
    try {
      await admin.connect();
      await producer.connect();
    } catch (err) {
      await producer.disconnect().catch(() => undefined);
      await admin.disconnect().catch(() => undefined);
      throw new Error(`Cannot reach Kafka at ${options.brokers.join(',')}: ${(err as Error).message}`, { cause: err });
    }
    const self = new KafkaEventLog(kafka, admin, producer, options, log);
    log.info({ brokers: options.brokers, partitions: options.settings.partitions, replication: options.settings.replication }, 'event log: Kafka');
    return self;
  }

  private get groupPrefix(): string {
    return this.options.groupPrefix ?? 'sluice-log.';
  }

  /** The Kafka topic of an event-log topic (what the source's detail shows). */
  kafkaTopic(topic: string): string {
    return kafkaTopicOf(this.options.topics, topic).name;
  }

  append(topic: string, records: IngestRecord[]): AppendResult {
    if (this.closed) throw new Error('event log is closed');
    if (records.length === 0) return { firstOffset: -1, lastOffset: -1, durable: Promise.resolve() };
    const { name, bound } = kafkaTopicOf(this.options.topics, topic);
    this.logTopics.set(name, topic);
    const durable = this.appender.append(name, records.map(encodeKafkaRecord), this.topicManager.ensure(name, bound));
    // A failed append may mean the topic is gone (deleted with its source): check it again next time.
    durable.catch(() => this.topicManager.forget(name));
    return { firstOffset: -1, lastOffset: -1, durable };
  }

  read(partitionId: string, afterOffset: number, limit: number): LoggedRecord[] {
    if (this.closed || limit <= 0) return [];
    return this.reader(partitionId).read(afterOffset, limit);
  }

  /**
   * Random access: a consumer of its own per topic (group `<groupPrefix>random.<topic>.<uuid>`,
   * never committed), so that a replay does not move the sinks' reading. Ends at the topic's high
   * watermark of the moment of the call.
   */
  async fetch(partitionId: string, afterOffset: number, limit: number): Promise<LoggedRecord[]> {
    if (this.closed || limit <= 0) return [];
    const { topic, partition } = parsePartitionId(partitionId);
    const { name, bound } = kafkaTopicOf(this.options.topics, topic);
    await this.topicManager.ensure(name, bound);
    const offsets = await this.admin.fetchTopicOffsets(name);
    const head = Number(offsets.find((p) => p.partition === partition)?.high ?? 0);
    if (afterOffset >= head) return [];
    let entry = this.randomReaders.get(partitionId);
    if (!entry) {
      const reader = new TopicReader(this.kafka, name, partition, undefined, `${this.groupPrefix}random.${name}.`, async () => undefined, () => undefined, this.log, this.options);
      entry = { reader };
      this.randomReaders.set(partitionId, entry);
    }
    clearTimeout(entry.idle);
    try {
      return await entry.reader.fetch(afterOffset, limit, head);
    } finally {
      const current = entry;
      current.idle = setTimeout(() => {
        if (this.randomReaders.get(partitionId) === current) this.randomReaders.delete(partitionId);
        void current.reader.close();
      }, RANDOM_READER_IDLE_MS);
      current.idle.unref();
    }
  }

  acknowledge(partitionId: string, throughOffset: number): void {
    this.readers.get(partitionId)?.acknowledge(throughOffset);
  }

  release(partitionId: string, throughOffset: number): void {
    this.readers.get(partitionId)?.release(throughOffset);
  }

  /** The nodes of a cluster split the topics through their consumer groups (one per topic). */
  readonly coordinated = true;

  /** Joins the group of every partition of the topic (created first if Sluice owns it). */
  claim(topic: string): void {
    if (this.closed) return;
    const { name, bound } = kafkaTopicOf(this.options.topics, topic);
    this.topicManager.ensure(name, bound).then(
      (partitions) => {
        if (this.closed) return;
        for (let p = 0; p < partitions; p++) this.reader(partitionIdOf(topic, p)).claim();
      },
      (err: unknown) => this.log.warn({ err, topic: name }, 'kafka: cannot claim the topic yet; trying again at the next check'),
    );
  }

  onOwnership(listener: (partitionId: string, change: OwnershipChange) => void): () => void {
    this.ownershipListeners.add(listener);
    return () => void this.ownershipListeners.delete(listener);
  }

  headOffset(partitionId: string): number {
    return this.heads.get(partitionId) ?? 0;
  }

  /** Not tracked locally (the broker's retention moves it): 1, or what a reader was given. */
  tailOffset(): number {
    return 1;
  }

  onDurable(partitionId: string, listener: (headOffset: number) => void): () => void {
    let set = this.listeners.get(partitionId);
    if (!set) {
      set = new Set();
      this.listeners.set(partitionId, set);
    }
    set.add(listener);
    return () => void set.delete(listener);
  }

  applyRetention(): Map<string, number> {
    return new Map();
  }

  async dropTopic(topic: string): Promise<void> {
    const ofTopic = (partitionId: string) => parsePartitionId(partitionId).topic === topic;
    for (const [partitionId, reader] of [...this.readers].filter(([s]) => ofTopic(s))) {
      this.readers.delete(partitionId);
      this.heads.delete(partitionId);
      await reader.close();
    }
    for (const [partitionId, random] of [...this.randomReaders].filter(([s]) => ofTopic(s))) {
      this.randomReaders.delete(partitionId);
      clearTimeout(random.idle);
      await random.reader.close();
    }
    const { name, bound } = kafkaTopicOf(this.options.topics, topic);
    // A bound topic belongs to its producers: the source only stops reading it.
    if (!bound) await this.topicManager.delete(name);
  }

  /** Readiness: the broker answers a metadata request within 2 s. */
  async ready(): Promise<string | undefined> {
    let timer: NodeJS.Timeout | undefined;
    try {
      await Promise.race([
        this.admin.describeCluster(),
        new Promise((_, reject) => {
          timer = setTimeout(() => reject(new Error('no answer within 2 s')), 2000);
        }),
      ]);
      return undefined;
    } catch (err) {
      return `Kafka does not answer: ${(err as Error).message}`;
    } finally {
      clearTimeout(timer);
    }
  }

  /** The broker keeps the bytes (its retention settings): not reported. */
  bytesHeld(): undefined {
    return undefined;
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // Bounded: with the broker down, sends retry and disconnects wait; the process must still stop.
    await within(this.appender.close(), this.options.timeoutMs ?? 10_000);
    const readers = [...this.readers.values(), ...[...this.randomReaders.values()].map((e) => (clearTimeout(e.idle), e.reader))];
    await within(Promise.all(readers.map((r) => r.close())), CLOSE_WAIT_MS);
    await within(Promise.all([this.producer.disconnect(), this.admin.disconnect()]), CLOSE_WAIT_MS);
  }

  /**
   * The reader of a partition, in the partition's consumer group:
   * `<groupPrefix><topic>` for partition 0 (the name from before partitions), else
   * `<groupPrefix><topic>.p<n>`.
   */
  private reader(partitionId: string): TopicReader {
    let reader = this.readers.get(partitionId);
    if (!reader) {
      const { topic, partition } = parsePartitionId(partitionId);
      const { name, bound } = kafkaTopicOf(this.options.topics, topic);
      this.logTopics.set(name, topic);
      const groupId = partition === 0 ? `${this.groupPrefix}${name}` : `${this.groupPrefix}${name}.p${partition}`;
      reader = new TopicReader(
        this.kafka,
        name,
        partition,
        groupId,
        '',
        () => this.topicManager.ensure(name, bound),
        (head) => this.recordsArrived(partitionId, head),
        this.log,
        this.options,
        {
          nodeId: this.nodeId,
          committed: () => this.committedThrough(groupId, name, partition),
          changed: (change) => {
            for (const listener of this.ownershipListeners) {
              try {
                listener(partitionId, change);
              } catch (err) {
                this.log.error({ err, topic }, 'ownership listener failed');
              }
            }
          },
        },
      );
      this.readers.set(partitionId, reader);
    }
    return reader;
  }

  /** The group's committed offset of the partition as a port offset (Kafka's next offset = port offset done through). */
  private async committedThrough(groupId: string, name: string, partition: number): Promise<number> {
    const [entry] = await this.admin.fetchOffsets({ groupId, topics: [name] });
    const offset = Number(entry?.partitions.find((p) => p.partition === partition)?.offset ?? -1);
    return offset > 0 ? offset : 0;
  }

  private noteHead(kafkaTopic: string, partition: number, head: number): void {
    const topic = this.logTopics.get(kafkaTopic);
    if (topic === undefined) return;
    const partitionId = partitionIdOf(topic, partition);
    if (head > (this.heads.get(partitionId) ?? 0)) this.heads.set(partitionId, head);
  }

  private recordsArrived(partitionId: string, head: number): void {
    if (head > (this.heads.get(partitionId) ?? 0)) this.heads.set(partitionId, head);
    for (const listener of this.listeners.get(partitionId) ?? []) {
      try {
        listener(head);
      } catch {
        // A listener's failure is its own.
      }
    }
  }
}

/** Waits for `work` (its failure ignored), but at most `ms`. */
async function within(work: Promise<unknown>, ms: number): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([work.catch(() => undefined), new Promise((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}
