import { describe, expect, it } from 'vitest';
import { ConfigError, loadConfig } from '../../src/config.js';

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
    expect(() => loadConfig(['--kafka-partitions', '3'], {})).toThrow(/only 1 partition/);
    expect(() => loadConfig(['--kafka-replication', '0'], {})).toThrow(/positive integer or -1/);
    expect(() => loadConfig(['--kafka-topics', 'a=b c'], {})).toThrow(/legal Kafka topic/);
  });
});
