/**
 * The configuration API over real HTTP: configurations and rows, form and JSON
 * bodies, versions and rollback, soft delete and restore, branch paths, errors and permissions.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestService } from '../helpers/service.js';
import type { Token } from '../../src/storage/token-model.js';

let svc: TestService;
const C = '/v2/storage/components';

const form = (fields: Record<string, string>) => ({
  body: new URLSearchParams(fields).toString(), contentType: 'application/x-www-form-urlencoded',
});

function expectError(res: { status: number; json: any }, status: number, code: string, message?: string) {
  expect(res.status).toBe(status);
  expect(res.json).toMatchObject({ code, status: 'error' });
  if (message !== undefined) expect(res.json.error).toBe(message);
}

async function token(spec: object): Promise<string> {
  const res = await svc.call('POST', '/v2/storage/tokens', { json: { description: 'test', ...spec } });
  expect(res.status).toBe(201);
  return res.json.token;
}

beforeAll(async () => {
  svc = await TestService.start();
});

afterAll(async () => {
  await svc?.close();
});

describe('configurations', () => {
  it('creates from a form body with the configuration as a JSON string, and from JSON', async () => {
    const created = await svc.call('POST', `${C}/keboola.ex-db/configs`, form({
      name: 'From a form', description: 'd', configuration: JSON.stringify({ parameters: { a: [1, 2] } }),
    }));
    expect(created.status).toBe(201);
    expect(created.json).toMatchObject({
      name: 'From a form', description: 'd', version: 1, changeDescription: 'Configuration created', isDisabled: false,
      isDeleted: false, configuration: { parameters: { a: [1, 2] } }, state: {}, creatorToken: { id: expect.any(Number) },
    });
    expect(created.json.id).toMatch(/^\d+$/);
    expect(created.json.created).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\+0000$/);
    expect(created.json.currentVersion).toMatchObject({ changeDescription: 'Configuration created', versionIdentifier: expect.any(String) });

    const json = await svc.call('POST', `${C}/keboola.ex-db/configs`, {
      json: { name: 'From JSON', configurationId: 'main-1', configuration: { x: true }, changeDescription: 'Initial configuration' },
    });
    expect(json.status).toBe(201);
    expect(json.json).toMatchObject({ id: 'main-1', configuration: { x: true }, changeDescription: 'Initial configuration' });

    const detail = await svc.call('GET', `${C}/keboola.ex-db/configs/main-1`);
    expect(detail.json).toMatchObject({ id: 'main-1', rows: [], rowsSortOrder: [] });
    const list = await svc.call('GET', `${C}/keboola.ex-db/configs`);
    expect(list.json.map((c: any) => c.id)).toEqual([created.json.id, 'main-1']);
  });

  it('answers the reference errors for bad input', async () => {
    expectError(await svc.call('POST', `${C}/keboola.ex-db/configs`, form({ configuration: '{}' })), 400, 'storage.components.validation',
      'Invalid parameters - name: This field is missing.');
    expectError(await svc.call('POST', `${C}/keboola.ex-db/configs`, form({ name: 'x', configuration: '{not json' })), 400,
      'validation.invalidConfigurationFormat');
    expectError(await svc.call('POST', `${C}/keboola.ex-db/configs`, form({ name: 'x', state: '[1' })), 400, 'validation.invalidStateFormat');
    expectError(await svc.call('POST', `${C}/keboola.ex-db/configs`, { json: { name: 'x', configuration: 'plain text' } }), 400,
      'validation.invalidConfigurationFormat');
    expectError(await svc.call('POST', `${C}/keboola.ex-db/configs`, { json: { name: 'dup', configurationId: 'main-1' } }), 400,
      'configurationAlreadyExists');
    expectError(await svc.call('GET', `${C}/keboola.ex-db/configs/nope`), 404, 'storage.configuration.notFound', 'Configuration "nope" not found');
    expectError(await svc.call('POST', `${C}/keboola.ex-db/configs`, { json: { name: 'x', configurationId: 'a/b' } }), 400, 'storage.components.validation');
    expectError(await svc.call('POST', `${C}/keboola.ex-db/configs`, { body: '{"name":', contentType: 'application/json' }), 400, 'storage.validation');
    expectError(await svc.call('GET', `${C}/keboola.ex-db/configs`, { token: null }), 401, 'storage.tokenInvalid', 'Invalid access token');
  });

  it('versions every effective change and rolls back', async () => {
    const id = (await svc.call('POST', `${C}/keboola.ex-db/configs`, { json: { name: 'v1', configuration: { a: 1 } } })).json.id;
    const p = `${C}/keboola.ex-db/configs/${id}`;
    const updated = await svc.call('PUT', p, form({ name: 'v2', configuration: JSON.stringify({ a: 2 }) }));
    expect(updated.status).toBe(200);
    expect(updated.json).toMatchObject({ name: 'v2', version: 2, changeDescription: 'Configuration updated', configuration: { a: 2 } });
    // The same content again is no new version.
    expect((await svc.call('PUT', p, { json: { name: 'v2', configuration: { a: 2 } } })).json.version).toBe(2);
    // State is not versioned.
    const state = await svc.call('PUT', `${p}/state`, { json: { state: { component: { cursor: 5 } } } });
    expect(state.json).toMatchObject({ version: 2, state: { component: { cursor: 5 } } });
    expectError(await svc.call('PUT', `${p}/state`, { json: { state: {}, description: 'x' } }), 400, 'storage.components.validation',
      'Invalid parameters - description: This field was not expected.');

    const versions = await svc.call('GET', `${p}/versions`);
    expect(versions.json.map((v: any) => [v.version, v.changeDescription])).toEqual([[2, 'Configuration updated'], [1, 'Configuration created']]);
    expect(versions.json[0].configuration).toBeUndefined();
    expect((await svc.call('GET', `${p}/versions?include=configuration&limit=1&offset=1`)).json)
      .toMatchObject([{ version: 1, configuration: { a: 1 } }]);
    expect((await svc.call('GET', `${p}/versions/1`)).json).toMatchObject({ version: 1, name: 'v1', configuration: { a: 1 }, rows: [] });
    expectError(await svc.call('GET', `${p}/versions/9`), 404, 'notFound', 'Version 9 not found');

    const rolled = await svc.call('POST', `${p}/versions/1/rollback`);
    expect(rolled.status).toBe(201);
    expect(rolled.json).toEqual({ version: 3 });
    expect((await svc.call('GET', p)).json).toMatchObject({ version: 3, name: 'v1', configuration: { a: 1 }, changeDescription: 'Rollback to version 1' });

    const copy = await svc.call('POST', `${p}/versions/2/create`, { json: { name: 'copy' } });
    expect(copy.status).toBe(201);
    expect(Object.keys(copy.json)).toEqual(['id']);
    expect(copy.json.id).not.toBe(id);
    expect((await svc.call('GET', `${C}/keboola.ex-db/configs/${copy.json.id}`)).json)
      .toMatchObject({ name: 'copy', version: 1, configuration: { a: 2 }, changeDescription: `Copied from configuration "v1" (${id}) version 2` });
  });

  it('deletes softly, restores, purges and reuses the id', async () => {
    await svc.call('POST', `${C}/keboola.ex-db/configs`, { json: { name: 'to delete', configurationId: 'del-1' } });
    const p = `${C}/keboola.ex-db/configs/del-1`;
    expect((await svc.call('DELETE', p)).status).toBe(204);
    expectError(await svc.call('GET', p), 404, 'storage.configuration.notFound');
    expectError(await svc.call('PUT', p, { json: { name: 'x' } }), 404, 'storage.configuration.notFound');
    const deleted = await svc.call('GET', `${C}/keboola.ex-db/configs?isDeleted=true`);
    expect(deleted.json.map((c: any) => c.id)).toContain('del-1');
    expect(deleted.json.find((c: any) => c.id === 'del-1')).toMatchObject({ isDeleted: true, version: 2, changeDescription: 'Configuration deleted' });

    const restored = await svc.call('POST', `${p}/restore`);
    expect(restored.status).toBe(200);
    expect(restored.json).toMatchObject({ isDeleted: false, version: 3, changeDescription: 'Configuration restored' });

    // Delete twice: the second delete purges; the id can be used again.
    expect((await svc.call('DELETE', p)).status).toBe(204);
    expect((await svc.call('DELETE', p)).status).toBe(204);
    expectError(await svc.call('DELETE', p), 404, 'storage.configuration.notFound');
    await svc.call('POST', `${C}/keboola.ex-db/configs`, { json: { name: 'to delete', configurationId: 'del-2' } });
    await svc.call('DELETE', `${C}/keboola.ex-db/configs/del-2`);
    const renewed = await svc.call('POST', `${C}/keboola.ex-db/configs`, { json: { name: 'renewed', configurationId: 'del-2' } });
    expect(renewed.status).toBe(201);
    expect(renewed.json).toMatchObject({ id: 'del-2', version: 1, name: 'renewed' });
  });

  it('lists components with their configurations', async () => {
    await svc.call('POST', `${C}/keboola.variables/configs`, { json: { name: 'vars', configuration: { variables: [] } } });
    const res = await svc.call('GET', '/v2/storage/components');
    expect(res.status).toBe(200);
    const variables = res.json.find((c: any) => c.id === 'keboola.variables');
    expect(variables).toMatchObject({ id: 'keboola.variables', name: 'Variables', type: 'other' });
    expect(variables.configurations[0].configuration).toBeUndefined();
    const full = await svc.call('GET', '/v2/storage/components?include=configuration,rows');
    expect(full.json.find((c: any) => c.id === 'keboola.variables').configurations[0]).toMatchObject({ configuration: { variables: [] }, rows: [] });
  });
});

describe('rows', () => {
  it('creates, lists, updates and deletes rows, bumping the configuration version', async () => {
    await svc.call('POST', `${C}/keboola.variables/configs`, { json: { name: 'with rows', configurationId: 'vars-rows' } });
    const p = `${C}/keboola.variables/configs/vars-rows`;
    const row = await svc.call('POST', `${p}/rows`, form({ rowId: 'defaults', name: 'Defaults', configuration: JSON.stringify({ values: [{ name: 'a', value: 'b' }] }) }));
    expect(row.status).toBe(201);
    expect(row.json).toMatchObject({ id: 'defaults', name: 'Defaults', version: 1, changeDescription: 'Row defaults added', configuration: { values: [{ name: 'a', value: 'b' }] } });
    const generated = await svc.call('POST', `${p}/rows`, { json: { configuration: { values: [] } } });
    expect(generated.json.id).toMatch(/^\d+$/);
    expectError(await svc.call('POST', `${p}/rows`, { json: { rowId: 'defaults' } }), 400, 'configurationRowAlreadyExists');
    expectError(await svc.call('POST', `${p}/rows`, form({ configuration: 'nope' })), 400, 'validation.invalidConfigurationFormat');
    expectError(await svc.call('POST', `${p}/rows`, { json: { isDisabled: 'maybe' } }), 400, 'storage.componentsRows.validation',
      'Invalid parameters - isDisabled: This value should be of type boolean.');

    expect((await svc.call('GET', p)).json).toMatchObject({ version: 3, changeDescription: `Row ${generated.json.id} added` });
    expect((await svc.call('GET', `${p}/rows`)).json.map((r: any) => r.id)).toEqual(['defaults', generated.json.id]);
    expect((await svc.call('GET', `${p}/rows/defaults`)).json.name).toBe('Defaults');

    const updated = await svc.call('PUT', `${p}/rows/defaults`, { json: { configuration: { values: [{ name: 'a', value: 'c' }] } } });
    expect(updated.json).toMatchObject({ version: 2, changeDescription: 'Row defaults changed', configuration: { values: [{ name: 'a', value: 'c' }] } });
    expect((await svc.call('GET', p)).json.version).toBe(4);
    // A version snapshot keeps the rows of that version.
    expect((await svc.call('GET', `${p}/versions/2`)).json.rows.map((r: any) => r.id)).toEqual(['defaults']);

    expect((await svc.call('DELETE', `${p}/rows/defaults`)).status).toBe(204);
    expectError(await svc.call('GET', `${p}/rows/defaults`), 404, 'notFound', 'Row defaults not found');
    expectError(await svc.call('DELETE', `${p}/rows/defaults`), 404, 'notFound');
    expect((await svc.call('GET', p)).json.version).toBe(5);
    // Rollback brings the row back.
    await svc.call('POST', `${p}/versions/4/rollback`);
    expect((await svc.call('GET', `${p}/rows`)).json.map((r: any) => r.id)).toEqual(['defaults', generated.json.id]);
  });
});

describe('branch paths', () => {
  it('serves the same configurations under /branch/default and /branch/{id}', async () => {
    const created = await svc.call('POST', `/v2/storage/branch/default/components/keboola.ex-db/configs`, { json: { name: 'in branch', configurationId: 'br-1' } });
    expect(created.status).toBe(201);
    expect((await svc.call('GET', `/v2/storage/branch/${svc.branchId}/components/keboola.ex-db/configs/br-1`)).json.name).toBe('in branch');
    expect((await svc.call('GET', `${C}/keboola.ex-db/configs/br-1`)).status).toBe(200);
    expectError(await svc.call('GET', '/v2/storage/branch/999/components/keboola.ex-db/configs/br-1'), 404, 'branchNotFound');
  });
});

describe('permissions', () => {
  it('lets canManageBuckets tokens write', async () => {
    const t = await token({ canManageBuckets: true });
    expect((await svc.call('POST', `${C}/keboola.ex-db/configs`, { token: t, json: { name: 'by manager' } })).status).toBe(201);
  });

  it('limits componentAccess tokens to their components', async () => {
    const t = await token({ componentAccess: ['keboola.ex-limited'] });
    expect((await svc.call('POST', `${C}/keboola.ex-limited/configs`, { token: t, json: { name: 'mine' } })).status).toBe(201);
    expectError(await svc.call('POST', `${C}/keboola.ex-db/configs`, { token: t, json: { name: 'not mine' } }), 403, 'accessDenied');
    expectError(await svc.call('GET', `${C}/keboola.ex-db/configs`, { token: t }), 403, 'accessDenied');
    const components = await svc.call('GET', '/v2/storage/components', { token: t });
    expect(components.json.map((c: any) => c.id)).toEqual(['keboola.ex-limited']);
  });

  it('refuses tokens without configuration permissions, even listing, and changes nothing', async () => {
    const t = await token({ bucketPermissions: { 'in.c-x': 'read' } });
    expectError(await svc.call('GET', '/v2/storage/components', { token: t }), 403, 'accessDenied', "You don't have access to the resource.");
    expectError(await svc.call('POST', `${C}/keboola.ex-db/configs`, { token: t, json: { name: 'x', configurationId: 'never' } }), 403, 'accessDenied');
    expectError(await svc.call('GET', `${C}/keboola.ex-db/configs/never`), 404, 'storage.configuration.notFound');
  });

  it('lets a read-only user read but not create, update or delete', async () => {
    const secret = await token({ canManageBuckets: true });
    // The tokens API creates no user tokens: make this one a read-only user's in the store.
    const services = svc.server.services;
    const stored = services.tokens.authenticate(secret)!;
    services.metadata.transact((tx) => tx.put(`storage/token/${stored.id}`, { ...stored, admin: { id: 2, name: 'Reader', role: 'readOnly' } } satisfies Token));

    await svc.call('POST', `${C}/keboola.ex-db/configs`, { json: { name: 'guarded', configurationId: 'guarded', configuration: { a: 1 } } });
    const p = `${C}/keboola.ex-db/configs/guarded`;
    expect((await svc.call('GET', p, { token: secret })).status).toBe(200);
    expectError(await svc.call('POST', `${C}/keboola.ex-db/configs`, { token: secret, json: { name: 'x' } }), 403, 'accessDenied');
    expectError(await svc.call('PUT', p, { token: secret, json: { name: 'changed' } }), 403, 'accessDenied');
    expectError(await svc.call('DELETE', p, { token: secret }), 403, 'accessDenied');
    expectError(await svc.call('POST', `${p}/rows`, { token: secret, json: { name: 'r' } }), 403, 'accessDenied');
    expect((await svc.call('GET', p)).json).toMatchObject({ name: 'guarded', version: 1, isDeleted: false, rows: [] });
  });
});
