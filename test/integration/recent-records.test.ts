/**
 * GET .../sources/{sourceId}/records (Sluice's read-only convenience for the console's preview):
 * the newest records of the source's event log, newest first, within the limit's bounds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestService } from '../helpers/service.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;

beforeAll(async () => {
  svc = await TestService.start();
  expect((await svc.task('POST', `${B()}/sources`, { json: { name: 'Shop', type: 'http' } })).status).toBe('success');
});
afterAll(async () => {
  await svc?.close();
});

describe('recent records of a source', () => {
  it('answers an empty list before any event', async () => {
    const res = await svc.call('GET', `${B()}/sources/shop/records`);
    expect(res.status).toBe(200);
    expect(res.json.records).toEqual([]);
  });

  it('answers the newest records first, with headers and body, and never the secret', async () => {
    const path = await svc.ingestPath('shop');
    const secret = path.split('/').pop()!;
    for (const n of [1, 2, 3]) {
      const res = await svc.call('POST', path, { token: null, body: JSON.stringify({ n }), headers: { 'X-Order': String(n) } });
      expect(res.status).toBe(200);
    }
    const binary = await fetch(svc.server.address + path, { method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: new Uint8Array([0xff, 0xfe, 0x00]) });
    expect(binary.status).toBe(200);

    const res = await svc.call('GET', `${B()}/sources/shop/records`);
    expect(res.status).toBe(200);
    const records = res.json.records;
    expect(records).toHaveLength(4);
    expect(records.map((r: { offset: number }) => r.offset)).toEqual([4, 3, 2, 1]);
    expect(records[0]).toMatchObject({ offset: 4, body: '//4A', bodyEncoding: 'base64' });
    expect(records[1]).toMatchObject({ offset: 3, body: '{"n":3}', bodyEncoding: 'utf8' });
    expect(records[1].headers['X-Order']).toBe('3');
    expect(records[1].headers['Content-Type']).toBe('application/json');
    expect(Date.parse(records[1].receivedAt)).toBeGreaterThan(0);
    expect(res.text).not.toContain(secret);

    const two = await svc.call('GET', `${B()}/sources/shop/records?limit=2`);
    expect(two.json.records.map((r: { offset: number }) => r.offset)).toEqual([4, 3]);
  });

  it('may be read by a token with read on the buckets of all the source\'s sinks, not by others', async () => {
    const viewer = await svc.call('POST', '/v2/storage/tokens', { json: { description: 'viewer', bucketPermissions: {} } });
    expect(viewer.status).toBe(201);
    // Without sinks the records belong to no bucket: only the tokens that see every bucket.
    expect((await svc.call('GET', `${B()}/sources/shop/records?limit=1`, { token: viewer.json.token })).status).toBe(403);
    const sink = await svc.task('POST', `${B()}/sources/shop/sinks`, {
      json: { name: 'Raw', type: 'table', table: { type: 'keboola', tableId: 'in.c-shop.raw', mapping: { columns: [{ type: 'body', name: 'body' }] } } },
    });
    expect(sink.status).toBe('success');
    const reader = await svc.call('POST', '/v2/storage/tokens', { json: { description: 'reader', bucketPermissions: { 'in.c-shop': 'read' } } });
    const res = await svc.call('GET', `${B()}/sources/shop/records?limit=1`, { token: reader.json.token });
    expect(res.status).toBe(200);
    expect(res.json.records).toHaveLength(1);
    const refused = await svc.call('GET', `${B()}/sources/shop/records?limit=1`, { token: viewer.json.token });
    expect(refused.status).toBe(403);
    expect(refused.json.error).toBe('stream.api.forbidden');
  });

  it('bounds the limit to 1..20', async () => {
    expect((await svc.call('GET', `${B()}/sources/shop/records?limit=20`)).status).toBe(200);
    for (const limit of ['0', '21', 'x', '-1']) {
      const res = await svc.call('GET', `${B()}/sources/shop/records?limit=${limit}`);
      expect(res.status).toBe(400);
      expect(res.json).toMatchObject({ statusCode: 400, error: 'stream.api.invalidRange', message: `Limit must be between 1 and 20, got "${limit}".` });
    }
  });

  it('answers 404 in the Stream envelope for a missing source', async () => {
    const res = await svc.call('GET', `${B()}/sources/nope/records`);
    expect(res.status).toBe(404);
    expect(res.json).toMatchObject({ statusCode: 404, error: 'stream.api.sourceNotFound', message: 'Source "nope" not found in the branch.' });
  });
});
