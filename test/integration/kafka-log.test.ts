/**
 * The Kafka adapter of the EventLog port against a real broker (started like `sluice kafka
 * start`): append and read in order, the record format producers write, onDurable, the group
 * offset committed only on acknowledgement, repositioning, bound topics, dropping topics.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Kafka, logLevel, type Admin } from 'kafkajs';
import { pino } from 'pino';
import type { LoggedRecord } from '../../src/ports/event-log.js';
import { KafkaEventLog } from '../../src/adapters/event-log/kafka-log.js';
import { TopicManager } from '../../src/adapters/event-log/kafka-topics.js';
import { runKafkaCli } from '../../src/tools/kafka-broker/cli.js';
import type { IngestRecord } from '../../src/model/record.js';
import { KAFKA_START_TIMEOUT_MS, startTestBroker, type TestBroker } from '../helpers/kafka-broker.js';

let broker: TestBroker;
let log: KafkaEventLog;
let admin: Admin;
let kafka: Kafka;
const SETTINGS = { partitions: 1, replication: 1, retentionMs: 3_600_000, retentionBytes: 1024 ** 3, maxRecordBytes: 6 * 1024 ** 2 };

function record(n: number, extra: Partial<IngestRecord> = {}): IngestRecord {
  return { receivedAt: new Date(1_700_000_000_000 + n), ip: '10.0.0.1', headers: { 'Content-Type': 'application/json', 'X-N': String(n) }, body: Buffer.from(JSON.stringify({ n })), signal: '', ...extra };
}

/** Reads until `count` records after `after` are there (the adapter fills its buffer asynchronously). */
async function readUntil(topic: string, after: number, count: number, timeoutMs = 20_000): Promise<LoggedRecord[]> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const got = log.read(topic, after, 100_000);
    if (got.length >= count) return got;
    if (Date.now() > deadline) throw new Error(`only ${got.length} of ${count} records of ${topic} after ${after}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function until<T>(what: string, fn: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

beforeAll(async () => {
  broker = await startTestBroker();
  log = await KafkaEventLog.open(
    { brokers: [broker.bootstrap], topics: { prefix: 'sluice.', bindings: { bound: 'external.orders', wide: 'external.wide', plain: 'external.plain' } }, settings: SETTINGS, commitIntervalMs: 100 },
    pino({ level: 'silent' }),
  );
  kafka = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING });
  admin = kafka.admin();
  await admin.connect();
}, KAFKA_START_TIMEOUT_MS);

afterAll(async () => {
  await admin?.disconnect();
  await log?.close();
  await broker?.stop();
}, 60_000);

describe('the Kafka event log', () => {
  it('appends durably (acks from all in-sync replicas) and reads back in order, offsets from 1', async () => {
    const topic = '1.1.orders';
    const first = log.append(topic, [record(1), record(2, { ip: '', signal: 'logs' })]);
    expect(first.firstOffset).toBe(-1);
    await first.durable;
    // Many appends of one moment: group commit keeps call order.
    const many = Array.from({ length: 200 }, (_, i) => log.append(topic, [record(3 + i)]));
    await Promise.all(many.map((a) => a.durable));
    expect(log.headOffset(topic)).toBe(202);
    const got = await readUntil(topic, 0, 202);
    expect(got.map((r) => r.offset)).toEqual(Array.from({ length: 202 }, (_, i) => i + 1));
    expect(got.map((r) => JSON.parse(r.record.body.toString()).n)).toEqual(Array.from({ length: 202 }, (_, i) => i + 1));
    expect(got[0].record).toEqual(record(1));
    expect(got[1].record).toEqual(record(2, { ip: '', signal: 'logs' }));
    expect(log.read(topic, 200, 10).map((r) => r.offset)).toEqual([201, 202]);
    expect(log.read(topic, 0, 3).map((r) => r.offset)).toEqual([1, 2, 3]);
    // The source's own topic was created by the adapter, with one partition.
    const meta = await admin.fetchTopicMetadata({ topics: ['sluice.1.1.orders'] });
    expect(meta.topics[0].partitions).toHaveLength(1);
  });

  it('tells onDurable listeners when records arrive', async () => {
    const topic = '1.1.listened';
    const heads: number[] = [];
    const off = log.onDurable(topic, (head) => heads.push(head));
    expect(log.read(topic, 0, 10)).toEqual([]); // starts the reader
    await log.append(topic, [record(1)]).durable;
    await until('a notification', async () => (heads.length > 0 ? true : undefined));
    expect(heads.at(-1)).toBe(1);
    expect(log.read(topic, 0, 10)).toHaveLength(1);
    off();
  });

  it('commits the consumer group offset only when acknowledged, lets records go when released, and repositions for older reads', async () => {
    const topic = '1.1.acked';
    await log.append(topic, [1, 2, 3, 4, 5].map((n) => record(n))).durable;
    await readUntil(topic, 0, 5);
    const groupOffset = async () => (await admin.fetchOffsets({ groupId: 'sluice-log.sluice.1.1.acked', topics: ['sluice.1.1.acked'] }))[0].partitions[0].offset;
    await new Promise((r) => setTimeout(r, 400));
    expect(await groupOffset()).toBe('-1'); // read, but not acknowledged: nothing committed
    log.acknowledge(topic, 3);
    // Kafka's committed offset is the next record to read: port offset 3 = Kafka offset 2, next 3.
    await until('the group offset', async () => ((await groupOffset()) === '3' ? true : undefined));
    // Acknowledged (cluster mode: done in the target) is not released: the buffer still holds them.
    expect(log.read(topic, 1, 10).map((r) => r.offset)).toEqual([2, 3, 4, 5]);
    // Released records leave the buffer; a reader that needs them again gets them after a seek.
    log.release(topic, 3);
    expect(log.read(topic, 1, 10)).toEqual([]);
    const again = await readUntil(topic, 1, 4);
    expect(again.map((r) => r.offset)).toEqual([2, 3, 4, 5]);
  });

  it('fetches at random positions (replays) without moving the sinks\' reading', async () => {
    const topic = '1.1.random';
    await log.append(topic, Array.from({ length: 50 }, (_, i) => record(i + 1))).durable;
    const sinkView = await readUntil(topic, 0, 50);
    expect(sinkView).toHaveLength(50);
    expect((await log.fetch(topic, 40, 5)).map((r) => r.offset)).toEqual([41, 42, 43, 44, 45]);
    // Backwards: the random reader restarts its consumer there.
    expect((await log.fetch(topic, 9, 2)).map((r) => r.offset)).toEqual([10, 11]);
    // Up to the end, and nothing after it.
    expect((await log.fetch(topic, 45, 100)).map((r) => r.offset)).toEqual([46, 47, 48, 49, 50]);
    expect(await log.fetch(topic, 50, 100)).toEqual([]);
    expect((await log.fetch(topic, 20, 1))[0].record).toEqual(record(21));
    // The sinks' reader still holds everything it was not told to let go.
    expect(log.read(topic, 0, 100)).toHaveLength(50);
  });

  it('replays far more records than its buffer holds, in chunks, and jumps both ways', async () => {
    const small = await KafkaEventLog.open(
      { brokers: [broker.bootstrap], topics: { prefix: 'sluice.', bindings: {} }, settings: SETTINGS, maxBuffered: 100 },
      pino({ level: 'silent' }),
    );
    try {
      const topic = '1.1.replayed';
      await small.append(topic, Array.from({ length: 1000 }, (_, i) => record(i + 1))).durable;
      const seen: number[] = [];
      for (let after = 0; ; ) {
        const chunk = await small.fetch(topic, after, 70);
        if (chunk.length === 0) break;
        seen.push(...chunk.map((r) => r.offset));
        after = chunk[chunk.length - 1].offset;
      }
      expect(seen).toEqual(Array.from({ length: 1000 }, (_, i) => i + 1));
      expect((await small.fetch(topic, 10, 2)).map((r) => r.offset)).toEqual([11, 12]);
      expect((await small.fetch(topic, 900, 2)).map((r) => r.offset)).toEqual([901, 902]);
      expect((await small.fetch(topic, 5, 1)).map((r) => r.offset)).toEqual([6]);
    } finally {
      await small.close();
    }
  });

  it('reads what a Kafka producer wrote directly: value = body, headers = headers, timestamp = receive time', async () => {
    const topic = '1.1.produced';
    await log.append(topic, [record(1)]).durable; // creates sluice.1.1.produced
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({
      topic: 'sluice.1.1.produced',
      acks: -1,
      messages: [
        { value: '{"from":"producer"}', timestamp: '1700000000123', headers: { 'content-type': 'application/json', 'x-trace': ['a', 'b'], ':sluice-ip': '192.0.2.7' } },
        { value: null, timestamp: '1700000000124' },
      ],
    });
    await producer.disconnect();
    const got = await readUntil(topic, 1, 2);
    expect(got[0]).toEqual({
      offset: 2,
      record: { receivedAt: new Date(1700000000123), ip: '192.0.2.7', headers: { 'Content-Type': 'application/json', 'X-Trace': 'a' }, body: Buffer.from('{"from":"producer"}'), signal: '' },
    });
    expect(got[1].record.body).toEqual(Buffer.alloc(0));
    expect(got[1].record.headers).toEqual({});
  });

  it('reads a source bound to an existing topic, and does not delete that topic with the source', async () => {
    await admin.createTopics({ topics: [{ topic: 'external.orders', numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
    const producer = kafka.producer();
    await producer.connect();
    await producer.send({ topic: 'external.orders', messages: [{ value: 'one' }, { value: 'two' }] });
    await producer.disconnect();
    const got = await readUntil('1.1.bound', 0, 2);
    expect(got.map((r) => r.record.body.toString())).toEqual(['one', 'two']);
    expect(log.kafkaTopic('1.1.bound')).toBe('external.orders');
    await log.dropTopic('1.1.bound');
    expect(await admin.listTopics()).toContain('external.orders');
  });

  it('spreads appends over the partitions of a topic and reads each partition as a stream of its own', async () => {
    await admin.createTopics({ topics: [{ topic: 'external.wide', numPartitions: 3, replicationFactor: 1 }], waitForLeaders: true });
    expect(await new TopicManager(admin, SETTINGS).ensure('external.wide', true)).toBe(3);
    const owned: string[] = [];
    const stop = log.onOwnership((stream, change) => change.owned && owned.push(stream));
    try {
      // One append, one partition, in turn.
      for (let n = 1; n <= 6; n++) await log.append('1.1.wide', [record(n)]).durable;
      log.claim('1.1.wide');
      await until('every partition given to this (only) node', async () => (owned.length === 3 ? true : undefined));
      expect(owned.sort()).toEqual(['1.1.wide', '1.1.wide#1', '1.1.wide#2']);
      const bodies = async (stream: string) => (await readUntil(stream, 0, 2)).map((r) => JSON.parse(r.record.body.toString()).n);
      expect(await bodies('1.1.wide')).toEqual([1, 4]);
      expect(await bodies('1.1.wide#1')).toEqual([2, 5]);
      expect(await bodies('1.1.wide#2')).toEqual([3, 6]);
      // Offsets are per partition.
      expect((await log.fetch('1.1.wide#2', 1, 10)).map((r) => [r.offset, JSON.parse(r.record.body.toString()).n])).toEqual([[2, 6]]);
    } finally {
      stop();
    }
  });

  it('takes large records: many at once over several sends, and one above Kafka\'s default limit (the topic is sized for it)', async () => {
    const big = (n: number, bytes: number) => record(n, { body: Buffer.concat([Buffer.from(`{"n":${n},"pad":"`), Buffer.alloc(bytes, 'x'), Buffer.from('"}')]) });
    // A topic of Kafka's default limit (1 MB a record batch): 12 appends of 200 kB in one moment
    // would be one send of 2.4 MB, which Kafka refuses whole.
    await admin.createTopics({ topics: [{ topic: 'external.plain', numPartitions: 1, replicationFactor: 1 }], waitForLeaders: true });
    const many = Array.from({ length: 12 }, (_, i) => log.append('1.1.plain', [big(i + 1, 200_000)]));
    await Promise.all(many.map((a) => a.durable));
    expect((await readUntil('1.1.plain', 0, 12)).map((r) => JSON.parse(r.record.body.toString()).n)).toEqual(Array.from({ length: 12 }, (_, i) => i + 1));
    // One append larger than that (a connector's batch split into records) goes over several sends.
    await log.append('1.1.plain', Array.from({ length: 8 }, (_, i) => big(13 + i, 300_000))).durable;
    expect((await readUntil('1.1.plain', 12, 8)).map((r) => JSON.parse(r.record.body.toString()).n)).toEqual(Array.from({ length: 8 }, (_, i) => 13 + i));

    const topic = '1.1.large';
    await log.append(topic, Array.from({ length: 12 }, (_, i) => big(i + 1, 1000))).durable;
    // A 5 MB body: the topic was created with max.message.bytes for the largest body.
    await log.append(topic, [big(13, 5 * 1024 ** 2)]).durable;
    const described = await admin.describeConfigs({ resources: [{ type: 2, name: 'sluice.1.1.large', configNames: ['max.message.bytes'] }], includeSynonyms: false });
    expect(Number(described.resources[0].configEntries[0].configValue)).toBe(6 * 1024 ** 2 + 64 * 1024);
    const got = await readUntil(topic, 0, 13);
    expect(got.map((r) => JSON.parse(r.record.body.toString()).n)).toEqual(Array.from({ length: 13 }, (_, i) => i + 1));
    expect(got[12].record.body.length).toBe(5 * 1024 ** 2 + 17);
  });

  it('drops a source topic it created', async () => {
    await log.append('1.1.dropped', [record(1)]).durable;
    expect(await admin.listTopics()).toContain('sluice.1.1.dropped');
    await log.dropTopic('1.1.dropped');
    await until('topic deleted', async () => ((await admin.listTopics()).includes('sluice.1.1.dropped') ? undefined : true));
  });

  it('`sluice kafka status` sees the test broker; `start` on a running one only prints its address', async () => {
    let out = '';
    const io = { stdout: { write: (s: string) => (out += s) }, stderr: { write: () => true }, env: {} };
    expect(await runKafkaCli(['status', '--dir', broker.dir], io)).toBe(0);
    expect(out).toContain(`running ${broker.bootstrap}`);
    out = '';
    const started = Date.now();
    expect(await runKafkaCli(['start', '--dir', broker.dir], io)).toBe(0);
    expect(out.trim().split('\n').at(-1)).toBe(broker.bootstrap);
    expect(Date.now() - started).toBeLessThan(5000);
  });
});
