/**
 * End to end through Kafka: `sluice serve --kafka <broker>` against a real broker (started like
 * `sluice kafka start`). Events sent to the ingestion URL and records a Kafka producer writes to
 * the source's topic both land in the table, exactly once, also across a restart of the service.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { pino } from 'pino';
import { TestService } from '../helpers/service.js';
import { KAFKA_START_TIMEOUT_MS, startTestBroker, type TestBroker } from '../helpers/kafka-broker.js';

let broker: TestBroker;
let svc: TestService;
let producer: Producer;
const B = () => `/v1/branches/${svc.branchId}`;
const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--retry-base', '300ms'];

async function sink(sourceId: string, sinkId: string, tableId: string, importCount: number) {
  const columns = [
    { type: 'path', name: 'n', path: 'n', rawString: true },
    { type: 'headers', name: 'headers' },
    { type: 'datetime', name: 'received' },
    { type: 'ip', name: 'ip' },
  ];
  const task = await svc.task('POST', `${B()}/sources/${sourceId}/sinks`, { json: { sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId, mapping: { columns } } } });
  expect(task.status).toBe('success');
  const settings = [
    { key: 'storage.level.staging.upload.trigger.interval', value: '1s' },
    { key: 'storage.level.target.import.trigger.count', value: importCount },
  ];
  expect((await svc.task('PATCH', `${B()}/sources/${sourceId}/sinks/${sinkId}/settings`, { json: { settings } })).status).toBe('success');
}

async function rows(tableId: string, expected: number): Promise<string[][]> {
  return svc.until(
    `${expected} rows in ${tableId}`,
    async () => {
      const res = await svc.call('GET', `/v2/storage/tables/${tableId}/data-preview?limit=1000`);
      const records = (parse(res.text) as string[][]).slice(1);
      return records.length >= expected ? records : undefined;
    },
    30_000,
  );
}

beforeAll(async () => {
  broker = await startTestBroker();
  // SLUICE_TEST_LOG=debug shows the service's logs.
  const logger = pino({ level: process.env.SLUICE_TEST_LOG ?? 'silent' });
  svc = await TestService.start({ args: [...FAST, '--kafka', broker.bootstrap, '--kafka-replication', '1'], logger });
  producer = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).producer({ idempotent: true });
  await producer.connect();
}, KAFKA_START_TIMEOUT_MS);

afterAll(async () => {
  await producer?.disconnect();
  await svc?.close();
  await broker?.stop();
}, 60_000);

describe('sluice serve --kafka', () => {
  it('shows the source topic in the source detail', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Shop', type: 'http' } });
    const source = (await svc.call('GET', `${B()}/sources/shop`)).json;
    expect(source.kafka).toEqual({ topic: `sluice.${svc.projectId}.${svc.branchId}.shop` });
  });

  it('lands HTTP events and records produced to the topic in the table, once each', async () => {
    await sink('shop', 'orders', 'in.c-shop.orders', 6);
    const path = await svc.ingestPath('shop');
    for (let i = 1; i <= 3; i++) {
      const res = await svc.call('POST', path, { token: null, body: JSON.stringify({ n: `http-${i}` }), headers: { 'X-Client': 'curl' } });
      expect(res.status).toBe(200); // answered after the broker's acks=all
    }
    const topic = (await svc.call('GET', `${B()}/sources/shop`)).json.kafka.topic as string;
    await producer.send({
      topic,
      acks: -1,
      messages: [1, 2, 3].map((i) => ({ value: JSON.stringify({ n: `kafka-${i}` }), timestamp: String(Date.UTC(2024, 0, 2, 3, 4, 5, i)), headers: { 'content-type': 'application/json', 'x-client': 'producer', ':sluice-ip': '192.0.2.9' } })),
    });
    const table = await rows('in.c-shop.orders', 6);
    expect(table).toHaveLength(6);
    expect(table.map((r) => r[0]).sort()).toEqual(['http-1', 'http-2', 'http-3', 'kafka-1', 'kafka-2', 'kafka-3']);
    const produced = table.find((r) => r[0] === 'kafka-2')!;
    expect(JSON.parse(produced[1])).toEqual({ 'Content-Type': 'application/json', 'X-Client': 'producer' });
    expect(produced[2]).toBe('2024-01-02T03:04:05.002Z');
    expect(produced[3]).toBe('192.0.2.9');
    const viaHttp = table.find((r) => r[0] === 'http-1')!;
    expect(JSON.parse(viaHttp[1])['X-Client']).toBe('curl');
    expect(viaHttp[3]).toBe('127.0.0.1');
  });

  it('deletes the topic with a cascade-deleted source; a new source of the same id starts empty', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Gone', type: 'http' } });
    await sink('gone', 'g', 'in.c-gone.g', 1000);
    expect((await svc.call('POST', await svc.ingestPath('gone'), { token: null, body: JSON.stringify({ n: 'old' }) })).status).toBe(200);
    await svc.until('record written', async () => ((await svc.call('GET', `${B()}/sources/gone/sinks/g/statistics/total`)).json.total.recordsCount === 1 ? true : undefined));
    await svc.task('DELETE', `${B()}/sources/gone?cascade=true`);
    const admin = new Kafka({ brokers: [broker.bootstrap], logLevel: logLevel.NOTHING }).admin();
    await admin.connect();
    const topic = `sluice.${svc.projectId}.${svc.branchId}.gone`;
    await svc.until('topic deleted', async () => ((await admin.listTopics()).includes(topic) ? undefined : true));
    await admin.disconnect();

    await svc.task('POST', `${B()}/sources`, { json: { name: 'Gone', type: 'http' } });
    await sink('gone', 'g', 'in.c-gone.g', 1);
    expect((await svc.call('POST', await svc.ingestPath('gone'), { token: null, body: JSON.stringify({ n: 'new' }) })).status).toBe(200);
    expect(await rows('in.c-gone.g', 1)).toEqual([['new', expect.any(String), expect.any(String), '127.0.0.1']]);
  });

  it('resumes after a restart from the sinks\' committed offsets: nothing lost, nothing doubled', async () => {
    await svc.task('POST', `${B()}/sources`, { json: { name: 'Again', type: 'http' } });
    // Two records per file: the two before the restart are imported when the node hands its topics over at its stop.
    await sink('again', 'a', 'in.c-again.a', 2);
    const path = await svc.ingestPath('again');
    for (const n of ['before-1', 'before-2']) expect((await svc.call('POST', path, { token: null, body: JSON.stringify({ n }) })).status).toBe(200);
    await svc.until('written to the slice', async () => {
      const st = (await svc.call('GET', `${B()}/sources/again/sinks/a/statistics/total`)).json;
      return st.total.recordsCount === 2 ? true : undefined;
    });
    await svc.restart();
    // Produced while no consumer runs; read after the restart from the committed position.
    await producer.send({ topic: `sluice.${svc.projectId}.${svc.branchId}.again`, messages: [{ value: JSON.stringify({ n: 'between' }), headers: { 'content-type': 'application/json' } }] });
    expect((await svc.call('POST', path, { token: null, body: JSON.stringify({ n: 'after' }) })).status).toBe(200);
    const table = await rows('in.c-again.a', 4);
    await new Promise((r) => setTimeout(r, 1500));
    const final = await rows('in.c-again.a', 4);
    expect(final.map((r) => r[0]).sort()).toEqual(['after', 'before-1', 'before-2', 'between']);
    expect(table).toHaveLength(4);
  });
});
