/**
 * Kafka Connect HTTP sink batches (POST {http.url}/batch) land with their path columns right
 * whatever Content-Type the connector sends: Aiven's application/json (NDJSON by default),
 * Confluent's configurable header (often none at all; records joined by commas), text/plain,
 * and curl -d's form encoding. Real sockets, a real service, rows read back from the table.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { TestService } from '../helpers/service.js';

const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms'];
const TABLE = 'in.c-connect.orders';

let svc: TestService;
let batchPath: string;
const B = () => `/v1/branches/${svc.branchId}`;

/**
 * POSTs `body` with exactly the headers given, nothing added (fetch would add
 * `Content-Type: text/plain;charset=UTF-8` to a string body): as a connector sends it.
 */
function postRaw(path: string, body: string, headers: Record<string, string>): Promise<{ status: number; json: any }> {
  const url = new URL(svc.server.address + path);
  return new Promise((resolve, reject) => {
    const req = request({
      host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
      headers: { ...headers, 'Content-Length': String(Buffer.byteLength(body)) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, json: JSON.parse(Buffer.concat(chunks).toString('utf8')) }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The table's rows once there are `n`; the sink's mapping failures as soon as there is one. */
async function rowsOrFailures(n: number): Promise<{ rows: Record<string, string>[]; failures: string[] }> {
  return svc.until(`${n} rows in ${TABLE}`, async () => {
    const failed = (await svc.call('GET', `${B()}/sources/connect/sinks/orders/failures`)).json;
    if (failed.count > 0) return { rows: [], failures: (failed.failures as { reason: string }[]).map((f) => f.reason) };
    const res = await svc.call('GET', `/v2/storage/tables/${TABLE}/data-preview?limit=1000`);
    const all = res.status === 200 ? (parse(res.text, { columns: true }) as Record<string, string>[]) : [];
    return all.length >= n ? { rows: all, failures: [] } : undefined;
  }, 20_000);
}

beforeAll(async () => {
  svc = await TestService.start({ args: FAST });
  await svc.task('POST', `${B()}/sources`, { json: { name: 'Connect', type: 'http' } });
  const sink = await svc.task('POST', `${B()}/sources/connect/sinks`, {
    json: {
      sinkId: 'orders', name: 'orders', type: 'table',
      table: {
        type: 'keboola', tableId: TABLE,
        mapping: {
          columns: [
            { type: 'path', name: 'id', path: 'id', rawString: true, primaryKey: true },
            { type: 'path', name: 'customer', path: 'customer.name', rawString: true },
            { type: 'path', name: 'total', path: 'total' },
            { type: 'headers', name: 'headers' },
          ],
        },
      },
    },
  });
  expect(sink.status).toBe('success');
  await svc.task('PATCH', `${B()}/sources/connect/sinks/orders/settings`, {
    json: { settings: [{ key: 'storage.level.staging.upload.trigger.interval', value: '1s' }, { key: 'storage.level.target.import.trigger.count', value: 8 }] },
  });
  // The eight records the test sends make one import.
  batchPath = `${await svc.ingestPath('connect')}/batch`;
});
afterAll(async () => svc?.close());

const order = (id: string, total: number) => JSON.stringify({ id, customer: { name: `c-${id}` }, total });

describe('connector batches whatever their Content-Type', () => {
  it('lands every record with its path columns: Aiven, Confluent without a header, text/plain, curl -d', async () => {
    const batches: Array<[string, string, Record<string, string>]> = [
      // Aiven's http-connector-for-apache-kafka: application/json, one record per line.
      ['aiven', `${order('a1', 1)}\n${order('a2', 2)}\n`, { 'Content-Type': 'application/json' }],
      // Confluent's HTTP Sink: the header is configurable and often unset; records joined by ",".
      ['confluent', `${order('c1', 3)},${order('c2', 4)}`, {}],
      // A connector set to text/plain, with batch.json.as.array.
      ['text', `[${order('t1', 5)},${order('t2', 6)}]`, { 'Content-Type': 'text/plain; charset=utf-8' }],
      // curl -d sends application/x-www-form-urlencoded.
      ['form', `${order('f1', 7)}\n${order('f2', 8)}`, { 'Content-Type': 'application/x-www-form-urlencoded' }],
    ];
    for (const [name, body, headers] of batches) {
      const res = await postRaw(batchPath, body, headers);
      expect({ name, status: res.status, message: res.json.message }).toEqual({ name, status: 200, message: 'Successfully written 2 of 2 records.' });
    }

    const { rows, failures } = await rowsOrFailures(8);
    expect(failures).toEqual([]);
    const landed = rows.sort((a, b) => a.id.localeCompare(b.id));
    expect(landed.map(({ id, customer, total }) => ({ id, customer, total }))).toEqual(
      [['a1', 1], ['a2', 2], ['c1', 3], ['c2', 4], ['f1', 7], ['f2', 8], ['t1', 5], ['t2', 6]]
        .map(([id, total]) => ({ id, customer: `c-${id}`, total: String(total) })),
    );
    // Each record says the type its body is read as; a JSON type sent is kept as sent.
    const contentType = (id: string) => JSON.parse(landed.find((r) => r.id === id)!.headers)['Content-Type'];
    expect(['a1', 'c1', 't1', 'f1'].map(contentType)).toEqual(['application/json', 'application/json', 'application/json', 'application/json']);
    expect((await svc.call('GET', `${B()}/sources/connect/sinks/orders/failures`)).json.count).toBe(0);
  });
});
