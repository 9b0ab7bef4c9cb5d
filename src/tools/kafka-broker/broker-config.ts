/**
 * The files of a single-node KRaft broker (one JVM that is controller and broker): its
 * server.properties and log4j configuration, sized for a developer machine or a CI runner of
 * two cores. Pure text; the process module writes them into the broker's folder.
 */
import { randomBytes } from 'node:crypto';

export interface BrokerPorts {
  /** Client listener (the bootstrap address). */
  port: number;
  /** KRaft controller listener. */
  controllerPort: number;
}

export function serverProperties(host: string, ports: BrokerPorts, logDir: string): string {
  const lines = [
    '# Written by `sluice kafka start`: a single-node KRaft broker for development and tests.',
    'process.roles=broker,controller',
    'node.id=1',
    `controller.quorum.voters=1@${host}:${ports.controllerPort}`,
    `listeners=PLAINTEXT://${host}:${ports.port},CONTROLLER://${host}:${ports.controllerPort}`,
    `advertised.listeners=PLAINTEXT://${host}:${ports.port}`,
    'controller.listener.names=CONTROLLER',
    'inter.broker.listener.name=PLAINTEXT',
    'listener.security.protocol.map=PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT',
    `log.dirs=${logDir}`,
    // Sluice creates its topics itself, with the partitions and replication it is told to use.
    'auto.create.topics.enable=false',
    'num.partitions=1',
    // One node: internal topics cannot have more replicas, and one partition each is created fast.
    'offsets.topic.replication.factor=1',
    'offsets.topic.num.partitions=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
    'transaction.state.log.num.partitions=1',
    // A consumer joining alone need not wait 3 s for others.
    'group.initial.rebalance.delay.ms=0',
    // Two cores: few threads.
    'num.network.threads=2',
    'num.io.threads=2',
    'background.threads=2',
    'num.recovery.threads.per.data.dir=1',
    '',
  ];
  return lines.join('\n');
}

export function log4jProperties(logFile: string): string {
  return [
    'log4j.rootLogger=INFO, file',
    'log4j.appender.file=org.apache.log4j.FileAppender',
    `log4j.appender.file.File=${logFile}`,
    'log4j.appender.file.layout=org.apache.log4j.PatternLayout',
    'log4j.appender.file.layout.ConversionPattern=[%d] %p %m (%c)%n',
    // The controller and the request logs are chatty at INFO.
    'log4j.logger.kafka.controller=WARN',
    'log4j.logger.org.apache.kafka.controller=WARN',
    'log4j.logger.kafka.request.logger=WARN',
    'log4j.logger.state.change.logger=WARN',
    '',
  ].join('\n');
}

/**
 * A cluster id as Kafka's `random-uuid` makes it: 16 random bytes, URL-safe base64 without
 * padding. Like Kafka's `Uuid.randomUuid`, it never starts with `-`: the storage tool's argument
 * parser would read such an id as an option (one format in 64 failed that way).
 */
export function newClusterId(random: () => Buffer = () => randomBytes(16)): string {
  for (;;) {
    const id = random().toString('base64url');
    if (!id.startsWith('-')) return id;
  }
}
