/**
 * The metadata store a node runs on: its LMDB view under `<dataDir>/metadata`, shared with the
 * other nodes through the cluster's metadata topic when the event log is Kafka (cluster mode:
 * every `sluice serve --kafka` node of a project on the same brokers and topic prefix is one
 * cluster; a single such node is a cluster of one).
 */
import { join } from 'node:path';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import { createKafkaClient } from '../adapters/kafka/client.js';
import { KafkaMetadataLog } from '../adapters/metadata/kafka-metadata-log.js';
import { LmdbMetadataStore } from '../adapters/metadata/lmdb-store.js';
import { ReplicatedMetadataStore } from '../adapters/metadata/replicated-store.js';
import type { KeySpace, MetadataStore } from '../ports/metadata-store.js';

/** The cluster's metadata topic: `<prefix><projectId>.metadata` (source topics are `<prefix><projectId>.<branchId>.<sourceId>`). */
export function metadataTopic(config: Pick<Config, 'kafkaTopicPrefix' | 'projectId'>): string {
  return `${config.kafkaTopicPrefix}${config.projectId}.metadata`;
}

/**
 * `nodeId`: this process in the cluster (its metadata changes carry it); `keySpaces`: every
 * repository's keys, of which cluster mode replicates the shared ones.
 */
export async function openMetadataStore(config: Config, logger: Logger, nodeId: string, keySpaces: readonly KeySpace[]): Promise<MetadataStore> {
  const local = new LmdbMetadataStore(join(config.dataDir, 'metadata'));
  if (!config.kafkaBrokers) return local;
  const log = logger.child({ component: 'metadata' });
  try {
    const kafka = createKafkaClient({ brokers: config.kafkaBrokers, clientId: `sluice-${config.projectId}-metadata` }, log);
    const changeLog = await KafkaMetadataLog.open(kafka, { topic: metadataTopic(config), replication: config.kafkaReplication, groupPrefix: `sluice-meta.${config.projectId}.` }, log);
    const started = Date.now();
    const store = await ReplicatedMetadataStore.open(local, changeLog, keySpaces, { origin: nodeId });
    log.info({ topic: metadataTopic(config), replayMs: Date.now() - started }, 'cluster metadata replayed');
    return store;
  } catch (err) {
    await local.close();
    throw err;
  }
}
