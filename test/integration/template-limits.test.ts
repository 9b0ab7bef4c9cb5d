/**
 * Issue 21, item 1, against the real process (`node dist/main.js serve`, built by
 * `npm run build`): a V8 fatal there ends the process and every connection with it.
 *
 * - The issue's repro: a sink whose template is
 *   `std.join(",", ["x" for i in std.range(1, Body("n"))])`. `{"n":3}` maps; `{"n":1000000000}`
 *   is acknowledged, fails its record in that sink's mapping failures (the render worker's limit,
 *   naming the server's flag), and the server keeps answering and mapping.
 * - The test endpoint evaluates the same templates in the API process under the same limits:
 *   the same event answers 422 at once; the issue's std.foldl fails at once on the array length,
 *   and a long std.foldl within about its time budget.
 * - The flags (here their SLUICE_* variables) set the limits of both threads.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildService, sleep, tail } from '../helpers/child-service.js';

const FAST_ENV = { SLUICE_CHECK_INTERVAL: '100ms', SLUICE_UPLOAD_MIN_INTERVAL: '300ms', SLUICE_IMPORT_MIN_INTERVAL: '500ms' };
const JOIN = 'std.join(",", ["x" for i in std.range(1, Body("n"))])';
const FOLD = 'std.foldl(function(a, b) a + b, std.range(0, Body("n")), 0)';
const B = '/v1/branches/default';

const template = (name: string, content: string) => ({ type: 'template', name, template: { language: 'jsonnet', content } });

const services: ChildService[] = [];
const dirs: string[] = [];

async function service(env: Record<string, string> = {}): Promise<ChildService> {
  const dataDir = mkdtempSync(join(tmpdir(), 'sluice-template-limits-'));
  dirs.push(dataDir);
  const svc = new ChildService({ dataDir, env: { ...FAST_ENV, ...env } });
  services.push(svc);
  await svc.start();
  return svc;
}

async function until<T>(what: string, svc: ChildService, check: () => Promise<T | undefined>, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`${what}: not within ${timeoutMs} ms; ${tail(svc.output())}`);
    await sleep(100);
  }
}

/** POST .../sources/{id}/test with a JSON body: the answer and how long it took. */
async function test(svc: ChildService, sourceId: string, body: unknown): Promise<{ status: number; json: any; ms: number }> {
  const started = Date.now();
  const res = await svc.call('POST', `${B}/sources/${sourceId}/test`, body);
  return { status: res.status, json: res.json, ms: Date.now() - started };
}

const failures = async (svc: ChildService, sourceId: string, sinkId: string) => (await svc.call('GET', `${B}/sources/${sourceId}/sinks/${sinkId}/failures`)).json;
const written = async (svc: ChildService, sourceId: string, sinkId: string) => (await svc.sinkStatistics(sourceId, sinkId)).total?.recordsCount ?? 0;

afterAll(async () => {
  for (const svc of services) await svc.dispose();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
}, 30_000);

describe('a hostile template in a running server, with the default limits', () => {
  let svc: ChildService;
  let path: string;

  beforeAll(async () => {
    svc = await service();
    path = await svc.createSource('hostile');
    await svc.createSink('hostile', 'joined', 'in.c-hostile.joined', [template('x', JOIN)]);
    await svc.createSink('hostile', 'raw', 'in.c-hostile.raw', [{ type: 'body', name: 'body' }]);
    await svc.createSource('folds');
    await svc.createSink('folds', 'sum', 'in.c-folds.sum', [template('sum', FOLD)]);
  }, 60_000);

  it("the issue's event is acknowledged, fails its record as that sink's mapping failure, and the server goes on", async () => {
    for (const body of ['{"n":3}', '{"n":1000000000}', '{"n":2}']) {
      const res = await svc.send(path, body);
      expect(res, body).toMatchObject({ answered: true, status: 200, text: 'OK' });
    }
    const listed = await until('the mapping failure', svc, async () => {
      const f = await failures(svc, 'hostile', 'joined');
      return f.count === 1 ? f : undefined;
    });
    expect(listed.failures[0].reason).toBe(
      'Invalid value for column "x": array length 1000000000 exceeds the limit of 10000000 elements (--template-max-array-length).',
    );
    expect(JSON.parse(listed.failures[0].record.body)).toEqual({ n: 1000000000 });
    // The records around it are mapped by both sinks; the neighbour took all three.
    await until('the other records written', svc, async () =>
      (await written(svc, 'hostile', 'joined')) === 2 && (await written(svc, 'hostile', 'raw')) === 3 ? true : undefined,
    );
    expect(svc.running).toBe(true);
    expect(await svc.healthy()).toBe(true);
    expect(svc.starts).toBe(1);
    expect(svc.output()).not.toMatch(/fatal|out of memory/i);
  });

  it('the test endpoint evaluates the same template under the same limits in the API process', async () => {
    const ok = await test(svc, 'hostile', { n: 3 });
    expect(ok.status).toBe(200);
    expect(ok.json.tables.find((t: any) => t.sinkId === 'joined').rows[0].columns).toEqual([{ name: 'x', value: '"x,x,x"' }]);
    const hostile = await test(svc, 'hostile', { n: 1000000000 });
    expect(hostile.status).toBe(422);
    expect(hostile.json.message).toBe('Invalid value for column "x": array length 1000000000 exceeds the limit of 10000000 elements (--template-max-array-length).');
    expect(hostile.ms).toBeLessThan(2000);
    expect(await svc.healthy()).toBe(true);
  });

  it("the issue's std.foldl fails at once on the array length; a long one within about its time budget", async () => {
    expect((await test(svc, 'folds', { n: 10 })).json.tables[0].rows[0].columns).toEqual([{ name: 'sum', value: '55' }]);
    const issue = await test(svc, 'folds', { n: 3e7 });
    expect(issue.status).toBe(422);
    expect(issue.json.message).toBe('Invalid value for column "sum": array length 30000001 exceeds the limit of 10000000 elements (--template-max-array-length).');
    // Was 1.2 s of work (and 3.5 GB) per record before the limits.
    expect(issue.ms).toBeLessThan(1000);
    const long = await test(svc, 'folds', { n: 9e6 });
    expect(long.status).toBe(422);
    expect(long.json.message).toBe('Invalid value for column "sum": evaluation exceeded its time budget of 100 ms (--template-timeout).');
    // The budget plus building the range's 9 million elements, on a loaded machine.
    expect(long.ms).toBeLessThan(3000);
    expect(svc.running).toBe(true);
  });
});

describe('the template limits set by the server configuration', () => {
  it('hold in the render worker and in the API process alike', async () => {
    const svc = await service({ SLUICE_TEMPLATE_MAX_ARRAY_LENGTH: '5', SLUICE_TEMPLATE_TIMEOUT: '2s' });
    const path = await svc.createSource('small');
    await svc.createSink('small', 'joined', 'in.c-small.joined', [template('x', JOIN)]);
    expect((await test(svc, 'small', { n: 5 })).json.tables[0].rows[0].columns).toEqual([{ name: 'x', value: '"x,x,x,x,x"' }]);
    const refused = await test(svc, 'small', { n: 6 });
    expect(refused.status).toBe(422);
    expect(refused.json.message).toBe('Invalid value for column "x": array length 6 exceeds the limit of 5 elements (--template-max-array-length).');
    expect(await svc.send(path, '{"n":6}')).toMatchObject({ answered: true, status: 200 });
    const listed = await until('the mapping failure', svc, async () => {
      const f = await failures(svc, 'small', 'joined');
      return f.count === 1 ? f : undefined;
    });
    expect(listed.failures[0].reason).toBe('Invalid value for column "x": array length 6 exceeds the limit of 5 elements (--template-max-array-length).');
  });
});
