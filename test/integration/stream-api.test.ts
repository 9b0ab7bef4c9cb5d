import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestService } from '../helpers/service.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;

const sinkBody = (name: string, tableId: string, columns: unknown[] = [{ type: 'uuid', name: 'id' }, { type: 'body', name: 'body' }]) => ({
  name,
  type: 'table',
  table: { type: 'keboola', tableId, mapping: { columns } },
});

async function createSource(name: string, extra: Record<string, unknown> = {}) {
  const task = await svc.task('POST', `${B()}/sources`, { json: { name, type: 'http', ...extra } });
  expect(task.status).toBe('success');
  return task.outputs.sourceId as string;
}

async function internalTokens() {
  const res = await svc.call('GET', '/v2/storage/tokens');
  expect(res.status).toBe(200);
  return (res.json as any[]).filter((t) => String(t.description).startsWith('[_internal] Stream Sink'));
}

beforeAll(async () => {
  svc = await TestService.start();
});
afterAll(async () => {
  await svc.close();
});

describe('sources', () => {
  it('creates a source through a task, normalises its id and shows its ingestion URL', async () => {
    const res = await svc.call('POST', '/v1/branches/default/sources', { json: { name: 'Orders Feed', type: 'http', description: 'web shop' } });
    expect(res.status).toBe(202);
    expect(res.json).toMatchObject({ type: 'api.create.source', status: 'processing', isFinished: false });
    const task = await svc.waitTask(res.json.url);
    expect(task).toMatchObject({ status: 'success', result: 'Source has been created successfully.', outputs: { sourceId: 'orders-feed', branchId: svc.branchId, projectId: svc.projectId } });
    const source = (await svc.call('GET', `${B()}/sources/orders-feed`)).json;
    expect(source).toMatchObject({ sourceId: 'orders-feed', name: 'Orders Feed', description: 'web shop', type: 'http', branchId: svc.branchId, version: { number: 1, description: 'New source.' } });
    expect(source.http.url).toMatch(new RegExp(`^https://in\\.test/stream/${svc.projectId}/orders-feed/[0-9a-zA-Z]{48}$`));
    expect(source.version.hash).toMatch(/^[0-9a-f]{16}$/);
    expect(source.version.by).toMatchObject({ type: 'user', tokenId: '1' });
  });

  it('gives an OTLP source its URLs and secret', async () => {
    await createSource('Telemetry', { type: 'otlp' });
    const source = (await svc.call('GET', `${B()}/sources/telemetry`)).json;
    expect(source.otlp.url).toBe(`${source.otlp.baseUrl}/${source.otlp.secret}`);
    expect(source.otlp.baseUrl).toBe(`https://in.test/otlp/${svc.projectId}/telemetry`);
    expect(source.http).toBeUndefined();
  });

  it('rotates the secret at once', async () => {
    await createSource('Rotating');
    const before = (await svc.call('GET', `${B()}/sources/rotating`)).json.http.url;
    const rotated = await svc.call('POST', `${B()}/sources/rotating/rotate-secret`);
    expect(rotated.status).toBe(200);
    expect(rotated.json.http.url).not.toBe(before);
    expect((await svc.call('GET', `${B()}/sources/rotating`)).json.http.url).toBe(rotated.json.http.url);
  });

  it('keeps versions and rolls back to one', async () => {
    await createSource('Versioned');
    await svc.task('PATCH', `${B()}/sources/versioned`, { json: { name: 'Renamed', changeDescription: 'Better name.' } });
    const updated = (await svc.call('GET', `${B()}/sources/versioned`)).json;
    expect(updated).toMatchObject({ name: 'Renamed', version: { number: 2, description: 'Better name.' } });
    const rollback = await svc.task('PUT', `${B()}/sources/versioned/versions/1/rollback`);
    expect(rollback.result).toBe('Source version was rolled back successfully.');
    const rolled = (await svc.call('GET', `${B()}/sources/versioned`)).json;
    expect(rolled).toMatchObject({ name: 'Versioned', version: { number: 3, description: 'Rollback to version "1".' } });
    const versions = (await svc.call('GET', `${B()}/sources/versioned/versions?limit=2`)).json;
    expect(versions.versions.map((v: any) => v.number)).toEqual([1, 2]);
    expect(versions.page).toMatchObject({ limit: 2, totalCount: 3 });
    expect((await svc.call('GET', `${B()}/sources/versioned/versions/2`)).json.description).toBe('Better name.');
    expect((await svc.call('GET', `${B()}/sources/versioned/versions/9`)).status).toBe(404);
  });

  it('pages the source list by id', async () => {
    const all = (await svc.call('GET', `${B()}/sources`)).json;
    const ids = all.sources.map((s: any) => s.sourceId);
    expect(ids).toEqual([...ids].sort());
    const page = (await svc.call('GET', `${B()}/sources?limit=1&afterId=${ids[0]}`)).json;
    expect(page.sources.map((s: any) => s.sourceId)).toEqual([ids[1]]);
    expect(page.page).toEqual({ limit: 1, totalCount: ids.length, afterId: ids[0], lastId: ids[1] });
    for (const bad of ['0', '101', 'x']) {
      const res = await svc.call('GET', `${B()}/sources?limit=${bad}`);
      expect(res.status).toBe(400);
    }
  });

  it('lets only one of concurrent creates of one id win; the others get 409', async () => {
    const results = await Promise.all(
      Array.from({ length: 6 }, () => svc.call('POST', `${B()}/sources`, { json: { name: 'Racing', type: 'http' } })),
    );
    const statuses = results.map((r) => r.status).sort();
    expect(statuses).toEqual([202, 409, 409, 409, 409, 409]);
    for (const r of results.filter((x) => x.status === 409)) expect(r.json.error).toBe('stream.api.sourceAlreadyExists');
    await svc.waitTask(results.find((r) => r.status === 202)!.json.url);
    expect((await svc.call('GET', `${B()}/sources/racing/versions`)).json.versions).toHaveLength(1);
  });

  it('soft-deletes, lists deleted and undeletes a source with its sinks', async () => {
    await createSource('Deletable');
    await svc.task('POST', `${B()}/sources/deletable/sinks`, { json: sinkBody('Kept', 'in.c-deletable.kept') });
    expect((await internalTokens()).some((t) => t.description === '[_internal] Stream Sink deletable/kept')).toBe(true);
    const del = await svc.task('DELETE', `${B()}/sources/deletable`);
    expect(del.result).toBe('Source has been deleted successfully.');
    expect((await svc.call('GET', `${B()}/sources/deletable`)).status).toBe(404);
    expect((await svc.call('GET', `${B()}/sources/deleted`)).json.sources.map((s: any) => s.sourceId)).toContain('deletable');
    expect((await internalTokens()).some((t) => t.description === '[_internal] Stream Sink deletable/kept')).toBe(false);
    // Its id is taken until then, and the conflict says how to get it back.
    const again = await svc.call('POST', `${B()}/sources`, { json: { name: 'Deletable', type: 'http' } });
    expect([again.status, again.json.message]).toEqual([409, 'Source "deletable" already exists in the branch. It is deleted: PUT .../sources/deletable/undelete brings it back (GET .../sources/deleted lists them), or choose another id.']);
    await svc.task('PUT', `${B()}/sources/deletable/undelete`);
    expect((await svc.call('GET', `${B()}/sources/deletable`)).status).toBe(200);
    expect((await svc.call('GET', `${B()}/sources/deletable/sinks/kept`)).status).toBe(200);
    expect((await internalTokens()).some((t) => t.description === '[_internal] Stream Sink deletable/kept')).toBe(true);
  });

  it('answers the re-creation of a deleted sink with how to undelete it, and undeletes it', async () => {
    await createSource('Sinkhome');
    await svc.task('POST', `${B()}/sources/sinkhome/sinks`, { json: sinkBody('Gone', 'in.c-sinkhome.gone') });
    await svc.task('DELETE', `${B()}/sources/sinkhome/sinks/gone`);
    expect((await svc.call('GET', `${B()}/sources/sinkhome/sinks/gone`)).status).toBe(404);
    const again = await svc.call('POST', `${B()}/sources/sinkhome/sinks`, { json: sinkBody('Gone', 'in.c-sinkhome.gone') });
    expect([again.status, again.json.error, again.json.message]).toEqual([409, 'stream.api.sinkAlreadyExists',
      'Sink "gone" already exists in the source. It is deleted: PUT .../sources/sinkhome/sinks/gone/undelete brings it back (GET .../sinks/deleted lists them), or choose another id.']);
    expect((await svc.call('GET', `${B()}/sources/sinkhome/sinks/deleted`)).json.sinks.map((s: any) => s.sinkId)).toEqual(['gone']);
    await svc.task('PUT', `${B()}/sources/sinkhome/sinks/gone/undelete`);
    expect((await svc.call('GET', `${B()}/sources/sinkhome/sinks/gone`)).status).toBe(200);
  });

  it('cascade-deletes a source with its sinks, tables and bucket, so the id can be reused', async () => {
    await createSource('Cascade');
    await svc.task('POST', `${B()}/sources/cascade/sinks`, { json: sinkBody('Only', 'in.c-cascade.only') });
    expect((await svc.call('GET', '/v2/storage/tables/in.c-cascade.only')).status).toBe(200);
    const del = await svc.task('DELETE', `${B()}/sources/cascade?cascade=true`);
    expect(del.result).toBe('Source and its destination tables and bucket have been deleted.');
    expect((await svc.call('GET', '/v2/storage/tables/in.c-cascade.only')).status).toBe(404);
    expect((await svc.call('GET', '/v2/storage/buckets/in.c-cascade')).status).toBe(404);
    expect((await svc.call('GET', `${B()}/sources/deleted`)).json.sources.map((s: any) => s.sourceId)).not.toContain('cascade');
    await createSource('Cascade');
  });
});

describe('sinks', () => {
  it('creates the table, a token with the minimum scope, and recreates the token on disable/enable', async () => {
    await createSource('Web');
    const task = await svc.task('POST', `${B()}/sources/web/sinks`, {
      json: sinkBody('Events', 'in.c-web.events', [
        { type: 'uuid', name: 'id' },
        { type: 'datetime', name: 'at' },
        { type: 'path', name: 'user', path: 'user.id', defaultValue: 'anonymous', rawString: true },
      ]),
    });
    expect(task).toMatchObject({ status: 'success', result: 'Sink has been created successfully.', outputs: { sinkId: 'events', sourceId: 'web' } });
    const table = (await svc.call('GET', '/v2/storage/tables/in.c-web.events')).json;
    expect(table.columns).toEqual(['id', 'at', 'user']);
    const sink = (await svc.call('GET', `${B()}/sources/web/sinks/events`)).json;
    expect(sink.table.mapping.columns[2]).toEqual({ type: 'path', name: 'user', path: 'user.id', defaultValue: 'anonymous', rawString: true });

    const [token] = (await internalTokens()).filter((t) => t.description === '[_internal] Stream Sink web/events');
    expect(token).toMatchObject({ canReadAllFileUploads: true, bucketPermissions: { 'in.c-web': 'write' }, canManageBuckets: false });

    await svc.task('PUT', `${B()}/sources/web/sinks/events/disable`);
    const disabled = (await svc.call('GET', `${B()}/sources/web/sinks/events`)).json;
    expect(disabled).toMatchObject({ disabled: { reason: 'API' }, version: { number: 2, description: 'Disabled.' } });
    expect((await internalTokens()).filter((t) => t.description === '[_internal] Stream Sink web/events')).toHaveLength(0);

    await svc.task('PUT', `${B()}/sources/web/sinks/events/enable`);
    const [fresh] = (await internalTokens()).filter((t) => t.description === '[_internal] Stream Sink web/events');
    expect(fresh.id).not.toBe(token.id);
    expect((await svc.call('GET', `${B()}/sources/web/sinks/events`)).json.disabled).toBeUndefined();
  });

  it('shares an existing table: adds the mapping\'s new columns, keeps the others, refuses another type (rule 1, grown)', async () => {
    await createSource('Rules');
    await svc.task('POST', `${B()}/sources/rules/sinks`, { json: sinkBody('First', 'in.c-rules.shared') });
    const same = await svc.task('POST', `${B()}/sources/rules/sinks`, { json: sinkBody('Second', 'in.c-rules.shared') });
    expect(same.status).toBe('success');
    const other = await svc.task('POST', `${B()}/sources/rules/sinks`, {
      json: sinkBody('Third', 'in.c-rules.shared', [{ type: 'uuid', name: 'id' }, { type: 'ip', name: 'ip' }]),
    });
    expect(other.status).toBe('success');
    expect((await svc.call('GET', '/v2/storage/tables/in.c-rules.shared')).json.columns).toEqual(['id', 'body', 'ip']);
    const typed = await svc.call('POST', `${B()}/sources/rules/sinks`, {
      json: sinkBody('Fourth', 'in.c-rules.shared', [{ type: 'body', name: 'body', dataType: 'JSON' }]),
    });
    expect(typed.status).toBe(400);
    expect(typed.json.error).toBe('stream.api.tableSchemaMismatch');
    expect(typed.json.message).toMatch(/^The column "body" of the table "in.c-rules.shared" is untyped and the mapping asks for JSON/);
    expect((await svc.call('GET', `${B()}/sources/rules/sinks/fourth`)).status).toBe(404);
    expect((await svc.call('GET', '/v2/storage/tables/in.c-rules.shared')).json.columns).toEqual(['id', 'body', 'ip']);
  });

  it('changes sink settings, shows them as overwritten and refuses bad values and protected keys', async () => {
    await createSource('Settings');
    await svc.task('POST', `${B()}/sources/settings/sinks`, { json: sinkBody('S', 'in.c-settings.s') });
    const path = `${B()}/sources/settings/sinks/s/settings`;
    const ok = await svc.task('PATCH', path, { json: { settings: [{ key: 'storage.level.target.import.trigger.count', value: 100 }] } });
    expect(ok.result).toBe('Sink settings have been updated successfully.');
    const row = (await svc.call('GET', path)).json.settings.find((s: any) => s.key === 'storage.level.target.import.trigger.count');
    expect(row).toMatchObject({ value: 100, defaultValue: 50000, overwritten: true });

    const bad = await svc.call('PATCH', path, { json: { settings: [{ key: 'storage.level.target.import.trigger.count', value: 0 }] } });
    expect(bad.status).toBe(400);
    expect(bad.json.error).toBe('stream.api.badRequest');
    const protectedKey = await svc.call('PATCH', path, { json: { settings: [{ key: 'storage.level.local.encoding.sync.mode', value: 'cache' }] } });
    expect(protectedKey.status).toBe(403);
    const reset = await svc.task('PATCH', path, { json: { settings: [{ key: 'storage.level.target.import.trigger.count', value: null }] } });
    expect(reset.status).toBe('success');
    const after = (await svc.call('GET', path)).json.settings.find((s: any) => s.key === 'storage.level.target.import.trigger.count');
    expect(after).toMatchObject({ value: 50000, overwritten: false });
    const versions = (await svc.call('GET', `${B()}/sources/settings/sinks/s/versions`)).json.versions;
    expect(versions.map((v: any) => v.description)).toEqual(['New sink.', 'Updated settings.', 'Updated settings.']);
  });

  it('enforces the column limits and unique names', async () => {
    await createSource('Limits');
    const many = Array.from({ length: 101 }, (_, i) => ({ type: 'uuid', name: `c${i}` }));
    const tooMany = await svc.call('POST', `${B()}/sources/limits/sinks`, { json: sinkBody('Many', 'in.c-limits.many', many) });
    expect(tooMany.status).toBe(400);
    expect(tooMany.json.error).toBe('stream.api.invalidLength');
    const none = await svc.call('POST', `${B()}/sources/limits/sinks`, { json: sinkBody('None', 'in.c-limits.none', []) });
    expect(none.status).toBe(400);
    const dup = await svc.call('POST', `${B()}/sources/limits/sinks`, {
      json: sinkBody('Dup', 'in.c-limits.dup', [{ type: 'uuid', name: 'a' }, { type: 'body', name: 'a' }]),
    });
    expect(dup.status).toBe(400);
    expect(dup.json.message).toMatch(/"a"/);
    const noPath = await svc.call('POST', `${B()}/sources/limits/sinks`, { json: sinkBody('NoPath', 'in.c-limits.np', [{ type: 'path', name: 'p' }]) });
    expect(noPath.status).toBe(400);
    expect((await svc.call('GET', `${B()}/sources/limits/sinks`)).json.sinks).toEqual([]);
  });
});

describe('bad input changes nothing', () => {
  it('answers malformed JSON, wrong types, unknown fields and long values in the envelope', async () => {
    const before = (await svc.call('GET', `${B()}/sources`)).json.page.totalCount;
    const cases: [string, number, string][] = [
      ['{"name": "x", ', 400, 'stream.api.badRequest'],
      [JSON.stringify({ name: 5, type: 'http' }), 400, 'stream.api.invalidFieldType'],
      [JSON.stringify({ name: 'x', type: 'http', color: 'red' }), 400, 'stream.api.badRequest'],
      [JSON.stringify({ name: 'x', type: 'http', description: 'd'.repeat(4097) }), 400, 'stream.api.invalidLength'],
      [JSON.stringify({ name: 'x', type: 'kafka' }), 400, 'stream.api.invalidEnumValue'],
      [JSON.stringify({ type: 'http' }), 400, 'stream.api.missingField'],
      [JSON.stringify({ name: '!!!', type: 'http' }), 400, 'stream.api.badRequest'],
      [JSON.stringify([1, 2]), 400, 'stream.api.invalidFieldType'],
    ];
    for (const [body, status, error] of cases) {
      const res = await svc.call('POST', `${B()}/sources`, { body });
      expect({ body, status: res.status, error: res.json?.error }).toEqual({ body, status, error });
      expect(res.json.message).toMatch(/\S/);
    }
    expect((await svc.call('GET', `${B()}/sources`)).json.page.totalCount).toBe(before);
  });

  it('checks the token: missing 400, wrong 401, read-only on a write 403', async () => {
    const missing = await svc.call('GET', `${B()}/sources`, { token: null });
    expect(missing.status).toBe(400);
    expect(missing.json).toEqual({ statusCode: 400, error: 'stream.api.missingField', message: '"X-StorageApi-Token" is missing from header.' });
    const wrong = await svc.call('GET', `${B()}/sources`, { token: 'nope' });
    expect(wrong.status).toBe(401);
    const created = await svc.call('POST', '/v2/storage/tokens', { json: { description: 'reader', bucketPermissions: { 'in.c-web': 'read' } } });
    expect(created.status).toBe(201);
    const reader = created.json.token as string;
    expect((await svc.call('GET', `${B()}/sources`, { token: reader })).status).toBe(200);
    const write = await svc.call('POST', `${B()}/sources`, { token: reader, json: { name: 'Sneaky', type: 'http' } });
    expect(write.status).toBe(403);
    expect(write.json.error).toBe('stream.api.forbidden');
    expect((await svc.call('GET', `${B()}/sources/sneaky`)).status).toBe(404);
  });

  it('refuses an unknown branch and unknown routes', async () => {
    expect((await svc.call('GET', '/v1/branches/999/sources')).json.error).toBe('stream.api.branchNotFound');
    const nf = await svc.call('GET', '/v1/nothing');
    expect(nf.status).toBe(404);
    expect(nf.json.error).toBe('stream.api.endpointNotFound');
  });
});

describe('limits', () => {
  it('refuses the 101st source of a branch', async () => {
    const other = await TestService.start({ branchId: 7 });
    try {
      const urls: string[] = [];
      for (let i = 0; i < 100; i++) {
        const res = await other.call('POST', '/v1/branches/7/sources', { json: { name: `s${i}`, type: 'http' } });
        expect(res.status).toBe(202);
        urls.push(res.json.url);
      }
      for (const u of urls) await other.waitTask(u);
      const over = await other.call('POST', '/v1/branches/7/sources', { json: { name: 'one-too-many', type: 'http' } });
      expect(over.status).toBe(422);
      expect(over.json.error).toBe('stream.api.resourceLimitReached');
    } finally {
      await other.close();
    }
  });
});

describe('documentation', () => {
  it('serves the OpenAPI document generated from the route schemas, and a UI', async () => {
    const doc = await svc.call('GET', '/v1/documentation/openapi.json', { token: null });
    expect(doc.status).toBe(200);
    expect(doc.json.openapi).toMatch(/^3\./);
    expect(Object.keys(doc.json.paths)).toEqual(expect.arrayContaining([
      '/v1/branches/{branchId}/sources',
      '/v1/branches/{branchId}/sources/{sourceId}/sinks/{sinkId}/settings',
      '/v2/storage/tokens/verify',
    ]));
    expect(doc.json.paths['/v1/branches/{branchId}/sources'].post.requestBody).toBeDefined();
    const ui = await svc.call('GET', '/v1/documentation/', { token: null });
    expect(ui.status).toBe(200);
    expect(ui.text).toMatch(/swagger/i);
  });
});

describe('CORS', () => {
  it('answers preflight requests of browser clients', async () => {
    const res = await svc.call('OPTIONS', `${B()}/sources`, {
      token: null,
      headers: { Origin: 'https://app.example', 'Access-Control-Request-Method': 'POST', 'Access-Control-Request-Headers': 'X-StorageApi-Token' },
    });
    expect(res.status).toBe(204);
    expect(res.headers.get('access-control-allow-origin')).toBe('*');
    expect(res.headers.get('access-control-allow-headers')).toMatch(/X-StorageApi-Token/);
    const get = await svc.call('GET', `${B()}/sources`, { headers: { Origin: 'https://app.example' } });
    expect(get.headers.get('access-control-allow-origin')).toBe('*');
  });
});

describe('test endpoint and template checks', () => {
  it('rejects a sink whose template does not parse, with the position of the error', async () => {
    await createSource('Templated');
    const res = await svc.call('POST', `${B()}/sources/templated/sinks`, {
      json: sinkBody('Bad', 'in.c-templated.bad', [{ type: 'template', name: 'jsonnet', template: { language: 'jsonnet', content: 'Invalid' } }]),
    });
    expect(res.status).toBe(400);
    expect(res.json).toEqual({ statusCode: 400, error: 'stream.api.badRequest', message: 'Column "jsonnet" template is invalid: 1:1-8 Unknown variable: Invalid.' });
    expect((await svc.call('GET', `${B()}/sources/templated/sinks`)).json.sinks).toEqual([]);
    const tooLong = await svc.call('POST', `${B()}/sources/templated/sinks`, {
      json: sinkBody('Long', 'in.c-templated.long', [{ type: 'template', name: 't', template: { language: 'jsonnet', content: 'x'.repeat(4097) } }]),
    });
    expect(tooLong.status).toBe(400);
  });

  it('renders a payload through every sink and stores nothing', async () => {
    await createSource('Preview');
    await svc.task('POST', `${B()}/sources/preview/sinks`, {
      json: sinkBody('Rows', 'in.c-preview.rows', [
        { type: 'path', name: 'user', path: 'user.name', rawString: true },
        { type: 'template', name: 'level', template: { language: 'jsonnet', content: 'std.asciiUpper(Body("level", "info"))' } },
        { type: 'ip', name: 'ip' },
      ]),
    });
    const res = await svc.call('POST', `${B()}/sources/preview/test`, {
      body: JSON.stringify({ user: { name: 'Ann' }, level: 'warn' }),
      headers: { 'X-Real-IP': '10.1.2.3' },
    });
    expect(res.status).toBe(200);
    expect(res.json).toEqual({
      projectId: svc.projectId,
      branchId: svc.branchId,
      sourceId: 'preview',
      tables: [{ sinkId: 'rows', tableId: 'in.c-preview.rows', rows: [{ columns: [{ name: 'user', value: 'Ann' }, { name: 'level', value: '"WARN"' }, { name: 'ip', value: '10.1.2.3' }] }] }],
    });
    const form = await svc.call('POST', `${B()}/sources/preview/test`, { body: 'user[name]=Bo&level=debug', contentType: 'application/x-www-form-urlencoded' });
    expect(form.status).toBe(200);
    expect(form.json.tables[0].rows[0].columns.slice(0, 2)).toEqual([{ name: 'user', value: 'Bo' }, { name: 'level', value: '"DEBUG"' }]);
    const missing = await svc.call('POST', `${B()}/sources/preview/test`, { body: '{"level":"x"}' });
    expect(missing.status).toBe(422);
    expect(missing.json).toMatchObject({ error: 'stream.api.unprocessableContent', message: 'Invalid value for column "user": path "user.name" not found in the body.' });
    expect((await svc.call('GET', '/v2/storage/tables/in.c-preview.rows')).json.rowsCount).toBe(0);
  });

  it('routes an OTLP test record only to sinks that accept its signal', async () => {
    await createSource('Otel', { type: 'otlp' });
    const cols = [{ type: 'path', name: 'name', path: 'name', defaultValue: '', rawString: true }];
    await svc.task('POST', `${B()}/sources/otel/sinks`, { json: { ...sinkBody('Logs', 'in.c-otel.logs', cols), allowedSignals: ['logs'] } });
    await svc.task('POST', `${B()}/sources/otel/sinks`, { json: { ...sinkBody('Spans', 'in.c-otel.spans', cols), allowedSignals: ['traces'] } });
    await svc.task('POST', `${B()}/sources/otel/sinks`, { json: sinkBody('All', 'in.c-otel.all', cols) });
    const traced = await svc.call('POST', `${B()}/sources/otel/test?signal=traces`, { body: '{"name":"GET /"}' });
    expect(traced.json.tables.map((t: any) => t.sinkId).sort()).toEqual(['all', 'spans']);
    const logged = await svc.call('POST', `${B()}/sources/otel/test`, { body: '{"name":"x"}' });
    expect(logged.json.tables.map((t: any) => t.sinkId).sort()).toEqual(['all', 'logs']);
    expect((await svc.call('POST', `${B()}/sources/otel/test?signal=bogus`, { body: '{}' })).status).toBe(400);
    const sink = (await svc.call('GET', `${B()}/sources/otel/sinks/spans`)).json;
    expect(sink.allowedSignals).toEqual(['traces']);
    expect((await svc.call('GET', `${B()}/sources/otel/sinks/all`)).json.allowedSignals).toBeUndefined();
  });
});
