/**
 * The topics' lifecycle on the broker: created with the partitions and limits a source needs,
 * deleted with it (never a topic bound to a source). Their names: model/kafka-topic-names.ts.
 */
import type { Admin, ITopicConfig } from 'kafkajs';
import { KAFKA_DEFAULT_MAX_MESSAGE_BYTES } from '../kafka/record-batches.js';

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
