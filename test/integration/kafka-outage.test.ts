/**
 * The Kafka event log while its broker is down: appends are not acknowledged (durable rejects
 * with EventLogUnavailableError after the append timeout: ingestion answers 503), and once the
 * broker is back, appends and reading go on without restarting the service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { pino } from 'pino';
import { EventLogFullError } from '../../src/ports/event-log.js';
import { KafkaEventLog } from '../../src/adapters/event-log/kafka-log.js';
import { EventLogUnavailableError } from '../../src/adapters/event-log/kafka-appender.js';
import { startBroker, stopBroker } from '../../src/tools/kafka-broker/broker-process.js';
import type { IngestRecord } from '../../src/model/record.js';
import { KAFKA_START_TIMEOUT_MS, startTestBroker, type TestBroker } from '../helpers/kafka-broker.js';

let broker: TestBroker;
let log: KafkaEventLog;

const record = (n: number): IngestRecord => ({ receivedAt: new Date(), ip: '', headers: {}, body: Buffer.from(`r${n}`), signal: '' });

async function readUntil(topic: string, after: number, test: (bodies: string[]) => boolean, timeoutMs = 60_000): Promise<string[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const bodies = log.read(topic, after, 1000).map((r) => r.record.body.toString());
    if (test(bodies)) return bodies;
    if (Date.now() > deadline) throw new Error(`records of ${topic}: ${JSON.stringify(bodies)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  broker = await startTestBroker();
  log = await KafkaEventLog.open(
    { brokers: [broker.bootstrap], topics: { prefix: 'sluice.', bindings: {} }, settings: { partitions: 1, replication: 1, retentionMs: 3_600_000, retentionBytes: 1024 ** 3 }, timeoutMs: 2000 },
    pino({ level: 'silent' }),
  );
}, KAFKA_START_TIMEOUT_MS);

afterAll(async () => {
  await log?.close();
  await broker?.stop();
}, 90_000);

describe('the Kafka event log without its broker', () => {
  it('refuses to acknowledge while the broker is down, and goes on once it is back', async () => {
    const topic = '1.1.outage';
    await log.append(topic, [record(1)]).durable;
    expect(await readUntil(topic, 0, (b) => b.length === 1)).toEqual(['r1']);
    log.acknowledge(topic, 1);

    await stopBroker(broker.dir);
    const during = log.append(topic, [record(2)]);
    const err = await during.durable.then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(EventLogUnavailableError);
    expect(err).toBeInstanceOf(EventLogFullError); // ingestion's 503

    // The same folder: same data, same port (kept from the last start).
    const again = await startBroker({ dir: broker.dir });
    expect(again.bootstrap).toBe(broker.bootstrap);
    await log.append(topic, [record(3)]).durable;
    // r2 was not acknowledged: the idempotent producer may still have delivered it (at least once).
    const bodies = await readUntil(topic, 1, (b) => b.includes('r3'));
    expect(bodies.filter((b) => b === 'r3')).toHaveLength(1);
    expect(bodies.filter((b) => b === 'r2').length).toBeLessThanOrEqual(1);
    expect(bodies.indexOf('r3')).toBe(bodies.length - 1);
  }, 150_000);
});
