/**
 * The event log a node runs on (docs/architecture.md "One process, every role; many processes, one
 * Kafka"): the embedded LMDB log under `<dataDir>/log`, or Kafka when brokers are configured.
 */
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { EventLog } from '../ports/event-log.js';
import { KafkaEventLog } from '../adapters/event-log/kafka-log.js';
import { LmdbEventLog } from '../adapters/event-log/lmdb-log.js';

/** `nodeId`: this process in the cluster (Kafka's partition groups order the nodes by it). */
export async function openEventLog(config: Config, logger: Logger, nodeId: string): Promise<EventLog> {
  if (!config.kafkaBrokers) {
    return LmdbEventLog.open(join(config.dataDir, 'log'), { maxBytes: config.logMaxBytes, minFreeDiskBytes: config.logMinFreeDiskBytes });
  }
  return KafkaEventLog.open(
    {
      brokers: config.kafkaBrokers,
      clientId: `sluice-${config.projectId}`,
      nodeId,
      topics: { prefix: config.kafkaTopicPrefix, bindings: config.kafkaTopics },
      settings: {
        partitions: config.kafkaPartitions,
        replication: config.kafkaReplication,
        retentionMs: config.logRetentionMs,
        retentionBytes: config.logMaxBytesPerTopic,
        maxRecordBytes: Math.max(config.maxBodyBytes, config.otlpMaxBodyBytes),
      },
    },
    logger,
  );
}
