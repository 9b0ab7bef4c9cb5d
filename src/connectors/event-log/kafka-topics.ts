/**
 * Which Kafka topic holds a source's records, and the topics' lifecycle on the broker.
 *
 * Naming: `<prefix><projectId>.<branchId>.<sourceId>` (prefix `sluice.` by default), e.g.
 * `sluice.1.1.my-source`. Source ids are lowercase letters, digits and dashes, so the name only
 * uses Kafka's legal characters and never mixes `.` with `_` (Kafka warns that the two collide
 * in metric names). A source can instead be bound to an existing topic (`bindings`, by source
 * id): Sluice then neither creates nor deletes that topic.
 */
import type { Admin, ITopicConfig } from 'kafkajs';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from '../kafka/record-batches.js';

export interface KafkaTopicOptions {
  /** Prefix of the topics Sluice creates (default `sluice.`). */
  prefix: string;
  /** Source id -> existing topic the source reads instead of its own. */
  bindings: Record<string, string>;
}

export const DEFAULT_TOPIC_PREFIX = 'sluice.';
/** Kafka's limit of a topic name. */
const MAX_TOPIC_NAME = 249;
const LEGAL = /^[a-zA-Z0-9._-]+$/;

/** The Kafka topic of a source. */
export function kafkaTopicName(options: KafkaTopicOptions, projectId: number, branchId: number, sourceId: string): string {
  return options.bindings[sourceId] ?? `${options.prefix}${projectId}.${branchId}.${sourceId}`;
}

/** The Kafka topic of an event-log topic (`<projectId>.<branchId>.<sourceId>`, see sourceTopic). */
export function kafkaTopicOf(options: KafkaTopicOptions, logTopic: string): { name: string; bound: boolean } {
  const sourceId = logTopic.split('.').slice(2).join('.');
  const bound = options.bindings[sourceId];
  if (bound !== undefined) return { name: bound, bound: true };
  const name = `${options.prefix}${logTopic}`;
  if (name.length > MAX_TOPIC_NAME || !LEGAL.test(name)) throw new Error(`"${name}" is not a legal Kafka topic name`);
  return { name, bound: false };
}

/** `a=topic1,b=topic2` (source id = topic) as a bindings record. */
export function parseTopicBindings(raw: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const part of raw.split(',').map((p) => p.trim()).filter(Boolean)) {
    const eq = part.indexOf('=');
    const sourceId = part.slice(0, eq).trim();
    const topic = part.slice(eq + 1).trim();
    if (eq <= 0 || !topic || !LEGAL.test(topic) || topic.length > MAX_TOPIC_NAME) {
      throw new Error(`"${part}" is not <sourceId>=<topic> with a legal Kafka topic name`);
    }
    out[sourceId] = topic;
  }
  return out;
}

export interface TopicSettings {
  partitions: number;
  /** Replicas of each partition; -1 takes the broker's default. */
  replication: number;
  retentionMs: number;
  retentionBytes: number;
  /** The largest record Sluice appends (the largest request body); sizes the topics' `max.message.bytes`. */
  maxRecordBytes?: number;
}

/**
 * `max.message.bytes` of the topics Sluice creates: a record batch holding the largest body
 * with the largest request headers (Node allows 16 KiB) must fit, or Kafka refuses that record
 * for ever (the client would retry a 503 without end). Never below Kafka's default.
 */
export function topicMaxMessageBytes(maxRecordBytes = 0): number {
  return Math.max(KAFKA_DEFAULT_MAX_MESSAGE_BYTES, maxRecordBytes + 64 * 1024);
}

/**
 * Creates a topic once (idempotent: an existing topic is taken as it is) and learns how many
 * partitions it has (each is a partition of its own for the sinks: event-log.ts partitionIdOf).
 */
export class TopicManager {
  private readonly ready = new Map<string, Promise<number>>();

  constructor(
    private readonly admin: Admin,
    private readonly settings: TopicSettings,
  ) {}

  /** Resolves with the topic's partition count once it exists. */
  ensure(name: string, bound: boolean): Promise<number> {
    let ready = this.ready.get(name);
    if (!ready) {
      ready = this.create(name, bound);
      this.ready.set(name, ready);
      // A failure is not cached: the next append or read tries again.
      ready.catch(() => this.ready.delete(name));
    }
    return ready;
  }

  /** The next ensure() checks the topic again (an append failed: it may have been deleted meanwhile). */
  forget(name: string): void {
    this.ready.delete(name);
  }

  /** Deletes the topic and waits until the broker no longer lists it, so that it can be created anew. */
  async delete(name: string): Promise<void> {
    this.ready.delete(name);
    if (!(await this.admin.listTopics()).includes(name)) return;
    await this.admin.deleteTopics({ topics: [name] });
    for (let i = 0; i < 100 && (await this.admin.listTopics()).includes(name); i++) await new Promise((r) => setTimeout(r, 100));
  }

  private async create(name: string, bound: boolean): Promise<number> {
    // Created only when missing (after a restart it exists; kafkajs logs an existing topic as an error).
    if (!bound && !(await this.admin.listTopics()).includes(name)) {
      const { partitions, replication, retentionMs, retentionBytes } = this.settings;
      const configEntries: ITopicConfig['configEntries'] = [
        { name: 'retention.ms', value: String(retentionMs) },
        // Kafka's retention.bytes is per partition.
        { name: 'retention.bytes', value: String(Math.ceil(retentionBytes / partitions)) },
        // With replicas, an acknowledged record is on at least two of them (acks=all).
        { name: 'min.insync.replicas', value: String(replication > 1 ? replication - 1 : 1) },
        // Kept bodies as they are: the broker does not recompress, and a producer's CreateTime is the receive time.
        { name: 'message.timestamp.type', value: 'CreateTime' },
        { name: 'max.message.bytes', value: String(topicMaxMessageBytes(this.settings.maxRecordBytes)) },
      ];
      // false when another node created it meanwhile: fine, it is taken as it is.
      await this.admin.createTopics({ topics: [{ topic: name, numPartitions: partitions, replicationFactor: replication, configEntries }], waitForLeaders: true });
    }
    const meta = await this.admin.fetchTopicMetadata({ topics: [name] });
    const count = meta.topics[0]?.partitions.length ?? 0;
    if (count < 1) throw new Error(`Kafka topic ${name} has no partitions`);
    return count;
  }
}
