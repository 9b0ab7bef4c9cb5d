import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pino } from 'pino';
import { loadConfig } from '../../src/config.js';
import { startServer, type RunningServer } from '../../src/server.js';

const MASTER = '1-1-master-token-for-the-storage-api-tests';

let server: RunningServer;
let dataDir: string;

/** fetch against the running server; `token` null sends no token header. */
async function call(
  method: string,
  path: string,
  options: { token?: string | null; json?: unknown; form?: string; body?: string; contentType?: string } = {},
) {
  const headers: Record<string, string> = {};
  const token = options.token === undefined ? MASTER : options.token;
  if (token !== null) headers['X-StorageApi-Token'] = token;
  let body: string | undefined;
  if (options.json !== undefined) {
    headers['Content-Type'] = 'application/json';
    body = JSON.stringify(options.json);
  } else if (options.form !== undefined) {
    headers['Content-Type'] = 'application/x-www-form-urlencoded';
    body = options.form;
  } else if (options.body !== undefined) {
    headers['Content-Type'] = options.contentType ?? 'application/json';
    body = options.body;
  }
  const res = await fetch(server.address + path, { method, headers, body });
  const text = await res.text();
  const type = res.headers.get('content-type') ?? '';
  return { status: res.status, type, text, json: type.includes('json') && text !== '' ? JSON.parse(text) : undefined };
}

function expectError(res: { status: number; json: any }, status: number, code: string) {
  expect(res.status).toBe(status);
  expect(res.json).toMatchObject({ code, status: 'error' });
  expect(typeof res.json.error).toBe('string');
}

async function tokenCount(): Promise<number> {
  return (await call('GET', '/v2/storage/tokens')).json.length;
}

async function createToken(spec: unknown): Promise<{ id: string; token: string }> {
  const res = await call('POST', '/v2/storage/tokens', { json: spec });
  expect(res.status).toBe(201);
  return res.json;
}

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sluice-storage-api-'));
  const config = loadConfig(['--host', '127.0.0.1', '--port', '0', '--otlp-grpc-port', '0', '--data-dir', dataDir, '--master-token', MASTER], {});
  server = await startServer(config, pino({ level: 'silent' }));

  // Two buckets with data, created the way the stream sinks create them.
  const { tables } = server.services;
  await tables.ensureTable('in.c-events.raw', [{ name: 'id' }, { name: 'body' }], { metadata: { 'KBC.stream.sink.id': 'my-sink', 'KBC.stream.source.id': 'my-source' } });
  await tables.insertRows('in.c-events.raw', [['1', 'say "hi"'], ['2', ''], ['3', 'multi\nline']]);
  await tables.ensureTable('out.c-secret.t', [{ name: 'x' }], { metadata: {} });
});

afterAll(async () => {
  await server?.close();
  rmSync(dataDir, { recursive: true, force: true });
});

describe('authentication', () => {
  it.each([
    ['no token', null],
    ['an unknown token', '1-1-wrong'],
    ['an empty token', ''],
  ])('answers 401 storage.tokenInvalid for %s', async (_name, token) => {
    const res = await call('GET', '/v2/storage/tokens/verify', { token });
    expectError(res, 401, 'storage.tokenInvalid');
    expect(res.json.error).toBe('Invalid access token');
  });

  it('answers unknown paths under /v2/storage in the Storage envelope', async () => {
    const res = await call('GET', '/v2/storage/nope');
    expectError(res, 404, 'notFound');
    expect(res.json.error).toContain('/v2/storage/nope');
  });
});

describe('tokens', () => {
  it('verify describes the master token', async () => {
    const res = await call('GET', '/v2/storage/tokens/verify');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      id: '1',
      token: MASTER,
      description: 'Master Token',
      isMasterToken: true,
      canManageBuckets: true,
      canManageTokens: true,
      canReadAllFileUploads: true,
      expires: null,
      isExpired: false,
      isDisabled: false,
      bucketPermissions: { 'in.c-events': 'manage', 'out.c-secret': 'manage' },
      admin: { id: 1, name: 'Sluice Admin', role: 'admin' },
      owner: { id: 1 },
    });
    expect(res.json.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000$/);
  });

  it('creates a scoped token from JSON; the new token works and sees its own permissions', async () => {
    const created = await call('POST', '/v2/storage/tokens', {
      json: { description: 'reader', bucketPermissions: { 'in.c-events': 'read' }, componentAccess: ['keboola.ex-http'] },
    });
    expect(created.status).toBe(201);
    expect(created.json.token).toMatch(new RegExp(`^1-${created.json.id}-`));
    expect(created.json).toMatchObject({ description: 'reader', isMasterToken: false, canManageTokens: false, expires: null });

    const verify = await call('GET', '/v2/storage/tokens/verify', { token: created.json.token });
    expect(verify.status).toBe(200);
    expect(verify.json).toMatchObject({
      id: created.json.id,
      isMasterToken: false,
      canManageBuckets: false,
      bucketPermissions: { 'in.c-events': 'read' },
      componentAccess: ['keboola.ex-http'],
    });
    expect(verify.json.admin).toBeUndefined();

    // Listing and detail never show a token string.
    const detail = await call('GET', `/v2/storage/tokens/${created.json.id}`);
    expect(detail.json.description).toBe('reader');
    expect(detail.json.token).toBeUndefined();
    const list = await call('GET', '/v2/storage/tokens');
    expect(list.json.map((t: any) => t.id)).toContain(created.json.id);
    expect(list.json.every((t: any) => t.token === undefined)).toBe(true);
  });

  it('creates a token from a form body as the PHP client sends it', async () => {
    const form = new URLSearchParams([
      ['description', 'form token'],
      ['bucketPermissions[in.c-events]', 'write'],
      ['canReadAllFileUploads', '1'],
      ['componentAccess[]', 'a.b'],
      ['componentAccess[]', 'c.d'],
      ['expiresIn', '3600'],
    ]).toString();
    const res = await call('POST', '/v2/storage/tokens', { form });
    expect(res.status).toBe(201);
    expect(res.json).toMatchObject({
      description: 'form token',
      bucketPermissions: { 'in.c-events': 'write' },
      canReadAllFileUploads: true,
      canManageBuckets: false,
      componentAccess: ['a.b', 'c.d'],
      isExpired: false,
    });
    const expires = Date.parse(res.json.expires.replace('+0000', 'Z'));
    expect(expires - Date.now()).toBeGreaterThan(3500_000);
    expect(expires - Date.now()).toBeLessThanOrEqual(3600_000);
  });

  it.each([
    ['invalid JSON', { body: '{"description": ', contentType: 'application/json' }, 400, 'storage.validation'],
    ['an unknown field', { json: { description: 'x', canManageTokens: true } }, 400, 'storage.tokens.validation'],
    ['a wrong type', { json: { canManageBuckets: 'yes' } }, 400, 'storage.tokens.validation'],
    ['a bad permission', { json: { bucketPermissions: { 'in.c-events': 'admin' } } }, 400, 'storage.tokens.validation'],
    ['a bad bucket id', { json: { bucketPermissions: { 'in.events': 'read' } } }, 400, 'storage.tokens.validation'],
    ['a zero expiresIn', { json: { expiresIn: 0 } }, 400, 'storage.tokens.validation'],
    ['an expiresIn past any date', { json: { expiresIn: 6.65e102 } }, 400, 'storage.tokens.validation'],
    ['a bad form boolean', { form: 'canManageBuckets=maybe' }, 400, 'storage.tokens.validation'],
    ['a text body', { body: 'x', contentType: 'text/plain' }, 400, 'storage.tokens.validation'],
    ['an unsupported content type', { body: '<x/>', contentType: 'application/xml' }, 415, 'storage.unsupportedMediaType'],
  ])('rejects %s with the envelope and creates nothing', async (_name, options, status, code) => {
    const before = await tokenCount();
    const res = await call('POST', '/v2/storage/tokens', options);
    expectError(res, status, code);
    expect(await tokenCount()).toBe(before);
  });

  it('names the offending field of a validation error', async () => {
    const res = await call('POST', '/v2/storage/tokens', { json: { description: 'x', canPurgeTrash: true } });
    expect(res.json.error).toBe('Invalid parameters - canPurgeTrash: This field was not expected.');
    expect(res.json.errors).toEqual([{ key: 'canPurgeTrash', message: 'This field was not expected.' }]);
    const nested = await call('POST', '/v2/storage/tokens', { json: { componentAccess: ['ok', 3] } });
    expect(nested.json.error).toBe('Invalid parameters - componentAccess.1: This value should be of type string.');
    const whole = await call('POST', '/v2/storage/tokens', { json: ['not', 'an', 'object'] });
    expect(whole.json.error).toBe('Invalid parameters - body: This value should be of type object.');
  });

  it('lets only the master token create, list and delete tokens', async () => {
    const scoped = await createToken({ description: 'scoped', bucketPermissions: { 'in.c-events': 'write' }, canManageBuckets: true });
    const victim = await createToken({ description: 'victim' });
    const before = await tokenCount();

    expectError(await call('POST', '/v2/storage/tokens', { token: scoped.token, json: { description: 'nope' } }), 403, 'accessDenied');
    // Even a bad body from a token without the permission is a 403, not a validation error.
    const badBody = await call('POST', '/v2/storage/tokens', { token: scoped.token, body: '{', contentType: 'application/json' });
    expectError(badBody, 403, 'accessDenied');
    expect(badBody.json.error).toBe("You don't have access to the resource.");
    expectError(await call('GET', '/v2/storage/tokens', { token: scoped.token }), 403, 'accessDenied');
    expectError(await call('DELETE', `/v2/storage/tokens/${victim.id}`, { token: scoped.token }), 403, 'accessDenied');
    expectError(await call('GET', `/v2/storage/tokens/${victim.id}`, { token: scoped.token }), 403, 'accessDenied');
    expect((await call('GET', `/v2/storage/tokens/${scoped.id}`, { token: scoped.token })).status).toBe(200);

    expect(await tokenCount()).toBe(before);
    expect((await call('GET', '/v2/storage/tokens/verify', { token: victim.token })).status).toBe(200);
  });

  it('deletes a token with 204; it stops working and is then not found', async () => {
    const victim = await createToken({ description: 'to delete' });
    const res = await call('DELETE', `/v2/storage/tokens/${victim.id}`);
    expect(res.status).toBe(204);
    expect(res.text).toBe('');
    expectError(await call('GET', '/v2/storage/tokens/verify', { token: victim.token }), 401, 'storage.tokenInvalid');
    expectError(await call('GET', `/v2/storage/tokens/${victim.id}`), 404, 'storage.tokens.notFound');
    expectError(await call('DELETE', `/v2/storage/tokens/${victim.id}`), 404, 'storage.tokens.notFound');
  });

  it('refuses to delete the master token', async () => {
    expectError(await call('DELETE', '/v2/storage/tokens/1'), 400, 'storage.tokens.cannotDeleteMasterToken');
    expect((await call('GET', '/v2/storage/tokens/verify')).status).toBe(200);
  });
});

describe('buckets and tables', () => {
  it('lists every bucket for the master token', async () => {
    const res = await call('GET', '/v2/storage/buckets');
    expect(res.status).toBe(200);
    expect(res.json.map((b: any) => b.id)).toEqual(['in.c-events', 'out.c-secret']);
    expect(res.json[0]).toMatchObject({ id: 'in.c-events', name: 'c-events', displayName: 'events', stage: 'in' });
  });

  it('shows a scoped token only the buckets and tables it has a permission on', async () => {
    const reader = await createToken({ description: 'reader', bucketPermissions: { 'in.c-events': 'read' } });
    const buckets = await call('GET', '/v2/storage/buckets', { token: reader.token });
    expect(buckets.json.map((b: any) => b.id)).toEqual(['in.c-events']);
    const tables = await call('GET', '/v2/storage/tables', { token: reader.token });
    expect(tables.json.map((t: any) => t.id)).toEqual(['in.c-events.raw']);

    expectError(await call('GET', '/v2/storage/buckets/out.c-secret', { token: reader.token }), 403, 'accessDenied');
    expectError(await call('GET', '/v2/storage/buckets/out.c-secret/tables', { token: reader.token }), 403, 'accessDenied');
    expectError(await call('GET', '/v2/storage/tables/out.c-secret.t', { token: reader.token }), 403, 'accessDenied');
    expectError(await call('GET', '/v2/storage/tables/out.c-secret.t/data-preview', { token: reader.token }), 403, 'accessDenied');
    // A bucket it cannot read is 403 whether or not it exists.
    expectError(await call('GET', '/v2/storage/buckets/out.c-nothing', { token: reader.token }), 403, 'accessDenied');
    expect((await call('GET', '/v2/storage/tables/in.c-events.raw', { token: reader.token })).status).toBe(200);
  });

  it('gives a canManageBuckets token every bucket', async () => {
    const manager = await createToken({ description: 'manager', canManageBuckets: true });
    const res = await call('GET', '/v2/storage/buckets', { token: manager.token });
    expect(res.json.map((b: any) => b.id)).toEqual(['in.c-events', 'out.c-secret']);
  });

  it('returns table detail with columns, bucket, counts and metadata', async () => {
    const res = await call('GET', '/v2/storage/tables/in.c-events.raw');
    expect(res.status).toBe(200);
    expect(res.json).toMatchObject({
      id: 'in.c-events.raw',
      name: 'raw',
      bucket: { id: 'in.c-events', stage: 'in', name: 'c-events' },
      columns: ['id', 'body'],
      rowsCount: 3,
      primaryKey: [],
    });
    expect(res.json.created).toMatch(/\+0000$/);
    expect(res.json.lastImportDate).toMatch(/\+0000$/);
    const meta = Object.fromEntries(res.json.metadata.map((m: any) => [m.key, m.value]));
    expect(meta).toEqual({ 'KBC.stream.sink.id': 'my-sink', 'KBC.stream.source.id': 'my-source' });
  });

  it('adds columns to table listings only with include=columns', async () => {
    const plain = await call('GET', '/v2/storage/tables');
    expect(plain.json.map((t: any) => t.id)).toEqual(['in.c-events.raw', 'out.c-secret.t']);
    expect(plain.json[0].columns).toBeUndefined();
    const withColumns = await call('GET', '/v2/storage/tables?include=columns');
    expect(withColumns.json[0].columns).toEqual(['id', 'body']);
    const inBucket = await call('GET', '/v2/storage/buckets/in.c-events/tables?include=columns');
    expect(inBucket.json.map((t: any) => [t.id, t.columns])).toEqual([['in.c-events.raw', ['id', 'body']]]);
    expectError(await call('GET', '/v2/storage/tables?include=rows'), 400, 'storage.tables.validation');
  });

  it('answers missing buckets and tables with 404 and bad ids with 400', async () => {
    const table = await call('GET', '/v2/storage/tables/in.c-x.y');
    expectError(table, 404, 'storage.tables.notFound');
    expect(table.json.error).toBe('The table "in.c-x.y" was not found in the bucket "in.c-x" in the project "1"');
    expectError(await call('GET', '/v2/storage/buckets/in.c-x'), 404, 'storage.buckets.notFound');
    expectError(await call('GET', '/v2/storage/buckets/in.c-x/tables'), 404, 'storage.buckets.notFound');
    expectError(await call('GET', '/v2/storage/tables/in.c-x.y/data-preview'), 404, 'storage.tables.notFound');

    const badTable = await call('GET', '/v2/storage/tables/events.raw');
    expectError(badTable, 400, 'storage.tables.validation');
    expect(badTable.json.error).toContain('"events.raw"');
    expectError(await call('GET', '/v2/storage/buckets/in.events'), 400, 'storage.buckets.validation');
  });

  it('previews table data as CSV with a header row', async () => {
    const res = await call('GET', '/v2/storage/tables/in.c-events.raw/data-preview');
    expect(res.status).toBe(200);
    expect(res.type).toMatch(/^text\/csv/);
    expect(res.text).toBe('"id","body"\n"1","say ""hi"""\n"2",""\n"3","multi\nline"\n');
    const limited = await call('GET', '/v2/storage/tables/in.c-events.raw/data-preview?limit=1');
    expect(limited.text).toBe('"id","body"\n"1","say ""hi"""\n');
    const empty = await call('GET', '/v2/storage/tables/out.c-secret.t/data-preview');
    expect(empty.text).toBe('"x"\n');
  });

  it.each(['0', '1001', 'abc', '-1'])('rejects data-preview limit=%s with 400', async (limit) => {
    const res = await call('GET', `/v2/storage/tables/in.c-events.raw/data-preview?limit=${limit}`);
    expectError(res, 400, 'storage.tables.validation');
    expect(res.json.errors[0].key).toBe('limit');
  });
});

describe('typed tables and primary keys', () => {
  it('answers a typed table with isTyped and its definition, an untyped keyed one with its primaryKey only', async () => {
    const { tables } = server.services;
    await tables.ensureTable('in.c-typed.t', [{ name: 'id', type: 'INTEGER' }, { name: 'path' }, { name: 'amount', type: 'NUMERIC' }, { name: 'at', type: 'TIMESTAMP' }], { primaryKey: ['path', 'id'], metadata: {} });
    await tables.ensureTable('in.c-typed.keyed', [{ name: 'k' }, { name: 'v' }], { primaryKey: ['k'], metadata: {} });
    try {
      await tables.insertRows('in.c-typed.t', [['1', 'a', '-1.50', null], ['1', 'a', '2', '2026-11-27T01:02:03.456Z']]);
      const detail = await call('GET', '/v2/storage/tables/in.c-typed.t');
      expect(detail.status).toBe(200);
      expect(detail.json).toMatchObject({ primaryKey: ['path', 'id'], isTyped: true, columns: ['id', 'path', 'amount', 'at'], rowsCount: 1 });
      expect(detail.json.definition).toEqual({
        primaryKeysNames: ['path', 'id'],
        columns: [
          { name: 'id', definition: { type: 'BIGINT', nullable: false }, basetype: 'INTEGER' },
          { name: 'path', definition: { type: 'VARCHAR', nullable: false }, basetype: 'STRING' },
          { name: 'amount', definition: { type: 'DECIMAL', nullable: true, length: '38,9' }, basetype: 'NUMERIC' },
          { name: 'at', definition: { type: 'TIMESTAMP WITH TIME ZONE', nullable: true }, basetype: 'TIMESTAMP' },
        ],
      });
      // Listings answer it too; the preview shows the values as text (the upsert kept the last row).
      const listed = (await call('GET', '/v2/storage/buckets/in.c-typed/tables')).json;
      expect(listed.map((t: any) => [t.id, t.primaryKey, t.isTyped, t.definition?.primaryKeysNames])).toEqual([
        ['in.c-typed.keyed', ['k'], undefined, undefined],
        ['in.c-typed.t', ['path', 'id'], true, ['path', 'id']],
      ]);
      expect((await call('GET', '/v2/storage/tables/in.c-typed.t/data-preview')).text)
        .toBe('"id","path","amount","at"\n"1","a","2.000000000","2026-11-27T01:02:03.456000Z"\n');
      // An untyped table has exactly the fields it had before typed tables.
      const untyped = await call('GET', '/v2/storage/tables/in.c-events.raw');
      expect(Object.keys(untyped.json).sort()).toEqual([
        'bucket', 'columns', 'created', 'displayName', 'id', 'isAlias', 'lastChangeDate', 'lastImportDate', 'metadata', 'name', 'primaryKey', 'rowsCount', 'transactional', 'uri',
      ]);
    } finally {
      await tables.dropBucket('in.c-typed');
    }
  });
});
