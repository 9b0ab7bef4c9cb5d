/**
 * Compressed bodies on every ingestion path (single HTTP records, connector batches, OTLP/HTTP):
 * gzip and deflate (zlib-wrapped or raw) are inflated and the inflated body is what lands; an
 * unknown encoding is a 415 naming the supported ones; a body that does not inflate is a 400; a
 * bomb is a 413 "measured after decompression" without the node filling its memory; nothing
 * refused is stored, and the node goes on. Real sockets, a real service, rows read back.
 */
import { request } from 'node:http';
import { deflateRawSync, deflateSync, gzipSync } from 'node:zlib';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { parse } from 'csv-parse/sync';
import { TestService } from '../helpers/service.js';

const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms'];
const TABLE = 'in.c-zipped.events';

let svc: TestService;
let ingestPath: string;
const B = () => `/v1/branches/${svc.branchId}`;

interface Answer {
  status: number;
  json: any;
}

/** POSTs the bytes with exactly these headers (fetch would inflate nothing but may add its own). */
function postRaw(path: string, body: Buffer, headers: Record<string, string>): Promise<Answer> {
  const url = new URL(svc.server.address + path);
  return new Promise((resolve, reject) => {
    const req = request({
      host: url.hostname, port: url.port, path: url.pathname, method: 'POST',
      headers: { ...headers, 'Content-Length': String(body.length) },
    }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const text = Buffer.concat(chunks).toString('utf8');
        let json: any = text;
        try {
          json = JSON.parse(text);
        } catch {
          // plain "OK"
        }
        resolve({ status: res.statusCode ?? 0, json });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

const event = (id: string) => Buffer.from(JSON.stringify({ id, note: 'x'.repeat(200) }));

async function rows(n: number): Promise<Record<string, string>[]> {
  return svc.until(`${n} rows in ${TABLE}`, async () => {
    const res = await svc.call('GET', `/v2/storage/tables/${TABLE}/data-preview?limit=1000`);
    const all = res.status === 200 ? (parse(res.text, { columns: true }) as Record<string, string>[]) : [];
    return all.length >= n ? all : undefined;
  }, 30_000);
}

beforeAll(async () => {
  svc = await TestService.start({ args: FAST });
  await svc.task('POST', `${B()}/sources`, { json: { name: 'Zipped', type: 'http' } });
  const sink = await svc.task('POST', `${B()}/sources/zipped/sinks`, {
    json: {
      sinkId: 'events', name: 'events', type: 'table',
      table: {
        type: 'keboola', tableId: TABLE,
        mapping: {
          columns: [
            { type: 'path', name: 'id', path: 'id', rawString: true },
            { type: 'body', name: 'body' },
            { type: 'headers', name: 'headers' },
          ],
        },
      },
    },
  });
  expect(sink.status).toBe('success');
  await svc.task('PATCH', `${B()}/sources/zipped/sinks/events/settings`, {
    json: { settings: [{ key: 'storage.level.staging.upload.trigger.interval', value: '1s' }, { key: 'storage.level.target.import.trigger.count', value: 7 }] },
  });
  ingestPath = await svc.ingestPath('zipped');
});
afterAll(async () => svc?.close());

describe('compressed request bodies', () => {
  it('inflates gzip, deflate and raw deflate on single records and connector batches; the inflated body lands', async () => {
    const single: Array<[string, Buffer, string]> = [
      ['g1', gzipSync(event('g1')), 'gzip'],
      ['x1', gzipSync(event('x1')), 'x-gzip'],
      ['d1', deflateSync(event('d1')), 'deflate'],
      ['r1', deflateRawSync(event('r1')), 'Deflate'],
      ['i1', event('i1'), 'identity'],
    ];
    for (const [id, body, encoding] of single) {
      const res = await postRaw(ingestPath, body, { 'Content-Type': 'application/json', 'Content-Encoding': encoding });
      expect({ id, status: res.status }).toEqual({ id, status: 200 });
    }
    const batch = Buffer.concat([event('b1'), Buffer.from('\n'), event('b2')]);
    const res = await postRaw(`${ingestPath}/batch`, gzipSync(batch), { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
    expect({ status: res.status, message: res.json.message }).toEqual({ status: 200, message: 'Successfully written 2 of 2 records.' });

    const landed = await rows(7);
    expect(landed.map((r) => r.id).sort()).toEqual(['b1', 'b2', 'd1', 'g1', 'i1', 'r1', 'x1']);
    for (const row of landed) {
      expect(JSON.parse(row.body)).toEqual({ id: row.id, note: 'x'.repeat(200) });
      // The stored body is not encoded any more, so its headers do not say it is.
      const headers = JSON.parse(row.headers);
      expect(headers['Content-Encoding']).toBe(row.id === 'i1' ? 'identity' : undefined);
      expect(headers['Content-Type']).toBe('application/json');
    }
  });

  it('refuses an unknown encoding with 415 naming the supported ones, a broken body with 400, on both HTTP paths', async () => {
    for (const path of [ingestPath, `${ingestPath}/batch`]) {
      const br = await postRaw(path, event('no'), { 'Content-Type': 'application/json', 'Content-Encoding': 'br' });
      expect(br.status).toBe(415);
      expect(br.json.error).toBe('stream.in.unsupportedMediaType');
      expect(br.json.message).toMatch(/^Unsupported Content-Encoding "br": use gzip, deflate(, zstd)? or identity/);
      const broken = await postRaw(path, Buffer.from('not gzip at all'), { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
      expect(broken.status).toBe(400);
      expect(broken.json.error).toBe('stream.in.badRequest');
      expect(broken.json.message).toMatch(/^The gzip body cannot be inflated: /);
    }
  });

  it('answers a bomb with 413 measured after decompression, stores nothing and goes on', async () => {
    const before = await svc.call('GET', `${B()}/sources/zipped/sinks/events/statistics/total`);
    expect(before.json.total.recordsCount).toBeGreaterThanOrEqual(7);
    // 64 MiB of zeros is 64 KiB of gzip: within the compressed limits, far past the inflated ones.
    const bomb = gzipSync(Buffer.alloc(64 * 1024 * 1024));
    const single = await postRaw(ingestPath, bomb, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
    expect(single.status).toBe(413);
    expect(single.json).toMatchObject({ error: 'stream.in.bodyTooLarge', message: 'Request body size is over the maximum "1MB" (measured after decompression).' });
    const batch = await postRaw(`${ingestPath}/batch`, bomb, { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' });
    expect(batch.status).toBe(413);
    expect(batch.json.message).toBe('Request body size is over the maximum "16MB" (measured after decompression).');
    const after = await svc.call('GET', `${B()}/sources/zipped/sinks/events/statistics/total`);
    expect(after.json.total.recordsCount).toBe(before.json.total.recordsCount);
    // The node goes on: a good record still lands.
    expect((await postRaw(ingestPath, gzipSync(event('after')), { 'Content-Type': 'application/json', 'Content-Encoding': 'gzip' })).status).toBe(200);
  });
});
