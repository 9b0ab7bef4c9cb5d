/**
 * `sluice sources|sinks|tables list|get` and `sluice status` as users run them: the built CLI
 * (`node dist/main.js`) as a child process against a real server on a loopback port.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { resolve } from 'node:path';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';

const MAIN = resolve('dist/main.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let svc: TestService;
const B = () => `/v1/branches/${svc.branchId}`;

function sluice(args: string[], stdin?: string): Promise<Run> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', SLUICE_URL: svc.server.address, SLUICE_TOKEN: MASTER_TOKEN };
  const child = spawn(process.execPath, [MAIN, ...args], { env, stdio: [stdin === undefined ? 'ignore' : 'pipe', 'pipe', 'pipe'] });
  if (stdin !== undefined) child.stdin!.end(stdin);
  let stdout = '';
  let stderr = '';
  child.stdout!.on('data', (d) => (stdout += d));
  child.stderr!.on('data', (d) => (stderr += d));
  return new Promise((res, rej) => {
    child.on('error', rej);
    child.on('close', (code) => res({ code, stdout, stderr }));
  });
}

beforeAll(async () => {
  svc = await TestService.start({ args: ['--check-interval', '100ms'] });
  await svc.task('POST', `${B()}/sources`, { json: { name: 'Shop', type: 'http' } });
  await svc.task('POST', `${B()}/sources`, { json: { name: 'Quiet', type: 'http' } });
  await svc.task('POST', `${B()}/sources/shop/sinks`, {
    json: { sinkId: 'orders', name: 'Orders', type: 'table', table: { type: 'keboola', tableId: 'in.c-shop.orders', mapping: { columns: [{ type: 'path', name: 'id', path: 'id' }, { type: 'body', name: 'body' }] } } },
  });
});
afterAll(async () => svc?.close());

describe('sluice sources, sinks and tables', () => {
  it('lists them as aligned tables, and as the API\'s objects with --format json', async () => {
    const sources = await sluice(['sources', 'list']);
    expect(sources).toMatchObject({ code: 0, stderr: '' });
    expect(sources.stdout.split('\n').slice(0, 4)).toEqual([
      'source | type | name  | state   | sinks',
      '-------+------+-------+---------+-------',
      'quiet  | http | Quiet | enabled |',
      'shop   | http | Shop  | enabled | orders',
    ]);
    expect(sources.stdout).toContain('2 sources\n');
    const sinks = await sluice(['sinks', 'list', 'shop']);
    expect(sinks.stdout).toMatch(/^orders \| Orders \| in\.c-shop\.orders \| 2 +\| enabled$/m);
    const tables = await sluice(['tables', 'list', '--format', 'json']);
    expect(tables.code).toBe(0);
    expect((JSON.parse(tables.stdout) as { id: string }[]).map((t) => t.id)).toEqual(['in.c-shop.orders']);
    const json = JSON.parse((await sluice(['sources', 'list', '--format', 'json'])).stdout) as { sourceId: string }[];
    expect(json.map((s) => s.sourceId).sort()).toEqual(['quiet', 'shop']);
  });

  it('gets one as JSON, and says what is wrong in one line with exit 1 (not found) or 2 (usage)', async () => {
    const sink = await sluice(['sinks', 'get', 'shop', 'orders']);
    expect(JSON.parse(sink.stdout)).toMatchObject({ sinkId: 'orders', table: { tableId: 'in.c-shop.orders' } });
    expect((JSON.parse((await sluice(['tables', 'get', 'in.c-shop.orders'])).stdout) as { id: string }).id).toBe('in.c-shop.orders');
    expect(await sluice(['sources', 'get', 'nope'])).toEqual({ code: 1, stdout: '', stderr: 'sluice: Source "nope" not found in the branch. (stream.api.sourceNotFound, HTTP 404)\n' });
    expect(await sluice(['sinks', 'list'])).toMatchObject({ code: 2, stderr: 'sluice: give the source id (see "sluice sinks --help")\n' });
    expect(await sluice(['sources', 'list', '--format', 'yaml'])).toMatchObject({ code: 2 });
    expect((await sluice(['sources', 'lsit'])).stderr).toContain('unknown command "lsit"');
  });
});

describe('sluice status', () => {
  it('shows readiness, each sink with its table, lag and failures; exits 1 while a sink has failures', async () => {
    const clean = await sluice(['status']);
    expect(clean.code).toBe(0);
    expect(clean.stdout.split('\n')[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+: ready, version \d+\.\d+\.\d+$/);
    expect(clean.stdout).toMatch(/^shop +\| http \| enabled \| orders \| in\.c-shop\.orders \| enabled +\| +0 \| +0$/m);
    expect(clean.stdout).toMatch(/^quiet +\| http \| enabled \| +\|/m);
    expect(clean.stdout).toContain('2 sources, 1 sink\n');

    // A record the sink cannot map (no "id"): a failure, and the exit code says so.
    expect((await svc.call('POST', await svc.ingestPath('shop'), { token: null, json: { other: 1 } })).status).toBe(200);
    await svc.until('the mapping failure', async () => ((await svc.call('GET', `${B()}/sources/shop/sinks/orders/failures`)).json.count > 0 ? true : undefined));
    const failing = await sluice(['status']);
    expect(failing.code).toBe(1);
    expect(failing.stdout).toMatch(/^shop +\| http \| enabled \| orders \| in\.c-shop\.orders \| enabled +\| +0 \| +1$/m);
    expect(failing.stdout).toContain('1 with mapping failures');
  });
});

/** A Stream API write as curl sends it: the answer's text, not waited for. */
async function write(method: 'POST' | 'PATCH', path: string, body?: unknown): Promise<string> {
  const res = await fetch(`${svc.server.address}${path}`, {
    method,
    headers: { 'X-StorageApi-Token': MASTER_TOKEN, ...(body === undefined ? {} : { 'Content-Type': 'application/json' }) },
    body: body === undefined ? undefined : JSON.stringify(body),
  });
  return res.text();
}

describe('sluice wait', () => {
  it('waits for the task a write answered, so that the next call sees what it made', async () => {
    const answer = await write('POST', `${B()}/sources`, { sourceId: 'waited', name: 'Waited', type: 'http' });
    expect(JSON.parse(answer)).toMatchObject({ type: 'api.create.source', isFinished: false });
    const run = await sluice(['wait'], answer);
    expect(run).toEqual({ code: 0, stdout: 'api.create.source: success\n', stderr: '' });
    const sink = await write('POST', `${B()}/sources/waited/sinks`, { sinkId: 'all', name: 'All', type: 'table', table: { type: 'keboola', tableId: 'in.c-waited.all', mapping: { columns: [{ type: 'body', name: 'body' }] } } });
    expect((await sluice(['wait'], sink)).stdout).toBe('api.create.sink: success\n');
    // Right after: the sink is there (a settings change on a sink still being created is a 404).
    const settings = await write('PATCH', `${B()}/sources/waited/sinks/all/settings`, { settings: [{ key: 'storage.level.target.import.trigger.interval', value: '30s' }] });
    expect((await sluice(['wait'], settings)).stdout).toBe('api.update.sinkSettings: success\n');
  });

  it('waits for every task of an answer that holds several (an OTLP source\'s default sinks)', async () => {
    expect((await sluice(['wait'], await write('POST', `${B()}/sources`, { sourceId: 'otel', name: 'Otel', type: 'otlp' }))).code).toBe(0);
    const run = await sluice(['wait'], await write('POST', `${B()}/sources/otel/otlp/default-sinks`));
    expect(run).toEqual({ code: 0, stdout: 'api.create.sink: success\n'.repeat(3), stderr: '' });
  });

  it('passes an error answer through with exit 1, and says what it needs when given nothing', async () => {
    const refused = await write('POST', `${B()}/sources`, { sourceId: 'waited', name: 'Waited', type: 'http' });
    const run = await sluice(['wait'], refused);
    expect(run.code).toBe(1);
    expect(run.stdout).toContain('"error":"stream.api.sourceAlreadyExists"');
    const empty = await sluice(['wait'], '');
    expect(empty.code).toBe(1);
    expect(empty.stderr).toContain('pipe the answer of a Stream API write into "sluice wait"');
    const usage = await sluice(['wait', '--timeout', 'soon'], '{}');
    expect(usage).toMatchObject({ code: 2, stderr: 'sluice: --timeout must be a duration such as 30s or 2m, got "soon"\n' });
  });
});
