/**
 * One way to build a kafkajs client for every Kafka adapter of a node (the event log, the
 * cluster's metadata log): the same brokers, TLS, SASL, timeouts, and kafkajs's own log lines
 * routed into the node's logger.
 */
import { Kafka, logLevel, type SASLOptions } from 'kafkajs';
import type { Logger } from '../../logger.js';

export interface KafkaClientOptions {
  brokers: string[];
  clientId?: string;
  ssl?: boolean;
  sasl?: SASLOptions;
}

export function createKafkaClient(options: KafkaClientOptions, log: Logger): Kafka {
  return new Kafka({
    clientId: options.clientId ?? 'sluice',
    brokers: options.brokers,
    ssl: options.ssl,
    sasl: options.sasl,
    logLevel: logLevel.WARN,
    logCreator: kafkajsLogs(log),
    connectionTimeout: 3000,
  });
}

function kafkajsLogs(log: Logger) {
  return () =>
    ({ level, log: entry }: { level: number; log: { message: string } & Record<string, unknown> }) => {
      const { message, timestamp: _t, logger: _l, ...rest } = entry;
      if (level <= logLevel.ERROR) log.error(rest, `kafkajs: ${message}`);
      else if (level === logLevel.WARN) log.warn(rest, `kafkajs: ${message}`);
      else log.debug(rest, `kafkajs: ${message}`);
    };
}
