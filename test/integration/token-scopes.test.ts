/**
 * Scopes that hold (issue 21, item 3), over real HTTP: each rule with a limited token that is
 * refused or filtered and a token with the right that is served. Sources' secrets, raw records
 * (records, mapping failures, the test endpoint) and the senders' credential headers in them;
 * jobs and their events by component; a job's output written with its token's rights; events
 * posted through the API attributed to their token and kept out of other jobs' logs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { IMPORT_COUNT, UPLOAD_INTERVAL } from '../helpers/sink-settings.js';

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;
const FAST = ['--check-interval', '100ms', '--upload-min-interval', '200ms', '--import-min-interval', '300ms', '--job-workers', '2'];

interface Created { id: string; token: string }

async function createToken(spec: Record<string, unknown>): Promise<Created> {
  const res = await svc.call('POST', '/v2/storage/tokens', { json: spec });
  expect(res.status).toBe(201);
  return { id: String(res.json.id), token: res.json.token };
}

async function createSink(sourceId: string, sinkId: string, tableId: string, columns: unknown[]) {
  const task = await svc.task('POST', `${B()}/sources/${sourceId}/sinks`, {
    json: { sinkId, name: sinkId, type: 'table', table: { type: 'keboola', tableId, mapping: { columns } } },
  });
  expect(task.status).toBe('success');
}

async function runJob(body: unknown, token = MASTER_TOKEN) {
  const res = await svc.call('POST', '/jobs', { token, json: body });
  expect(res.status).toBe(201);
  return res.json;
}

async function waitJob(id: string): Promise<any> {
  return svc.until(`job ${id}`, async () => {
    const res = await svc.call('GET', `/jobs/${id}`);
    return res.json.isFinished ? res.json : undefined;
  }, 30_000);
}

async function waitStatus(id: string, status: string): Promise<void> {
  await svc.until(`job ${id} ${status}`, async () => ((await svc.call('GET', `/jobs/${id}`)).json.status === status ? true : undefined));
}

const secretOf = (url: string) => url.split('/').pop()!;

let none: Created;
let shopReader: Created;
let shopWriter: Created;
let manager: Created;

beforeAll(async () => {
  svc = await TestService.start({ args: FAST });
  none = await createToken({ description: 'nothing' });
  shopReader = await createToken({ description: 'shop reader', bucketPermissions: { 'in.c-shop': 'read' } });
  shopWriter = await createToken({ description: 'shop writer', bucketPermissions: { 'in.c-shop': 'write' } });
  manager = await createToken({ description: 'bucket manager', canManageBuckets: true });

  for (const [name, type] of [['Shop', 'http'], ['Mixed', 'http'], ['Otel', 'otlp'], ['Empty', 'http']]) {
    expect((await svc.task('POST', `${B()}/sources`, { json: { name, type } })).status).toBe('success');
  }
  await createSink('shop', 'raw', 'in.c-shop.raw', [{ type: 'body', name: 'body' }, { type: 'headers', name: 'headers' }]);
  await svc.task('PATCH', `${B()}/sources/shop/sinks/raw/settings`, {
    json: { settings: [{ key: UPLOAD_INTERVAL, value: '1s' }, { key: IMPORT_COUNT, value: 1 }] },
  });
  await createSink('shop', 'strict', 'in.c-shop.strict', [{ type: 'path', name: 'user', path: 'user.id', rawString: true }]);
  await createSink('mixed', 'a', 'in.c-shop.mixed', [{ type: 'body', name: 'body' }]);
  await createSink('mixed', 'b', 'in.c-other.mixed', [{ type: 'body', name: 'body' }]);
  await createSink('otel', 'logs', 'in.c-shop.logs', [{ type: 'body', name: 'body' }]);
}, 60_000);

afterAll(async () => {
  await svc?.close();
});

describe('a source\'s ingestion secret', () => {
  it('is shown only to tokens that may write to every bucket its sinks fill, in every answer that embeds the source', async () => {
    const shop = (await svc.call('GET', `${B()}/sources/shop`)).json;
    const otel = (await svc.call('GET', `${B()}/sources/otel`)).json;
    const secrets = [secretOf(shop.http.url), otel.otlp.secret];
    expect(secrets.every((s) => /^[0-9a-zA-Z]{48}$/.test(s))).toBe(true);

    for (const limited of [none, shopReader]) {
      const one = await svc.call('GET', `${B()}/sources/shop`, { token: limited.token });
      expect(one.status).toBe(200);
      expect(one.json).toMatchObject({ sourceId: 'shop', type: 'http', http: {} });
      expect(one.json.http.url).toBeUndefined();
      const otlp = (await svc.call('GET', `${B()}/sources/otel`, { token: limited.token })).json;
      expect(otlp.otlp).toEqual({ baseUrl: otel.otlp.baseUrl });
      // Nowhere else either: the lists and the console's aggregation.
      for (const path of [`${B()}/sources`, `${B()}/aggregation/sources`, `${B()}/sources/deleted`]) {
        const res = await svc.call('GET', path, { token: limited.token });
        expect(res.status).toBe(200);
        for (const secret of secrets) expect(res.text).not.toContain(secret);
      }
    }

    // Write on the one bucket of shop's and otel's sinks: both secrets; mixed also fills in.c-other.
    expect((await svc.call('GET', `${B()}/sources/shop`, { token: shopWriter.token })).json.http.url).toBe(shop.http.url);
    expect((await svc.call('GET', `${B()}/sources/otel`, { token: shopWriter.token })).json.otlp).toEqual(otel.otlp);
    expect((await svc.call('GET', `${B()}/sources/mixed`, { token: shopWriter.token })).json.http).toEqual({});
    const listed = (await svc.call('GET', `${B()}/sources`, { token: shopWriter.token })).json.sources;
    expect(listed.find((s: any) => s.sourceId === 'shop').http.url).toBe(shop.http.url);
    expect(listed.find((s: any) => s.sourceId === 'mixed').http).toEqual({});
    // A source without sinks belongs to no bucket: only the tokens that see every bucket.
    expect((await svc.call('GET', `${B()}/sources/empty`, { token: shopWriter.token })).json.http).toEqual({});
    // A deleted source has no sinks left to judge by: the same.
    expect((await svc.task('POST', `${B()}/sources`, { json: { name: 'Gone', type: 'http' } })).status).toBe('success');
    await createSink('gone', 'raw', 'in.c-shop.gone', [{ type: 'body', name: 'body' }]);
    expect((await svc.task('DELETE', `${B()}/sources/gone`)).status).toBe('success');
    const deleted = await svc.call('GET', `${B()}/sources/deleted`, { token: shopWriter.token });
    expect(deleted.status).toBe(200);
    expect(deleted.json.sources.find((s: any) => s.sourceId === 'gone').http).toEqual({});
    expect((await svc.call('GET', `${B()}/sources/deleted`, { token: manager.token })).json.sources.find((s: any) => s.sourceId === 'gone').http.url).toMatch(/\/[0-9a-zA-Z]{48}$/);
    for (const token of [manager.token, MASTER_TOKEN]) {
      for (const id of ['mixed', 'empty']) {
        expect((await svc.call('GET', `${B()}/sources/${id}`, { token })).json.http.url).toMatch(/\/[0-9a-zA-Z]{48}$/);
      }
      const aggregated = (await svc.call('GET', `${B()}/aggregation/sources`, { token })).json.sources;
      expect(aggregated.find((s: any) => s.sourceId === 'shop').http.url).toBe(shop.http.url);
    }
  });
});

describe('raw records', () => {
  const credentials = { Authorization: 'Bearer sender-secret', Cookie: 'session=sender-cookie', 'Proxy-Authorization': 'Basic cHJveHk=' };

  it('need read on the buckets of all the source\'s sinks: records, mapping failures and the test endpoint', async () => {
    const path = new URL((await svc.call('GET', `${B()}/sources/shop`)).json.http.url).pathname;
    expect((await svc.call('POST', path, { token: null, body: '{"n":1}' })).status).toBe(200);
    await svc.until('the failure of strict', async () => {
      const res = await svc.call('GET', `${B()}/sources/shop/sinks/strict/failures`);
      return res.json.count > 0 ? true : undefined;
    });

    const routes: Array<[string, string, string | undefined]> = [
      ['GET', `${B()}/sources/shop/records`, undefined],
      ['GET', `${B()}/sources/shop/sinks/strict/failures`, undefined],
      ['GET', `${B()}/sources/shop/sinks/raw/failures`, undefined],
      // A template that would take the process down is never evaluated for a refused token.
      ['POST', `${B()}/sources/shop/test`, '{"user":{"id":"x"}}'],
    ];
    for (const [method, route, body] of routes) {
      const refused = await svc.call(method, route, { token: none.token, body });
      expect({ route, status: refused.status }).toEqual({ route, status: 403 });
      expect(refused.json).toMatchObject({
        statusCode: 403,
        error: 'stream.api.forbidden',
        message: expect.stringMatching(/^This token may not .* source "shop": that needs read permission on the buckets of all the source's sinks, and this token has no read permission on bucket "in\.c-shop"\.$/),
      });
      const served = await svc.call(method, route, { token: shopReader.token, body });
      expect({ route, status: served.status }).toEqual({ route, status: 200 });
    }
    // Read on one of two buckets is not enough.
    const mixed = await svc.call('GET', `${B()}/sources/mixed/records`, { token: shopReader.token });
    expect(mixed.status).toBe(403);
    expect(mixed.json.message).toContain('no read permission on bucket "in.c-other"');
    expect((await svc.call('GET', `${B()}/sources/mixed/records`, { token: manager.token })).status).toBe(200);
    // A source without sinks: only the tokens that see every bucket.
    expect((await svc.call('GET', `${B()}/sources/empty/records`, { token: shopReader.token })).json.message)
      .toBe('This token may not read the records of source "empty": that needs read permission on the buckets of all the source\'s sinks, and the source has no sinks, so only the master token or a token with canManageBuckets may.');
  });

  it('keep replay and reprocess to the master token, refused before anything else is looked at', async () => {
    for (const route of [`${B()}/sources/shop/sinks/strict/failures/reprocess`, `${B()}/sources/shop/sinks/nope/replay`]) {
      for (const token of [shopWriter.token, manager.token]) {
        const res = await svc.call('POST', route, { token, json: { since: '2020-01-01T00:00:00Z' } });
        expect(res.status).toBe(403);
        expect(res.json).toMatchObject({ error: 'stream.api.forbidden', message: 'Only admin token can do write operations on streams.' });
      }
    }
    const reprocessed = await svc.call('POST', `${B()}/sources/shop/sinks/strict/failures/reprocess`);
    expect(reprocessed.status).toBe(200);
    expect(reprocessed.json).toMatchObject({ reprocessed: 0 });
  });

  it('are answered with the senders\' credential headers masked; the mapping still writes them', async () => {
    const path = new URL((await svc.call('GET', `${B()}/sources/shop`)).json.http.url).pathname;
    expect((await svc.call('POST', path, { token: null, body: '{"n":2}', headers: { ...credentials, 'X-Order': '2' } })).status).toBe(200);

    const records = await svc.call('GET', `${B()}/sources/shop/records?limit=1`, { token: shopReader.token });
    expect(records.json.records[0].headers).toMatchObject({ Authorization: '*****', Cookie: '*****', 'Proxy-Authorization': '*****', 'X-Order': '2' });
    for (const value of Object.values(credentials)) expect(records.text).not.toContain(value);

    const failures = await svc.until('the second failure', async () => {
      const res = await svc.call('GET', `${B()}/sources/shop/sinks/strict/failures`, { token: shopReader.token });
      return res.json.failures.some((f: any) => f.record.body === '{"n":2}') ? res : undefined;
    });
    const failed = failures.json.failures.find((f: any) => f.record.body === '{"n":2}');
    expect(failed.record.headers).toMatchObject({ Authorization: '*****', Cookie: '*****', 'Proxy-Authorization': '*****', 'X-Order': '2' });
    for (const value of Object.values(credentials)) expect(failures.text).not.toContain(value);

    // What is stored and mapped is untouched: the headers column has the sender's values.
    const row = await svc.until('the row in in.c-shop.raw', async () => {
      const res = await svc.call('GET', '/v2/storage/tables/in.c-shop.raw/data-preview?limit=100');
      return res.status === 200 && res.text.includes('sender-secret') ? res.text : undefined;
    }, 30_000);
    expect(row).toContain('Bearer sender-secret');
    expect(row).toContain('session=sender-cookie');
  });
});

describe('jobs and their events', () => {
  let echoOnly: Created;
  let extractorOnly: Created;
  let echoJob: any;
  let extractorJob: any;

  beforeAll(async () => {
    echoOnly = await createToken({ description: 'echo only', componentAccess: ['sluice.echo'] });
    extractorOnly = await createToken({ description: 'extractor only', componentAccess: ['keboola.ex-generic-v2'] });
    echoJob = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { destination: 'in.c-jobs.echo', '#password': 'p4ss' } } })).id);
    expect(echoJob.status).toBe('success');
    // Fails at once (no API to call), which is all this needs: a job of another component.
    extractorJob = await waitJob((await runJob({ component: 'keboola.ex-generic-v2', configData: { parameters: {} } })).id);
    expect(extractorJob.isFinished).toBe(true);
  }, 60_000);

  it('are listed, shown and killed only for tokens with access to the job\'s component', async () => {
    const ids = async (token: string) => ((await svc.call('GET', '/search/jobs?limit=500', { token })).json as any[]).map((j) => j.id);
    expect(await ids(none.token)).toEqual([]);
    expect(await ids(shopWriter.token)).toEqual([]);
    expect(await ids(echoOnly.token)).toContain(echoJob.id);
    expect(await ids(echoOnly.token)).not.toContain(extractorJob.id);
    expect(await ids(extractorOnly.token)).toEqual(expect.arrayContaining([extractorJob.id]));
    expect(await ids(extractorOnly.token)).not.toContain(echoJob.id);
    expect(await ids(manager.token)).toEqual(expect.arrayContaining([echoJob.id, extractorJob.id]));
    const deprecated = await svc.call('GET', '/jobs', { token: none.token });
    expect(deprecated.json).toEqual([]);

    // Another component's job is answered as missing, with the same message as a job that is not.
    for (const [token, hidden] of [[none.token, echoJob.id], [extractorOnly.token, echoJob.id], [echoOnly.token, extractorJob.id]]) {
      const res = await svc.call('GET', `/jobs/${hidden}`, { token });
      expect(res.status).toBe(404);
      expect(res.json).toMatchObject({ error: `Job "${hidden}" not found`, code: 404, status: 'error' });
      expect(res.text).not.toContain('p4ss');
      expect((await svc.call('POST', `/jobs/${hidden}/kill`, { token })).status).toBe(404);
    }
    const shown = await svc.call('GET', `/jobs/${echoJob.id}`, { token: echoOnly.token });
    expect(shown.status).toBe(200);
    expect(shown.json.id).toBe(echoJob.id);
  });

  it('show their events only to tokens with access to the job\'s component', async () => {
    const events = async (query: string, token: string) => {
      const res = await svc.call('GET', `/v2/storage/events?${query.includes('limit=') ? query : `limit=10000&${query}`}`, { token });
      expect(res.status).toBe(200);
      return res.json as any[];
    };
    const echoLog = await events(`runId=${echoJob.runId}`, MASTER_TOKEN);
    expect(echoLog.map((e) => e.component)).toEqual(expect.arrayContaining(['job-runner', 'sluice.echo']));
    expect(await events(`runId=${echoJob.runId}`, none.token)).toEqual([]);
    expect(await events(`runId=${echoJob.runId}`, extractorOnly.token)).toEqual([]);
    expect((await events(`runId=${echoJob.runId}`, echoOnly.token)).map((e) => e.id)).toEqual(echoLog.map((e) => e.id));
    // Unfiltered, each sees its component's jobs' lines (the runner's included) and no others.
    const seenByEcho = await events('', echoOnly.token);
    expect(seenByEcho.map((e) => e.id)).toEqual(expect.arrayContaining(echoLog.map((e) => e.id)));
    expect(seenByEcho.some((e) => e.runId === extractorJob.runId)).toBe(false);
    const seenByExtractor = await events('', extractorOnly.token);
    expect(seenByExtractor.some((e) => e.runId === extractorJob.runId)).toBe(true);
    expect(seenByExtractor.some((e) => e.runId === echoJob.runId)).toBe(false);
    expect(await events('', none.token)).toEqual([]);
    // Paging counts only what the token sees: the newest events are the extractor job's.
    expect((await events('limit=1', echoOnly.token)).map((e) => e.id)).toEqual([echoLog[0].id]);

    const hidden = await svc.call('GET', `/v2/storage/events/${echoLog[0].id}`, { token: extractorOnly.token });
    expect(hidden.status).toBe(404);
    expect(hidden.json).toMatchObject({ code: 'notFound', status: 'error' });
    expect((await svc.call('GET', `/v2/storage/events/${echoLog[0].id}`, { token: echoOnly.token })).status).toBe(200);
  });

  it('keep configurations and variables to tokens with access to the component, also inside a job', async () => {
    const form = (fields: Record<string, string>) => ({ body: new URLSearchParams(fields).toString(), contentType: 'application/x-www-form-urlencoded' });
    const vars = await svc.call('POST', '/v2/storage/components/keboola.variables/configs', form({
      name: 'Secret values', configuration: JSON.stringify({ variables: [{ name: 'city', type: 'string' }] }),
    }));
    expect(vars.status).toBe(201);
    const row = await svc.call('POST', `/v2/storage/components/keboola.variables/configs/${vars.json.id}/rows`, form({
      name: 'Defaults', configuration: JSON.stringify({ values: [{ name: 'city', value: 'Atlantis' }] }),
    }));
    expect(row.status).toBe(201);
    expect((await svc.call('GET', `/v2/storage/components/keboola.variables/configs/${vars.json.id}`, { token: echoOnly.token })).status).toBe(403);

    // The echo token may write echo configurations, and point one at the variables: the job reads
    // them with its token, which has no access to keboola.variables.
    const config = await svc.call('POST', '/v2/storage/components/sluice.echo/configs', {
      token: echoOnly.token,
      ...form({ name: 'Reads variables', configuration: JSON.stringify({ variables_id: vars.json.id, variables_values_id: row.json.id, parameters: { city: '{{city}}' } }) }),
    });
    expect(config.status).toBe(201);
    const refused = await waitJob((await runJob({ component: 'sluice.echo', config: config.json.id }, echoOnly.token)).id);
    expect(refused.status).toBe('error');
    expect(refused.result.message).toBe('Variable configuration cannot be read: the token that created the job has no access to the component "keboola.variables".');
    expect(JSON.stringify(refused)).not.toContain('Atlantis');
    // The master token's job of the same configuration reads them.
    const served = await waitJob((await runJob({ component: 'sluice.echo', config: config.json.id })).id);
    expect(served.status).toBe('success');
    expect(served.result.variables).toEqual([{ name: 'city', value: 'Atlantis' }]);
  });
});

describe('a job\'s output tables', () => {
  let echoOnly: Created;
  let echoWriter: Created;

  beforeAll(async () => {
    echoOnly = await createToken({ description: 'echo only', componentAccess: ['sluice.echo'] });
    echoWriter = await createToken({ description: 'echo writer', componentAccess: ['sluice.echo'], bucketPermissions: { 'in.c-private': 'write' } });
    const master = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { destination: 'in.c-private.t', who: 'master' } } })).id);
    expect(master.status).toBe('success');
  }, 60_000);

  const preview = async () => (await svc.call('GET', '/v2/storage/tables/in.c-private.t/data-preview?limit=100')).text;

  it('are written with the rights of the token that created the job; without them the job fails and writes nothing', async () => {
    const replace = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { destination: 'in.c-private.t', who: 'forged' } } }, echoOnly.token)).id);
    expect(replace.status).toBe('error');
    expect(replace.result).toMatchObject({
      message: `Cannot load the output table "echo.csv" into "in.c-private.t": the token "echo only" (id ${echoOnly.id}) that created the job has no write permission on the bucket "in.c-private".`,
      error: { type: 'user' },
    });
    expect(await preview()).toContain('"who","master"');
    expect(await preview()).not.toContain('forged');

    const create = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { destination: 'in.c-brand-new.t' } } }, echoWriter.token)).id);
    expect(create.status).toBe('error');
    expect(create.result.message).toBe(`Cannot load the output table "echo.csv" into "in.c-brand-new.t": the bucket "in.c-brand-new" does not exist and the token "echo writer" (id ${echoWriter.id}) that created the job may not create buckets (that needs canManageBuckets).`);
    expect((await svc.call('GET', '/v2/storage/buckets/in.c-brand-new')).status).toBe(404);

    const allowed = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { destination: 'in.c-private.t', who: 'writer' } } }, echoWriter.token)).id);
    expect(allowed.status).toBe('success');
    expect(allowed.result.output.tables).toEqual([{ id: 'in.c-private.t', name: 'echo', columns: ['name', 'value'], rows: 2 }]);
    expect(await preview()).toContain('"who","writer"');

    const managed = await createToken({ description: 'echo manager', componentAccess: ['sluice.echo'], canManageBuckets: true });
    const made = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { destination: 'in.c-brand-new.t' } } }, managed.token)).id);
    expect(made.status).toBe('success');
    expect((await svc.call('GET', '/v2/storage/buckets/in.c-brand-new')).status).toBe(200);
  });

  it('fail the job whose token was deleted before it ran', async () => {
    const temporary = await createToken({ description: 'temporary', componentAccess: ['sluice.echo'], canManageBuckets: true });
    // Both workers busy, so the temporary token's job waits.
    const sleepers = [await runJob({ component: 'sluice.echo', configData: { parameters: { sleepSeconds: 60 } } }), await runJob({ component: 'sluice.echo', configData: { parameters: { sleepSeconds: 60 } } })];
    for (const s of sleepers) await waitStatus(s.id, 'processing');
    const waiting = await runJob({ component: 'sluice.echo', configData: { parameters: { destination: 'in.c-private.t', who: 'temporary' } } }, temporary.token);
    expect((await svc.call('DELETE', `/v2/storage/tokens/${temporary.id}`)).status).toBe(204);
    for (const s of sleepers) expect((await svc.call('POST', `/jobs/${s.id}/kill`)).status).toBe(202);
    const ended = await waitJob(waiting.id);
    expect(ended.status).toBe('error');
    expect(ended.result.message).toBe(`The token "temporary" (id ${temporary.id}) that created the job has been deleted or has expired: the job runs with its rights, so it cannot run.`);
    expect(await preview()).not.toContain('temporary');
  });
});

describe('events posted through the API', () => {
  let echoOnly: Created;
  let echoJob: any;
  let extractorJob: any;

  beforeAll(async () => {
    echoOnly = await createToken({ description: 'echo poster', componentAccess: ['sluice.echo'] });
    echoJob = await waitJob((await runJob({ component: 'sluice.echo', configData: { parameters: { a: 1 } } })).id);
    extractorJob = await waitJob((await runJob({ component: 'keboola.ex-generic-v2', configData: { parameters: {} } })).id);
  }, 60_000);

  const post = (token: string, json: Record<string, unknown>) => svc.call('POST', '/v2/storage/events', { token, json });
  const find = async (q: string) => (await svc.call('GET', `/v2/storage/events?q=${encodeURIComponent(q)}`)).json as any[];

  it('are attributed to the posting token, and join only the log of a job the token may see', async () => {
    const posted = await post(echoOnly.token, {
      component: 'sluice.echo', message: 'note from the echo token', runId: echoJob.runId,
      // Claims the server owns are ignored.
      token: { id: '1', name: 'Master Token' }, id: '1', created: '2000-01-01',
    });
    expect(posted.status).toBe(201);
    const log = (await svc.call('GET', `/v2/storage/events?runId=${echoJob.runId}`, { token: echoOnly.token })).json as any[];
    const note = log.find((e) => e.message === 'note from the echo token');
    expect(note).toMatchObject({ id: posted.json.id, component: 'sluice.echo', runId: echoJob.runId, token: { id: echoOnly.id, name: 'echo poster' } });
    expect(note.created).not.toContain('2000');
    // The job's own lines carry no token: a posted line cannot pass for one of them.
    expect(log.filter((e) => e.id !== note.id).every((e) => e.token === undefined)).toBe(true);

    const refusals: Array<[string, Record<string, unknown>, string]> = [
      [none.token, { component: 'sluice.echo', message: 'forged 1' }, "You don't have access to the resource."],
      [echoOnly.token, { component: 'keboola.ex-generic-v2', message: 'forged 2' }, "You don't have access to the resource."],
      [MASTER_TOKEN, { component: 'job-runner', message: 'forged 3', runId: echoJob.runId },
        'The component "job-runner" is reserved for the job runner\'s own lines; post the event as another component.'],
      [echoOnly.token, { component: 'sluice.echo', message: 'forged 4', runId: extractorJob.runId },
        `The run "${extractorJob.runId}" is not a job this token may see: an event can only join the log of such a job.`],
      // A run id that is no job yet could name a job still to come.
      [echoOnly.token, { component: 'sluice.echo', message: 'forged 5', runId: '999999999' },
        'The run "999999999" is not a job this token may see: an event can only join the log of such a job.'],
    ];
    for (const [token, body, message] of refusals) {
      const res = await post(token, body);
      expect({ body, status: res.status }).toEqual({ body, status: 403 });
      expect(res.json).toMatchObject({ code: 'accessDenied', error: message, status: 'error' });
    }
    expect(await find('forged')).toEqual([]);

    // The master token posts as any other component, attributed to it.
    const master = await post(MASTER_TOKEN, { component: 'sluice.echo', message: 'note from the master', runId: echoJob.runId });
    expect(master.status).toBe(201);
    expect((await find('note from the master'))[0].token).toEqual({ id: '1', name: 'Master Token' });
    // As in the reference, the master token may also name a run that is no job (an outside run's id).
    const outside = await post(MASTER_TOKEN, { component: 'sluice.echo', message: 'an outside run', runId: '999999999' });
    expect(outside.status).toBe(201);
  });
});
