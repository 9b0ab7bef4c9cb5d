/**
 * The cluster's metadata change log on Kafka: one compacted topic of one partition (a total
 * order of changes), Kafka key = metadata key, value = the msgpack of the new value or a
 * tombstone (null) for a deletion, headers `origin` and `seq` (see replicated-store.ts).
 * Compaction keeps the last change of every key, so a node that starts replays the current
 * state of the cluster, not its history.
 *
 * Every node reads the whole topic with a consumer of its own (a group per process, nothing
 * committed): the log is replayed from its start at every start.
 */
import type { Admin, Consumer, Kafka, Producer } from 'kafkajs';
import { Partitioners } from 'kafkajs';
import { pack, unpack } from 'msgpackr';
import type { Logger } from '../../logger.js';
import type { MetadataChange, MetadataChangeLog } from './replicated-store.js';
import type { KeySpace } from '../../ports/metadata-store.js';

const ID_BLOCK_KEY = 'cluster/idBlock';

/** The record reserve() appends, which every node applies like any change (shared, background). */
export const ID_BLOCK_KEY_SPACES: readonly KeySpace[] = [{ prefix: ID_BLOCK_KEY, shared: true, background: true }];
import { cutToBudget } from '../kafka/record-batches.js';

/** `max.message.bytes` of the metadata topic: room for one value far larger than any API body. */
const METADATA_MAX_MESSAGE_BYTES = 16 * 1024 * 1024;

export interface KafkaMetadataLogOptions {
  /** The topic's name, e.g. `sluice.1.metadata`. */
  topic: string;
  /** Replicas of the topic when Sluice creates it (-1 = the broker's default). */
  replication: number;
  /** Prefix of the consumer group of each node process. */
  groupPrefix: string;
}

export class KafkaMetadataLog implements MetadataChangeLog {
  private consumer: Consumer | undefined;
  private closed = false;
  /** The offset after the last record delivered (Kafka's next offset to read). */
  private delivered = 0;
  /** Callers waiting for `delivered` to reach their offset (deliveredThrough). */
  private waiters: Array<{ offset: number; resolve: () => void }> = [];

  private constructor(
    private readonly kafka: Kafka,
    private readonly admin: Admin,
    private readonly producer: Producer,
    private readonly options: KafkaMetadataLogOptions,
    private readonly log: Logger,
  ) {}

  static async open(kafka: Kafka, options: KafkaMetadataLogOptions, logger: Logger): Promise<KafkaMetadataLog> {
    const log = logger.child({ component: 'metadata-log' });
    const admin = kafka.admin();
    const producer = kafka.producer({ idempotent: true, maxInFlightRequests: 1, allowAutoTopicCreation: false, createPartitioner: Partitioners.DefaultPartitioner });
    try {
      await admin.connect();
      await producer.connect();
      await ensureCompactedTopic(admin, options);
    } catch (err) {
      await producer.disconnect().catch(() => undefined);
      await admin.disconnect().catch(() => undefined);
      throw new Error(`Cannot open the cluster metadata topic ${options.topic}: ${(err as Error).message}`, { cause: err });
    }
    return new KafkaMetadataLog(kafka, admin, producer, options, log);
  }

  async append(changes: MetadataChange[]): Promise<void> {
    if (this.closed) throw new Error('metadata log is closed');
    const messages = changes.map((c) => ({
      partition: 0,
      key: c.key,
      value: c.value === undefined ? null : pack(c.value),
      headers: { origin: c.origin, seq: String(c.seq) },
    }));
    // A large transaction goes in several sends, in order (one request in flight); the nodes
    // apply what they read in batches anyway, which never promised a transaction's bounds.
    for (const run of cutToBudget(messages)) await this.producer.send({ topic: this.options.topic, acks: -1, messages: run });
  }

  /**
   * The offset of a record appended for it (`cluster/idBlock`, value the reserving node):
   * offsets of one partition are unique and grow. Compaction keeps only the last such record,
   * which every node applies like any change (a harmless key).
   */
  async reserve(): Promise<number> {
    if (this.closed) throw new Error('metadata log is closed');
    const [meta] = await this.producer.send({
      topic: this.options.topic,
      acks: -1,
      messages: [{ partition: 0, key: ID_BLOCK_KEY, value: pack(`${process.pid}`), headers: { origin: 'reserve', seq: '0' } }],
    });
    if (meta?.baseOffset === undefined) throw new Error('the metadata log did not say where the reservation went');
    return Number(meta.baseOffset);
  }

  async follow(deliver: (changes: MetadataChange[]) => void): Promise<void> {
    const head = await this.headOffset();
    let failed!: (err: Error) => void;
    const crashed = new Promise<never>((_, reject) => (failed = reject));
    const consumer = this.kafka.consumer({
      groupId: `${this.options.groupPrefix}${randomId()}`,
      sessionTimeout: 10_000,
      heartbeatInterval: 1000,
      rebalanceTimeout: 3000,
      maxWaitTimeInMs: 100,
      allowAutoTopicCreation: false,
    });
    consumer.on(consumer.events.CRASH, ({ payload }) => {
      if (payload.restart) return;
      this.log.error({ err: payload.error }, 'metadata log: the consumer stopped; this node no longer sees changes of other nodes');
      failed(payload.error);
    });
    await consumer.connect();
    await consumer.subscribe({ topics: [this.options.topic], fromBeginning: true });
    await consumer.run({
      autoCommit: false,
      eachBatchAutoResolve: true,
      eachBatch: async ({ batch }) => {
        const changes: MetadataChange[] = [];
        for (const m of batch.messages) {
          if (m.key === null) continue;
          const origin = m.headers?.origin?.toString() ?? '';
          const seq = Number(m.headers?.seq?.toString() ?? 0);
          changes.push({ key: m.key.toString(), value: m.value === null ? undefined : unpack(m.value), origin, seq });
        }
        if (changes.length > 0) deliver(changes);
        this.noteDelivered(Number(batch.lastOffset()) + 1);
      },
    });
    this.consumer = consumer;
    return Promise.race([this.deliveredThrough(head), crashed]);
  }

  /** Resolves once the records the topic holds now were delivered (at most `timeoutMs`). */
  async caughtUp(timeoutMs: number): Promise<void> {
    if (this.closed) return;
    const deadline = Date.now() + timeoutMs;
    await this.deliveredThrough(await this.headOffset(), deadline);
  }

  /** The offset after the topic's last record (its high watermark). */
  private async headOffset(): Promise<number> {
    const offsets = await this.admin.fetchTopicOffsets(this.options.topic);
    return Number(offsets.find((p) => p.partition === 0)?.high ?? 0);
  }

  /** Resolves once the consumer delivered every record before `offset`, or at `deadline` (epoch ms). */
  private deliveredThrough(offset: number, deadline = Infinity): Promise<void> {
    if (this.delivered >= offset) return Promise.resolve();
    return new Promise<void>((resolve) => {
      const timer = deadline === Infinity ? undefined : setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve();
      }, Math.max(0, deadline - Date.now()));
      const waiter = {
        offset,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      };
      this.waiters.push(waiter);
    });
  }

  private noteDelivered(offset: number): void {
    if (offset <= this.delivered) return;
    this.delivered = offset;
    const ready = this.waiters.filter((w) => w.offset <= offset);
    if (ready.length === 0) return;
    this.waiters = this.waiters.filter((w) => w.offset > offset);
    for (const w of ready) w.resolve();
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiters.splice(0)) w.resolve();
    await this.consumer?.disconnect().catch(() => undefined);
    await this.producer.disconnect().catch(() => undefined);
    await this.admin.disconnect().catch(() => undefined);
  }
}

function randomId(): string {
  return `${process.pid}.${Date.now().toString(36)}.${Math.random().toString(36).slice(2, 8)}`;
}

/** Creates the topic (compacted, one partition) when missing; an existing one must have one partition. */
async function ensureCompactedTopic(admin: Admin, options: KafkaMetadataLogOptions): Promise<void> {
  const { topic, replication } = options;
  if (!(await admin.listTopics()).includes(topic)) {
    await admin.createTopics({
      topics: [
        {
          topic,
          numPartitions: 1,
          replicationFactor: replication,
          configEntries: [
            { name: 'cleanup.policy', value: 'compact' },
            { name: 'min.insync.replicas', value: String(replication > 1 ? replication - 1 : 1) },
            // One value may be large (a component configuration): it must fit into a record batch.
            { name: 'max.message.bytes', value: String(METADATA_MAX_MESSAGE_BYTES) },
          ],
        },
      ],
      waitForLeaders: true,
    });
  }
  const meta = await admin.fetchTopicMetadata({ topics: [topic] });
  const count = meta.topics[0]?.partitions.length ?? 0;
  if (count !== 1) throw new Error(`the topic has ${count} partitions; the metadata log needs exactly 1 (one order of changes)`);
}
