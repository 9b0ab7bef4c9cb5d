/**
 * The JSON nesting limit (--max-json-depth, 20 here) on every API that stores JSON: Storage
 * configurations (JSON bodies and the `configuration`/`state` form fields), rows, state,
 * variables, events; the job queue's inline configData; the Stream API's sources, sinks and
 * settings. Deeper is a 400 in the family's envelope that names the limit, answered before the
 * route does anything (nothing stored); at the limit it is taken. A value nested 100 000 deep
 * (far beyond what a recursive encoder survives) is refused the same way and the server goes on.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestService } from '../helpers/service.js';

const LIMIT = 20;
const TOO_DEEP = `The JSON body is nested deeper than ${LIMIT} levels, the limit of this server.`;
const C = '/v2/storage/components';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;

/** `{"a":{"a":...{}}}` with `depth` objects. */
function nested(depth: number): Record<string, unknown> {
  let value: Record<string, unknown> = {};
  for (let i = 1; i < depth; i++) value = { a: value };
  return value;
}
/** The same as JSON text, for depths a recursive JSON.stringify cannot write. */
const nestedText = (depth: number): string => '{"a":'.repeat(depth - 1) + '{}' + '}'.repeat(depth - 1);

const form = (fields: Record<string, string>) => ({ body: new URLSearchParams(fields).toString(), contentType: 'application/x-www-form-urlencoded' });

beforeAll(async () => {
  svc = await TestService.start({ args: ['--max-json-depth', String(LIMIT)] });
  expect((await svc.task('POST', `${B()}/sources`, { json: { name: 'Shop', type: 'http' } })).status).toBe('success');
  expect((await svc.task('POST', `${B()}/sources/shop/sinks`, {
    json: { name: 'Raw', type: 'table', table: { type: 'keboola', tableId: 'in.c-depth.raw', mapping: { columns: [{ type: 'body', name: 'body' }] } } },
  })).status).toBe('success');
  expect((await svc.call('POST', `${C}/keboola.ex-db/configs`, { json: { name: 'Base', configurationId: 'base' } })).status).toBe(201);
});
afterAll(async () => {
  await svc?.close();
});

describe('the JSON nesting limit', () => {
  it('refuses deeper Storage API bodies with 400 in the Storage envelope, storing nothing', async () => {
    const configs = (await svc.call('GET', `${C}/keboola.ex-db/configs`)).json.length;
    const rows = (await svc.call('GET', `${C}/keboola.ex-db/configs/base/rows`)).json.length;
    const refusals = [
      await svc.call('POST', `${C}/keboola.ex-db/configs`, { json: { name: 'Deep', configuration: nested(2000) } }),
      await svc.call('PUT', `${C}/keboola.ex-db/configs/base`, { json: { configuration: nested(LIMIT) } }),
      await svc.call('PUT', `${C}/keboola.ex-db/configs/base/state`, { json: { state: nested(LIMIT) } }),
      await svc.call('POST', `${C}/keboola.ex-db/configs/base/rows`, { json: { name: 'Row', configuration: nested(LIMIT) } }),
      await svc.call('POST', `${C}/keboola.variables/configs`, { json: { name: 'Vars', configuration: { variables: [nested(LIMIT)] } } }),
      await svc.call('POST', '/v2/storage/events', { json: { message: 'm', component: 'keboola.ex-db', params: nested(LIMIT) } }),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ error: TOO_DEEP, code: 'storage.badRequest', status: 'error' });
    }
    expect((await svc.call('GET', `${C}/keboola.ex-db/configs`)).json.length).toBe(configs);
    expect((await svc.call('GET', `${C}/keboola.ex-db/configs/base/rows`)).json.length).toBe(rows);
    const base = (await svc.call('GET', `${C}/keboola.ex-db/configs/base`)).json;
    expect(base).toMatchObject({ version: 1, configuration: {}, state: {} });
    expect((await svc.call('GET', `${C}/keboola.variables/configs`)).json).toEqual([]);
  });

  it('refuses a deeper JSON string in a form field, as the configuration\'s format error', async () => {
    for (const field of ['configuration', 'state'] as const) {
      const res = await svc.call('PUT', `${C}/keboola.ex-db/configs/base`, form({ [field]: JSON.stringify(nested(LIMIT + 1)) }));
      expect(res.status).toBe(400);
      const what = field === 'configuration' ? 'Configuration' : 'State';
      expect(res.json).toMatchObject({
        code: `validation.invalid${what}Format`,
        error: `${what} is not a valid JSON object: it is nested deeper than ${LIMIT} levels, the limit of this server`,
      });
    }
    // At the limit: taken, and answered as stored.
    const ok = await svc.call('PUT', `${C}/keboola.ex-db/configs/base`, form({ configuration: JSON.stringify(nested(LIMIT)) }));
    expect(ok.status).toBe(200);
    expect(ok.json.configuration).toEqual(nested(LIMIT));
  });

  it('takes a JSON body nested exactly to the limit', async () => {
    // The body's own object is the first level.
    const res = await svc.call('POST', `${C}/keboola.ex-db/configs`, { json: { name: 'At the limit', configurationId: 'at-limit', configuration: nested(LIMIT - 1) } });
    expect(res.status).toBe(201);
    expect((await svc.call('GET', `${C}/keboola.ex-db/configs/at-limit`)).json.configuration).toEqual(nested(LIMIT - 1));
  });

  it('refuses a job with deeper configData in the queue envelope, creating no job', async () => {
    const before = (await svc.call('GET', '/search/jobs')).json.length;
    const res = await svc.call('POST', '/jobs', { json: { component: 'sluice.echo', mode: 'run', configData: { parameters: nested(LIMIT) } } });
    expect(res.status).toBe(400);
    expect(res.json).toMatchObject({ error: TOO_DEEP, code: 400, status: 'error' });
    expect((await svc.call('GET', '/search/jobs')).json.length).toBe(before);
  });

  it('refuses deeper Stream API bodies (sources, sinks, settings) in the Stream envelope, whatever the content type', async () => {
    const sinkBody = { name: 'Deep', type: 'table', table: { type: 'keboola', tableId: 'in.c-depth.deep', mapping: { columns: [{ type: 'body', name: 'body' }] } }, extra: nested(LIMIT) };
    const refusals = [
      await svc.call('POST', `${B()}/sources`, { json: { name: 'Deep', type: 'http', description: nested(LIMIT) } }),
      // curl -d sends JSON as a form; fetch sends a string as text/plain.
      await svc.call('POST', `${B()}/sources`, { body: JSON.stringify({ name: 'Deep', type: 'http', x: nested(LIMIT) }), contentType: 'application/x-www-form-urlencoded' }),
      await svc.call('POST', `${B()}/sources`, { body: JSON.stringify({ name: 'Deep', type: 'http', x: nested(LIMIT) }), contentType: 'text/plain' }),
      await svc.call('POST', `${B()}/sources/shop/sinks`, { json: sinkBody }),
      await svc.call('PATCH', `${B()}/sources/shop/sinks/raw`, { json: { name: 'Renamed', table: { mapping: { columns: [{ type: 'body', name: 'body', x: nested(LIMIT) }] } } } }),
      await svc.call('PATCH', `${B()}/sources/shop/sinks/raw/settings`, { json: { settings: [{ key: 'storage.level.target.import.trigger.count', value: nested(LIMIT) }] } }),
    ];
    for (const res of refusals) {
      expect(res.status).toBe(400);
      expect(res.json).toEqual({ statusCode: 400, error: 'stream.api.badRequest', message: TOO_DEEP });
    }
    expect((await svc.call('GET', `${B()}/sources`)).json.sources.map((s: { sourceId: string }) => s.sourceId)).toEqual(['shop']);
    const sinks = (await svc.call('GET', `${B()}/sources/shop/sinks`)).json.sinks;
    expect(sinks.map((s: { sinkId: string; name: string }) => [s.sinkId, s.name])).toEqual([['raw', 'Raw']]);
  });

  it('refuses a body nested 100 000 deep at once, and goes on answering', async () => {
    const started = Date.now();
    const res = await svc.call('POST', `${C}/keboola.ex-db/configs`, { body: `{"name":"x","configuration":${nestedText(100_000)}}` });
    expect(res.status).toBe(400);
    expect(res.json.error).toBe(TOO_DEEP);
    expect(Date.now() - started).toBeLessThan(5_000);
    expect((await svc.call('GET', `${C}/keboola.ex-db/configs/base`)).status).toBe(200);
  });
});
