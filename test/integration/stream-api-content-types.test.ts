/**
 * Management calls of the Stream API (/v1) whose body is JSON but whose Content-Type does not
 * say so: `curl -d '{...}'` (application/x-www-form-urlencoded), no Content-Type at all, fetch's
 * text/plain. They are read as JSON (src/api/stream/body.ts says why); real form bodies stay
 * forms, other types are a 415 naming the expected type, and the Storage API keeps its forms.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;
const FORM = 'application/x-www-form-urlencoded';

/**
 * A request with exactly these headers (and the token): `contentType` null sends a body with no
 * Content-Type header at all (fetch adds none to a byte body).
 */
async function send(method: string, path: string, body: string, contentType: string | null): Promise<{ status: number; json: any }> {
  const headers: Record<string, string> = { 'X-StorageApi-Token': MASTER_TOKEN };
  if (contentType !== null) headers['Content-Type'] = contentType;
  const res = await fetch(svc.server.address + path, {
    method, headers, body: contentType === null ? new TextEncoder().encode(body) : body,
  });
  const text = await res.text();
  return { status: res.status, json: text === '' ? undefined : JSON.parse(text) };
}

/** Sends, expects the task's 202 and waits for it to finish. */
async function task(method: string, path: string, body: string, contentType: string | null): Promise<any> {
  const res = await send(method, path, body, contentType);
  expect({ status: res.status, body: res.json }).toMatchObject({ status: 202 });
  return svc.waitTask(res.json.url);
}

beforeAll(async () => {
  svc = await TestService.start();
});
afterAll(async () => svc?.close());

describe('Stream API bodies whatever their Content-Type says', () => {
  it('reads curl -d JSON (form encoding) as JSON: create, update, settings', async () => {
    const created = await task('POST', `${B()}/sources`, '{"name":"Curl Shop","type":"http","description":"a+b & c=d"}', FORM);
    expect(created).toMatchObject({ status: 'success', outputs: { sourceId: 'curl-shop' } });
    // "+", "&" and "=" inside the JSON stay what they are (no form decoding).
    expect((await svc.call('GET', `${B()}/sources/curl-shop`)).json).toMatchObject({ name: 'Curl Shop', description: 'a+b & c=d' });

    const updated = await task('PATCH', `${B()}/sources/curl-shop`, '  {"description":"patched","changeDescription":"by curl"}', `${FORM}; charset=utf-8`);
    expect(updated.status).toBe('success');
    expect((await svc.call('GET', `${B()}/sources/curl-shop`)).json).toMatchObject({ description: 'patched', version: { description: 'by curl' } });

    const settings = await task('PATCH', `${B()}/sources/curl-shop/settings`,
      '{"settings":[{"key":"storage.level.target.import.trigger.count","value":100}]}', FORM);
    expect(settings.status).toBe('success');
    const shown = (await svc.call('GET', `${B()}/sources/curl-shop/settings`)).json.settings;
    expect(shown.find((s: any) => s.key === 'storage.level.target.import.trigger.count')).toMatchObject({ value: 100 });
  });

  it('reads a body with no Content-Type, or text/plain, as JSON', async () => {
    await task('POST', `${B()}/sources`, '{"name":"No Type","type":"http"}', null);
    const sink = await task('POST', `${B()}/sources/no-type/sinks`,
      JSON.stringify({ sinkId: 'rows', name: 'rows', type: 'table', table: { type: 'keboola', tableId: 'in.c-no-type.rows', mapping: { columns: [{ type: 'body', name: 'body' }] } } }), null);
    expect(sink).toMatchObject({ status: 'success', outputs: { sinkId: 'rows' } });
    // fetch's default for a string body.
    const text = await task('POST', `${B()}/sources`, '{"name":"Fetch Text","type":"http"}', 'text/plain;charset=UTF-8');
    expect(text).toMatchObject({ status: 'success', outputs: { sourceId: 'fetch-text' } });
  });

  it('keeps real form bodies as forms, and says what is wrong with a broken JSON body', async () => {
    const form = await task('POST', `${B()}/sources`, 'name=Form+Source&type=http', FORM);
    expect(form).toMatchObject({ status: 'success', outputs: { sourceId: 'form-source' } });

    const broken = await send('POST', `${B()}/sources`, '{"name": "Broken", ', FORM);
    expect(broken.status).toBe(400);
    expect(broken.json).toMatchObject({ statusCode: 400, error: 'stream.api.badRequest', message: expect.stringMatching(/^Invalid JSON body/) });
    const brokenNoType = await send('POST', `${B()}/sources`, '{"name": ', null);
    expect(brokenNoType.json).toMatchObject({ statusCode: 400, error: 'stream.api.badRequest' });
  });

  it('answers another type with a 415 in the Stream envelope that names application/json', async () => {
    for (const type of ['application/xml', 'not a media type']) {
      const res = await send('POST', `${B()}/sources`, '{"name":"Xml","type":"http"}', type);
      expect(res.status).toBe(415);
      expect(res.json).toEqual({
        statusCode: 415,
        error: 'stream.api.unsupportedMediaType',
        message: `Unsupported content type "${type}": send the body as JSON, with Content-Type: application/json.`,
      });
    }
  });

  it('leaves the Storage API forms alone', async () => {
    const config = await send('POST', '/v2/storage/components/keboola.ex-db/configs', 'name=From+a+form&description=d', FORM);
    expect(config.status).toBe(201);
    expect(config.json).toMatchObject({ name: 'From a form', description: 'd' });
    const token = await send('POST', '/v2/storage/tokens', 'description=form+token&canManageBuckets=1', FORM);
    expect(token.status).toBe(201);
    expect(token.json).toMatchObject({ description: 'form token' });
  });

  it('reads curl -d JSON as JSON on the Storage API and the queue too', async () => {
    const config = await send('POST', '/v2/storage/components/sluice.echo/configs', JSON.stringify({ name: 'From curl -d', configuration: { parameters: { a: 1 } } }), FORM);
    expect(config.status).toBe(201);
    expect(config.json).toMatchObject({ name: 'From curl -d', configuration: { parameters: { a: 1 } } });
    const job = await send('POST', '/jobs', JSON.stringify({ component: 'sluice.echo', config: config.json.id, mode: 'run' }), FORM);
    expect(job.status).toBe(201);
    expect(job.json).toMatchObject({ component: 'sluice.echo', config: config.json.id });
  });
});
