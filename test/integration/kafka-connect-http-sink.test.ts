/**
 * A real Kafka Connect worker (Apache Kafka's connect-standalone) runs a real HTTP sink connector
 * (Aiven's io.aiven.kafka.connect.http.HttpSinkConnector, built by
 * scripts/build-kafka-connect-http.sh) with the configuration the documentation gives, as written
 * but for its URL: it reads a real broker's topic, which kafkajs fills with JSON records, and
 * sends them in batches to a real Sluice server's `{http.url}/batch`; every record must be a row
 * of the sink's table exactly once. And what the connector does with Sluice's refusals (a record
 * that is not JSON, a source over its quota: 429 with Retry-After, a disabled source: 404) and
 * with a tombstone, and that the documented configuration and tombstone filter handle them.
 * Without a JDK or Maven the file is skipped with a line saying so.
 */
import { Writable } from 'node:stream';
import { parse } from 'csv-parse/sync';
import { Kafka, logLevel, type Producer } from 'kafkajs';
import { pino } from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { sourceTopic } from '../../src/ports/event-log.js';
import { KAFKA_START_TIMEOUT_MS, startTestBroker, type TestBroker } from '../helpers/kafka-broker.js';
import {
  ConnectWorker, documentedJson, ensureKafkaConnect, KAFKA_CONNECT_BUILD_TIMEOUT_MS, type KafkaConnectBuild,
} from '../helpers/kafka-connect.js';
import { TestService } from '../helpers/service.js';

const FILE = 'kafka-connect-http-sink.test.ts';
const AIVEN = 'io.aiven.kafka.connect.http.HttpSinkConnector';
const CONNECTOR = 'sluice-orders';
const TABLE = 'in.c-connect.orders';
const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms'];

let build: KafkaConnectBuild | undefined;
let skipReason = '';
let broker: TestBroker | undefined;
let svc: TestService | undefined;
let worker: ConnectWorker | undefined;
let producer: Producer | undefined;
let topic = '';
let config: Record<string, string> = {};
/** Sluice's log lines (JSON), for the warnings it gives about refused records. */
const logLines: string[] = [];

const B = () => `/v1/branches/${svc!.branchId}`;
const order = (id: string, total: number) => JSON.stringify({ id, customer: { name: `c-${id}` }, total });

async function produce(values: string[]): Promise<void> {
  await producer!.send({ topic, messages: values.map((value, i) => ({ key: `k${i}`, value })) });
}

/** The table's rows once it has at least `n`. */
async function rows(n: number, timeoutMs = 30_000): Promise<Array<Record<string, string>>> {
  return svc!.until(`${n} rows in ${TABLE}`, async () => {
    const res = await svc!.call('GET', `/v2/storage/tables/${TABLE}/data-preview?limit=1000`);
    const all = res.status === 200 ? (parse(res.text, { columns: true }) as Array<Record<string, string>>) : [];
    return all.length >= n ? all : undefined;
  }, timeoutMs);
}

/** How many rows have each id: every id sent must be there once, and nothing else. */
function countsById(all: Array<Record<string, string>>): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const row of all) counts[row.id] = (counts[row.id] ?? 0) + 1;
  return counts;
}

/** Every record id delivered so far, in the order of the tests. */
const delivered: string[] = [];

/** When the connector logged a refusal with `status` (its WARN line, timestamps in ms). */
function refusalTimes(status: number): number[] {
  const line = new RegExp(`^\\[(\\d{4}-\\d\\d-\\d\\d) (\\d\\d:\\d\\d:\\d\\d),(\\d{3})\\] WARN Got unexpected HTTP status code: ${status} `, 'gm');
  return [...worker!.logs().matchAll(line)].map(([, day, time, ms]) => Date.parse(`${day}T${time}.${ms}`));
}

async function setQuota(recordsPerSecond: number | null): Promise<void> {
  await svc!.task('PATCH', `${B()}/sources/connect/settings`, { json: { settings: [{ key: 'source.quota.recordsPerSecond', value: recordsPerSecond }] } });
}

/** The records the source's log holds. */
const stored = () => svc!.server.services.eventLog.headOffset(sourceTopic(svc!.projectId, svc!.branchId, 'connect'));

const once = (ids: string[]) => Object.fromEntries(ids.map((id) => [id, 1]));
const ids = (prefix: string, n: number) => Array.from({ length: n }, (_, i) => `${prefix}${String(i).padStart(3, '0')}`);

beforeAll(async () => {
  const started = Date.now();
  // The broker starts while the build is checked (or runs); without a JDK or Maven it cannot start either.
  const [built, brokerStart] = await Promise.all([ensureKafkaConnect(), startTestBroker().then((b) => ({ broker: b }), (err: Error) => ({ err }))]);
  if ('broker' in brokerStart) broker = brokerStart.broker;
  if ('skip' in built) {
    skipReason = built.skip;
    process.stderr.write(`[kafka-connect] skipping ${FILE}: ${skipReason}\n`);
    return;
  }
  if ('err' in brokerStart) throw brokerStart.err;
  build = built.build;

  const logger = pino({ level: 'info' }, new Writable({
    write(chunk: Buffer, _enc, done) {
      logLines.push(...chunk.toString().split('\n').filter(Boolean));
      done();
    },
  }));
  svc = await TestService.start({ args: FAST, logger });
  await svc.task('POST', `${B()}/sources`, { json: { sourceId: 'connect', name: 'Connect', type: 'http' } });
  await svc.task('POST', `${B()}/sources/connect/sinks`, {
    json: {
      sinkId: 'orders', name: 'orders', type: 'table',
      table: {
        type: 'keboola', tableId: TABLE,
        mapping: {
          columns: [
            // No primary key: a record sent twice would be two rows.
            { type: 'path', name: 'id', path: 'id', rawString: true },
            { type: 'path', name: 'customer', path: 'customer.name', rawString: true },
            { type: 'path', name: 'total', path: 'total' },
            { type: 'headers', name: 'headers' },
          ],
        },
      },
    },
  });
  await svc.task('PATCH', `${B()}/sources/connect/sinks/orders/settings`, {
    json: { settings: [{ key: 'storage.level.staging.upload.trigger.interval', value: '1s' }, { key: 'storage.level.target.import.trigger.interval', value: '1s' }] },
  });

  // The documented configuration, as written but for where Sluice listens.
  config = documentedJson(`"connector.class": "${AIVEN}"`);
  config['http.url'] = `${svc.server.address}${await svc.ingestPath('connect')}/batch`;
  topic = config.topics;
  const kafka = new Kafka({ brokers: [broker!.bootstrap], logLevel: logLevel.NOTHING });
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({ topics: [{ topic, numPartitions: 1 }], waitForLeaders: true });
  await admin.disconnect();
  producer = kafka.producer({ idempotent: true });
  await producer.connect();

  const workerStarted = Date.now();
  worker = await ConnectWorker.start(build, broker!.bootstrap);
  const put = await worker.call('PUT', `/connectors/${CONNECTOR}/config`, config);
  expect(put.status, JSON.stringify(put.json)).toBe(201);
  await worker.waitFor(CONNECTOR, 'RUNNING');
  process.stderr.write(`[kafka-connect] worker and connector running after ${Date.now() - workerStarted} ms (all set up after ${Date.now() - started} ms)\n`);
}, KAFKA_START_TIMEOUT_MS + KAFKA_CONNECT_BUILD_TIMEOUT_MS);

afterAll(async () => {
  await producer?.disconnect().catch(() => undefined);
  await worker?.stop();
  await svc?.close();
  await broker?.stop();
}, 60_000);

describe("Aiven's HTTP sink connector in a real Kafka Connect worker, configured as documented", () => {
  it('delivers every JSON record of the topic as one row, exactly once; a record that is not JSON is refused alone', async (ctx) => {
    if (!build) return ctx.skip(skipReason);
    const first = ids('a', 150);
    await produce(first.slice(0, 100).map((id, i) => order(id, i)));
    // Among good ones: Sluice keeps the batch's good records and reports the bad one.
    await produce(['this is not JSON', ...first.slice(100).map((id, i) => order(id, 100 + i))]);

    const landed = await rows(first.length);
    const byId = landed.find((r) => r.id === 'a042')!;
    expect(byId).toMatchObject({ customer: 'c-a042', total: '42' });
    // The connector's request: the documented Content-Type, Java's HTTP client.
    const headers = JSON.parse(byId.headers) as Record<string, string>;
    expect(headers['Content-Type']).toBe('application/json');
    expect(headers['User-Agent']).toMatch(/^Java-http-client\//);

    const rejected = logLines.map((l) => JSON.parse(l) as { msg?: string; errors?: unknown }).filter((l) => l.msg === 'batch records rejected');
    expect(rejected).toHaveLength(1);
    expect(JSON.stringify(rejected[0])).toContain('not valid JSON');
    // The refusal of one record is a 2xx for its batch: the task goes on.
    expect((await worker!.status(CONNECTOR)).tasks[0].state).toBe('RUNNING');

    // Exactly once: after another round of uploads and imports, still one row per record.
    await new Promise((r) => setTimeout(r, 3000));
    expect(countsById(await rows(first.length))).toEqual(once(first));
    delivered.push(...first);
  });

  it('rides out a source over its quota (429 with Retry-After): retried every retry.backoff.ms until accepted, nothing lost or doubled', async (ctx) => {
    if (!build) return ctx.skip(skipReason);
    const refusalsBefore = refusalTimes(429).length;
    await setQuota(2);
    // The first batch passes (a full bucket) and leaves the source ~9 s in debt; the next is
    // refused until it is paid: longer than Aiven's default retry (one, after 3 s) would last.
    const spell = ids('q', 20);
    const after = ids('r', 5);
    const before = stored();
    await produce(spell.map((id, i) => order(id, i)));
    await svc!.until('the first records over the quota accepted', async () => (stored() >= before + spell.length ? true : undefined));
    await produce(after.map((id, i) => order(id, i)));

    const all = [...delivered, ...spell, ...after];
    const landed = await rows(all.length, 60_000);
    await setQuota(null);
    const refusals = refusalTimes(429).slice(refusalsBefore);
    // Refused more than once, and retried: one task, never failed.
    expect(refusals.length).toBeGreaterThanOrEqual(2);
    expect((await worker!.status(CONNECTOR)).tasks[0].state).toBe('RUNNING');
    // Aiven's pace is its own (retry.backoff.ms), whatever Retry-After says.
    for (let i = 1; i < refusals.length; i++) expect(refusals[i] - refusals[i - 1]).toBeGreaterThanOrEqual(Number(config['retry.backoff.ms']) - 100);
    expect(countsById(landed)).toEqual(once(all));
    delivered.push(...spell, ...after);
  });

  it("with Aiven's default retries, a refusal that lasts fails the task; its records wait in the topic and a restart delivers them once", async (ctx) => {
    if (!build) return ctx.skip(skipReason);
    // Without the documented max.retries and retry.backoff.ms: one retry, after 3 s.
    const defaults = Object.fromEntries(Object.entries(config).filter(([key]) => key !== 'max.retries' && key !== 'retry.backoff.ms'));
    // The task is replaced at once: a task that stops commits the offsets of what it delivered.
    expect((await worker!.call('PUT', `/connectors/${CONNECTOR}/config`, defaults)).status).toBe(200);
    await worker!.waitFor(CONNECTOR, 'RUNNING');

    const refusalsBefore = refusalTimes(404).length;
    await svc!.task('PUT', `${B()}/sources/connect/disable`);
    const waiting = ids('w', 3);
    await produce(waiting.map((id, i) => order(id, i)));
    const failed = await worker!.waitFor(CONNECTOR, 'FAILED', 30_000);
    expect(failed.tasks[0].trace).toContain('Sending failed and no retries remain');
    const refusals = refusalTimes(404).slice(refusalsBefore);
    expect(refusals).toHaveLength(2);
    expect(refusals[1] - refusals[0]).toBeGreaterThanOrEqual(2900);

    // The source back, the task restarted by hand (Connect does not restart a failed task).
    await svc!.task('PUT', `${B()}/sources/connect/enable`);
    expect((await worker!.call('POST', `/connectors/${CONNECTOR}/tasks/0/restart`)).status).toBe(204);
    await worker!.waitFor(CONNECTOR, 'RUNNING');
    const all = [...delivered, ...waiting];
    await rows(all.length);
    // Exactly once over the whole run, after another round of uploads and imports.
    await new Promise((r) => setTimeout(r, 3000));
    expect(countsById(await rows(all.length))).toEqual(once(all));
    delivered.push(...waiting);
  });

  it('fails its task on a tombstone (a null value) before sending anything; the documented tombstone filter lets the records after it through', async (ctx) => {
    if (!build) return ctx.skip(skipReason);
    expect((await worker!.call('PUT', `/connectors/${CONNECTOR}/config`, config)).status).toBe(200);
    await worker!.waitFor(CONNECTOR, 'RUNNING');
    const after = ids('t', 2);
    await producer!.send({ topic, messages: [{ key: 'gone', value: null }, ...after.map((id, i) => ({ key: id, value: order(id, i) }))] });
    const failed = await worker!.waitFor(CONNECTOR, 'FAILED');
    expect(failed.tasks[0].trace).toContain('Record value must not be null');

    // The filter in the documentation: a new configuration restarts the task.
    const filter = documentedJson('"predicates.isTombstone.type"');
    expect((await worker!.call('PUT', `/connectors/${CONNECTOR}/config`, { ...config, ...filter })).status).toBe(200);
    await worker!.waitFor(CONNECTOR, 'RUNNING');
    const all = [...delivered, ...after];
    await rows(all.length);
    expect(countsById(await rows(all.length))).toEqual(once(all));
  });
});
