/**
 * The client library (@sluice/client, packages/client) against the real process
 * (`node dist/main.js serve`): records sent through it land in the table once each, gzipped by
 * default and byte for byte; rejected records come back with the server's reasons; a source
 * refused with 429 (its sinks behind, or its quota spent) is retried until every record is kept; and the package
 * README's example and the snippet of docs/ingestion.md run as written.
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, type BatchResult } from '@sluice/client';
import { ChildService, tail, until } from '../helpers/child-service.js';

const FAST = { SLUICE_CHECK_INTERVAL: '100ms', SLUICE_UPLOAD_MIN_INTERVAL: '200ms', SLUICE_IMPORT_MIN_INTERVAL: '300ms' };
const TRIGGERS = { 'storage.level.staging.upload.trigger.interval': '1s', 'storage.level.target.import.trigger.interval': '1s' };
const COLUMNS = [
  { type: 'path', name: 'id', path: 'id', rawString: true, defaultValue: '' },
  { type: 'body', name: 'body' },
];

const services: ChildService[] = [];
const dirs: string[] = [];
afterAll(async () => {
  for (const svc of services) await svc.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, 30_000);

async function startService(env: Record<string, string> = {}): Promise<ChildService> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-client-'));
  dirs.push(dataDir);
  const svc = new ChildService({ dataDir, env: { ...FAST, ...env } });
  services.push(svc);
  await svc.start();
  return svc;
}

/** A source with one sink (`id` and the raw `body`) into in.c-client.<sourceId>; its ingestion URL. */
async function source(svc: ChildService, sourceId: string, columns: unknown[] = COLUMNS): Promise<string> {
  const path = await svc.createSource(sourceId);
  await svc.createSink(sourceId, 'rows', `in.c-client.${sourceId}`, columns, TRIGGERS);
  return svc.base + path;
}

async function sql(svc: ChildService, query: string): Promise<unknown[][]> {
  const res = await svc.call('POST', '/v2/storage/sql', { query, limit: 10_000 });
  if (res.status !== 200) throw new Error(`SQL ${res.status}: ${res.text}`);
  return res.json.rows as unknown[][];
}

/** Waits until the table holds `n` rows (throws if it holds more). */
async function rowsIn(svc: ChildService, table: string, n: number): Promise<void> {
  await until(`${n} rows in ${table}`, async () => {
    const [[count]] = await sql(svc, `SELECT count(*) FROM "in.c-client"."${table}"`);
    if (Number(count) > n) throw new Error(`${count} rows, more than ${n}`);
    return Number(count) === n ? true : undefined;
  }, 60_000, 250);
}

describe('@sluice/client against sluice serve', () => {
  let svc: ChildService;
  beforeAll(async () => {
    svc = await startService();
  }, 60_000);

  it('lands every record once, gzipped (the default), each stored byte for byte', async () => {
    const url = await source(svc, 'orders');
    const results: BatchResult[] = [];
    // The requests as they leave, to see that they are gzipped.
    const encodings: Array<string | undefined> = [];
    const watched = ((input: string, init: RequestInit) => {
      encodings.push((init.headers as Record<string, string>)['content-encoding']);
      return fetch(input, init);
    }) as typeof fetch;
    const client = createClient({ url, maxBatchRecords: 100, onBatch: (r) => results.push(r), fetch: watched });
    for (let i = 0; i < 1000; i++) await client.sendAsync({ id: `o-${i}`, item: 'café', total: i / 10 });
    const exact = '{"id":"big","n":12345678901234567890,"z":1,"a":2}';
    const pretty = JSON.stringify({ id: 'pretty', lines: ['a', 'b'] }, null, 2);
    client.send(exact);
    client.send(pretty);
    const result = await client.close();
    expect(result).toMatchObject({ batches: 11, records: 1002, accepted: 1002, rejected: 0, failedBatches: 0, rejections: [] });
    expect(results.every((r) => r.status === 200 && r.attempts === 1)).toBe(true);
    expect(encodings).toEqual(Array(11).fill('gzip'));

    await rowsIn(svc, 'orders', 1002);
    expect(await sql(svc, 'SELECT count(DISTINCT id) FROM "in.c-client"."orders"')).toEqual([['1002']]);
    const bodies = new Map((await sql(svc, `SELECT id, body FROM "in.c-client"."orders" WHERE id IN ('big', 'pretty', 'o-7')`)).map(([id, body]) => [id, body]));
    expect(bodies.get('big')).toBe(exact);
    expect(bodies.get('pretty')).toBe(pretty);
    expect(bodies.get('o-7')).toBe('{"id":"o-7","item":"café","total":0.7}');
  }, 90_000);

  it('reports the records the server rejected, with its reasons; a batch of none valid fails whole', async () => {
    const url = await source(svc, 'mixed');
    const client = createClient({ url, validate: false, concurrency: 1, maxBatchRecords: 3 });
    client.send({ id: 'good-1' });
    client.send('{name=Ed, cost=29.1}');
    client.send({ id: 'good-2' });
    client.send('{"id":tru}');
    client.send('not json');
    client.send('[1,]');
    const result = await client.close();
    expect(result).toMatchObject({ batches: 2, records: 6, accepted: 2, rejected: 4, failedBatches: 1 });
    const [java, ...whole] = result.rejections;
    expect(java).toMatchObject({ batch: 1, index: 1, record: '{name=Ed, cost=29.1}' });
    expect(java.reason).toMatch(/Java toString\(\).*JsonConverter/);
    expect(whole.map((r) => [r.batch, r.index, r.record])).toEqual([[2, 0, '{"id":tru}'], [2, 1, 'not json'], [2, 2, '[1,]']]);
    expect(whole[0].reason).toMatch(/^The server answered 400: stream\.in\.invalidBatch: No valid record in the batch \(3 rejected\)/);
    await rowsIn(svc, 'mixed', 2);
  }, 60_000);

  it("retries the 429 of a source's quota (Retry-After) until every record is kept, at the quota's pace", async () => {
    const url = await source(svc, 'quota');
    await svc.task('PATCH', '/v1/branches/default/sources/quota/settings', { settings: [{ key: 'source.quota.recordsPerSecond', value: 200 }] });
    const client = createClient({ url, maxBatchRecords: 100 });
    const t0 = Date.now();
    for (let i = 0; i < 1000; i++) client.send({ id: `q-${i}` });
    const result = await client.close();
    const seconds = (Date.now() - t0) / 1000;
    expect(result).toMatchObject({ batches: 10, records: 1000, accepted: 1000, rejected: 0 });
    expect(client.stats().retries['429']).toBeGreaterThan(0);
    // A full bucket (200) at once, the other 800 at 200 a second: about 4 s, never much less.
    expect(seconds).toBeGreaterThan(3);
    await rowsIn(svc, 'quota', 1000);
    expect(await sql(svc, 'SELECT count(DISTINCT id) FROM "in.c-client"."quota"')).toEqual([['1000']]);
  }, 60_000);

  it('a wrong secret is final: every record rejected with noSourceFound, no retry', async () => {
    const url = await source(svc, 'secret');
    const client = createClient({ url: url.replace(/[^/]+$/, 'wrong-secret') });
    client.send({ id: 1 });
    const result = await client.close();
    expect(result).toMatchObject({ accepted: 0, rejected: 1, failedBatches: 1 });
    expect(result.rejections[0].reason).toMatch(/The server answered 404: stream\.in\.noSourceFound/);
    expect(client.stats().retries).toEqual({});
  }, 30_000);

  it("runs the package README's example as written", async () => {
    const url = await source(svc, 'readme');
    const readme = readFileSync(resolve('packages/client/README.md'), 'utf8');
    const code = /## Example\n\n```js\n([\s\S]*?)```/.exec(readme)![1];
    const dir = mkdtempSync(join(tmpdir(), 'sluice-client-readme-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'example.mjs'), code);
    // tsx resolves @sluice/client to the package's sources (tsconfig.json's paths), as vitest does.
    const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(dir, 'example.mjs')], {
      cwd: resolve('.'), env: { ...process.env, SLUICE_URL: url }, encoding: 'utf8', timeout: 30_000,
    });
    expect(run.stderr).toBe('');
    expect(run.stdout).toBe('1001 of 1001 records kept\n');
    await rowsIn(svc, 'readme', 1001);
    expect(await sql(svc, `SELECT body FROM "in.c-client"."readme" WHERE id = '1001'`)).toEqual([['{"id":1001,"item":"tea","total":2.9}']]);
  }, 60_000);

  it("runs the snippet of docs/ingestion.md (Client library) with the source's URL in place of its placeholder", async () => {
    const url = await source(svc, 'snippet');
    const readme = readFileSync(resolve('docs/ingestion.md'), 'utf8');
    const code = /### Client library\n[\s\S]*?```js\n([\s\S]*?)```/.exec(readme)![1];
    const placeholder = 'http://localhost:8000/stream/1/orders/<secret>';
    expect(code).toContain(placeholder);
    const dir = mkdtempSync(join(tmpdir(), 'sluice-client-snippet-'));
    dirs.push(dir);
    writeFileSync(join(dir, 'snippet.mjs'), `${code.replace(placeholder, url)}\nconsole.log(JSON.stringify({ accepted, rejected, rejections }));\n`);
    const run = await promisify(execFile)(process.execPath, ['--import', 'tsx', join(dir, 'snippet.mjs')], { cwd: resolve('.'), encoding: 'utf8', timeout: 30_000 });
    expect(run.stderr).toBe('');
    expect(JSON.parse(run.stdout)).toEqual({ accepted: 1, rejected: 0, rejections: [] });
    await rowsIn(svc, 'snippet', 1);
  }, 60_000);
});

describe('@sluice/client and back-pressure', () => {
  it('retries the 429 of a source whose sinks are behind until every record is kept, each once', async () => {
    // The sink maps a few milliseconds a record; the source is refused once it is 20 records behind.
    const svc = await startService({ SLUICE_MAX_SINK_BACKLOG: '20', SLUICE_RENDER_BUDGET: '0s' });
    const slow = [...COLUMNS, { type: 'template', name: 'sum', template: { language: 'jsonnet', content: 'std.foldl(function(a, b) a + b, std.range(0, 3000), 0)' } }];
    const url = await source(svc, 'slow', slow);
    const client = createClient({ url, maxBatchRecords: 100 });
    for (let i = 0; i < 600; i++) client.send({ id: i });
    const result = await client.close();
    expect(result).toMatchObject({ batches: 6, records: 600, accepted: 600, rejected: 0 });
    expect(client.stats().retries['429']).toBeGreaterThan(0);
    await until('the sink mapped 600 records', async () => {
      const n = (await svc.sinkStatistics('slow', 'rows')).total?.recordsCount;
      return n === 600 ? n : undefined;
    }, 90_000, 250);
    await rowsIn(svc, 'slow', 600);
    expect(await sql(svc, 'SELECT count(DISTINCT id) FROM "in.c-client"."slow"')).toEqual([['600']]);
    expect(svc.output(), tail(svc.output())).toMatch(/too far behind its records/);
  }, 150_000);
});
