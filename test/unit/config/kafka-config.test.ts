import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../../src/config.js';

describe('Kafka options of sluice serve', () => {
  it('default to the embedded log', () => {
    const c = loadConfig([], {});
    expect(c.kafkaBrokers).toBeUndefined();
    expect(c).toMatchObject({ kafkaPartitions: 1, kafkaReplication: -1, kafkaTopicPrefix: 'sluice.', kafkaTopics: {} });
  });

  it('read flags and SLUICE_KAFKA_* variables (flags win)', () => {
    const c = loadConfig(['--kafka', 'k1:9092, k2:9093', '--kafka-replication', '3'], {
      SLUICE_KAFKA_BROKERS: 'ignored:1',
      SLUICE_KAFKA_TOPIC_PREFIX: 'acme.',
      SLUICE_KAFKA_TOPICS: 'orders=legacy.orders',
    });
    expect(c).toMatchObject({ kafkaBrokers: ['k1:9092', 'k2:9093'], kafkaReplication: 3, kafkaTopicPrefix: 'acme.', kafkaTopics: { orders: 'legacy.orders' } });
  });

  it('refuse bad values with a message', () => {
    expect(() => loadConfig(['--kafka', 'no-port'], {})).toThrow(ConfigError);
    expect(() => loadConfig(['--kafka-partitions', '0'], {})).toThrow(/at least 1/);
    expect(loadConfig(['--kafka-partitions', '3'], {}).kafkaPartitions).toBe(3);
    expect(() => loadConfig(['--kafka-replication', '0'], {})).toThrow(/positive integer or -1/);
    expect(() => loadConfig(['--kafka-topics', 'a=b c'], {})).toThrow(/legal Kafka topic/);
  });
});

describe('cluster options of sluice serve', () => {
  it('give a node every role and its own tables file by default', () => {
    const c = loadConfig(['--data-dir', '/srv/sluice'], {});
    expect([...c.roles].sort()).toEqual(['api', 'import', 'ingest', 'jobs', 'sink']);
    expect(c.targetPath).toBe('/srv/sluice/tables.duckdb');
  });

  it('take a role list and a shared tables file', () => {
    const c = loadConfig(['--kafka', 'k:9092', '--roles', 'api, ingest'], { SLUICE_TARGET_PATH: '/shared/tables.duckdb' });
    expect([...c.roles]).toEqual(['api', 'ingest']);
    expect(c.targetPath).toBe('/shared/tables.duckdb');
  });

  it('refuse role lists that cannot work', () => {
    expect(() => loadConfig(['--kafka', 'k:9092', '--roles', 'api,writer'], {})).toThrow(/unknown role "writer"/);
    expect(() => loadConfig(['--kafka', 'k:9092', '--roles', ','], {})).toThrow(/none given/);
    expect(() => loadConfig(['--roles', 'api,ingest'], {})).toThrow(/without --kafka must have every role/);
    expect(() => loadConfig(['--kafka', 'k:9092', '--roles', 'api,sink'], {})).toThrow(/"sink" and "import" go together/);
  });
});
