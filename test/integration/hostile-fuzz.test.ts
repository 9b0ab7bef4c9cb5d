/**
 * Fuzzing every operation of the served OpenAPI document against a real `sluice serve` process:
 * random and boundary bodies, parameters, headers and tokens (fast-check, arbitraries in
 * test/support/openapi-arbitraries.ts). For every request: an answer, no 5xx but a 503 with
 * Retry-After, the process alive; a refused request (4xx) stores nothing; the process's memory
 * stays bounded over the run. SLUICE_FUZZ_RUNS sets the number of requests (default 300);
 * SLUICE_FUZZ_SEED replays a failed run (fast-check prints the seed).
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ChildService, CHILD_MASTER_TOKEN, sleep } from '../helpers/child-service.js';
import { bodyFor, hostileString, operationsOf, type Operation, type RawBody } from '../support/openapi-arbitraries.js';

const RUNS = Number(process.env.SLUICE_FUZZ_RUNS ?? 300);
const SEED = process.env.SLUICE_FUZZ_SEED === undefined ? undefined : Number(process.env.SLUICE_FUZZ_SEED);
/** Resident memory the process may reach while fuzzed (it idles at about 150 MB). */
const MAX_RSS_BYTES = 1.5 * 1024 ** 3;

let svc: ChildService;
let dataDir: string;
let operations: Operation[];
/** Ids of real entities by path parameter name, so that requests also reach existing things. */
const known: Record<string, string[]> = {};
const tokens: Record<string, string | null> = { master: CHILD_MASTER_TOKEN, none: null, invalid: '1-999-not-a-token' };
let maxRss = 0;

beforeAll(async () => {
  dataDir = mkdtempSync(join(tmpdir(), 'sluice-fuzz-'));
  svc = new ChildService({ dataDir });
  await svc.start();
  operations = operationsOf((await svc.call('GET', '/v1/documentation/openapi.json')).json);
  await seed();
}, 60_000);

afterAll(async () => {
  await svc?.dispose();
  rmSync(dataDir, { recursive: true, force: true });
});

/** A source with a sink, a configuration with a row, a job, limited tokens: things to aim at. */
async function seed(): Promise<void> {
  const ingest = await svc.createSource('fuzzed');
  await svc.createSink('fuzzed', 'rows', 'in.c-fuzz.rows', [
    { type: 'uuid', name: 'id' },
    { type: 'body', name: 'body' },
    { type: 'template', name: 't', template: { language: 'jsonnet', content: 'Body("a", "none")' } },
  ]);
  const [, , project, , secret] = ingest.split('/');
  const config = await svc.call('POST', '/v2/storage/components/sluice.echo/configs', { name: 'fuzz', configuration: { parameters: { a: 1 } } });
  const row = await svc.call('POST', `/v2/storage/components/sluice.echo/configs/${config.json.id}/rows`, { name: 'r', configuration: {} });
  const job = await svc.call('POST', '/jobs', { component: 'sluice.echo', config: config.json.id, mode: 'run' });
  await settleJob(job.json.id);
  const noRights = await svc.call('POST', '/v2/storage/tokens', { description: 'no rights' });
  const oneComponent = await svc.call('POST', '/v2/storage/tokens', { description: 'echo only', componentAccess: ['sluice.echo'] });
  tokens.noRights = noRights.json.token;
  tokens.oneComponent = oneComponent.json.token;
  Object.assign(known, {
    branchId: ['default', '1'],
    projectId: [project],
    sourceId: ['fuzzed'],
    sinkId: ['rows'],
    secret: [secret],
    signal: ['logs', 'metrics', 'traces'],
    versionNumber: ['1', '2'],
    version: ['1', '2'],
    componentId: ['sluice.echo', 'keboola.ex-generic-v2'],
    configId: [String(config.json.id)],
    rowId: [String(row.json.id)],
    jobId: [String(job.json.id)],
    id: [String(job.json.id), String(noRights.json.id), '1'],
    bucketId: ['in.c-fuzz'],
    tableId: ['in.c-fuzz.rows'],
    '*': ['a/b/c'],
  });
}

interface Request {
  op: Operation;
  params: Record<string, string>;
  query: Record<string, string>;
  token: string;
  body: RawBody;
  headers: Record<string, string>;
}

function requestArbitrary(): fc.Arbitrary<Request> {
  return fc.constantFrom(...operations).chain((op) => {
    const names = [...op.path.matchAll(/\{([^}]+)\}/g)].map((m) => m[1]);
    const param = (name: string) => fc.oneof({ weight: 4, arbitrary: fc.constantFrom(...(known[name] ?? ['x'])) }, { weight: 1, arbitrary: hostileString });
    const params = fc.record(Object.fromEntries(names.map((n) => [n, param(n)])) as Record<string, fc.Arbitrary<string>>);
    const query = fc.dictionary(fc.oneof(fc.constantFrom(...(op.queryNames.length ? op.queryNames : ['x'])), hostileString), hostileString, { maxKeys: 3 });
    const headers = fc.dictionary(
      fc.constantFrom('x-kbc-runid', 'accept', 'accept-encoding', 'x-forwarded-for', 'authorization', 'x-storageapi-url', 'origin'),
      fc.string({ maxLength: 40 }).filter((s) => /^[\x20-\x7e]*$/.test(s)),
      { maxKeys: 2 },
    );
    return fc.record({
      op: fc.constant(op),
      params,
      query,
      token: fc.constantFrom(...Object.keys(tokens)),
      body: bodyFor(op),
      headers,
    }).map((r) => Object.assign(r, { [fc.toStringMethod]: () => describeRequest(r) }));
  });
}

/** Percent-encoding that takes lone surrogates too (as U+FFFD, as a client's UTF-8 encoder would). */
const encode = (s: string) => encodeURIComponent(s.replace(/[\ud800-\udbff](?![\udc00-\udfff])|(?<![\ud800-\udbff])[\udc00-\udfff]/g, '\ufffd'));

function urlOf(r: Request): string {
  const path = r.op.path.replace(/\{([^}]+)\}/g, (_m, name: string) =>
    name === '*' ? r.params[name].split('/').map(encode).join('/') : encode(r.params[name]));
  const qs = new URLSearchParams(r.query).toString();
  return svc.base + path + (qs ? `?${qs}` : '');
}

function describeRequest(r: Request): string {
  const body = typeof r.body.body === 'string' ? r.body.body.slice(0, 300) : r.body.body ? `<${r.body.body.length} bytes>` : '';
  return `${r.op.method} ${urlOf(r).slice(svc.base.length, svc.base.length + 300)} as ${r.token} (${r.body.what}${r.body.contentType ? `, ${r.body.contentType}` : ''}) ${body}`;
}

async function send(r: Request): Promise<{ status: number; text: string; retryAfter: string | null; json: any }> {
  const headers: Record<string, string> = { ...r.headers };
  const token = tokens[r.token];
  if (token !== null) headers['x-storageapi-token'] = token;
  if (r.body.contentType && r.body.body !== undefined) headers['content-type'] = r.body.contentType;
  if (r.body.contentEncoding) headers['content-encoding'] = r.body.contentEncoding;
  const hasBody = r.body.body !== undefined && r.op.method !== 'GET' && r.op.method !== 'HEAD';
  const res = await fetch(urlOf(r), {
    method: r.op.method,
    headers,
    body: hasBody ? r.body.body : undefined,
    signal: AbortSignal.timeout(30_000),
  });
  const text = await res.text();
  let json: any;
  try {
    json = JSON.parse(text);
  } catch {
    json = undefined;
  }
  return { status: res.status, text, retryAfter: res.headers.get('retry-after'), json };
}

/** What a refused request must not change: the entities and their versions (not their statistics). */
async function snapshot(): Promise<string> {
  const get = async (path: string) => {
    const res = await svc.call('GET', path);
    return res.status === 200 ? res.json : res.status;
  };
  const sources = await get('/v1/branches/default/sources');
  const sinks: Record<string, unknown> = {};
  for (const s of Array.isArray(sources?.sources) ? sources.sources : []) {
    const list = await get(`/v1/branches/default/sources/${encodeURIComponent(s.sourceId)}/sinks`);
    sinks[s.sourceId] = (list?.sinks ?? []).map((k: any) => [k.sinkId, k.version?.number, k.deleted ?? null, k.disabled ?? null]);
  }
  const components = await get('/v2/storage/components?include=configuration,rows,state');
  const tables = await get('/v2/storage/tables');
  const tokenList = await get('/v2/storage/tokens');
  return JSON.stringify({
    sources: (sources?.sources ?? []).map((s: any) => [s.sourceId, s.version?.number, s.deleted ?? null, s.disabled ?? null, s.http?.url ?? null]),
    sinks,
    components: Array.isArray(components) ? components.map((c: any) => [c.id, (c.configurations ?? []).map((x: any) => [x.id, x.version, x.isDeleted, JSON.stringify(x.configuration), JSON.stringify(x.state), (x.rows ?? []).map((row: any) => [row.id, row.version])])]) : components,
    tables: Array.isArray(tables) ? tables.map((t: any) => [t.id, t.columns]).sort() : tables,
    tokens: Array.isArray(tokenList) ? tokenList.map((t: any) => t.id).sort() : tokenList,
  });
}

/** Waits for what an accepted request started (a task, a job) so that its effects are in the next snapshot. */
async function settle(r: Request, answer: { status: number; json: any }): Promise<void> {
  const deadline = Date.now() + 30_000;
  const url: unknown = answer.json?.url;
  if (answer.status === 202 && typeof url === 'string' && url.includes('/v1/tasks/')) {
    const path = new URL(url).pathname;
    while (Date.now() < deadline && (await svc.call('GET', path)).json?.status === 'processing') await sleep(20);
  }
  if (r.op.path === '/jobs' && r.op.method === 'POST' && answer.status < 300 && answer.json?.id) await settleJob(answer.json.id);
}

async function settleJob(id: string): Promise<void> {
  const deadline = Date.now() + 30_000;
  const terminal = new Set(['success', 'error', 'terminated', 'cancelled']);
  while (Date.now() < deadline && !terminal.has((await svc.call('GET', `/jobs/${id}`)).json?.status)) await sleep(50);
}

function bodyBytes(r: Request): number {
  const b = r.body.body;
  return b === undefined ? 0 : typeof b === 'string' ? Buffer.byteLength(b) : b.length;
}

function residentBytes(pid: number): number {
  const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

describe('every operation of the OpenAPI document, fuzzed', () => {
  it('answers without a 5xx (but a 503 with Retry-After), stays alive and bounded, and a refused request stores nothing', async () => {
    let before = await snapshot();
    let count = 0;
    const statuses: Record<number, number> = {};
    await fc.assert(
      fc.asyncProperty(requestArbitrary(), async (r) => {
        count++;
        const mutating = r.op.method !== 'GET';
        let answer;
        try {
          answer = await send(r);
        } catch (err) {
          // A body over the limit is refused while it is still being sent: the server answers
          // 413 and closes, and fetch may see only the closed socket.
          if (bodyBytes(r) > 1024 * 1024 && (await svc.healthy())) return;
          throw new Error(`no answer to ${describeRequest(r)}: ${String((err as { cause?: unknown }).cause ?? err)}\n${svc.output().slice(-3000)}`);
        }
        statuses[answer.status] = (statuses[answer.status] ?? 0) + 1;
        if (!svc.running) throw new Error(`the process died after ${describeRequest(r)}\n${svc.output().slice(-3000)}`);
        maxRss = Math.max(maxRss, residentBytes(svc.pid!));
        if (answer.status >= 500 && !(answer.status === 503 && answer.retryAfter)) {
          const logged = svc.output().split('\n').filter((l) => l.includes('"level":50')).slice(-2).join('\n');
          throw new Error(`${answer.status} to ${describeRequest(r)}: ${answer.text.slice(0, 500)}\nthe service logged: ${logged.slice(-3000)}`);
        }
        if (!mutating) return;
        if (answer.status >= 400) {
          const after = await snapshot();
          if (after !== before) throw new Error(`refused with ${answer.status}, yet something changed: ${describeRequest(r)}\nbefore: ${before}\nafter:  ${after}`);
        } else {
          await settle(r, answer);
          before = await snapshot();
        }
      }),
      { numRuns: RUNS, seed: SEED, endOnFailure: true, verbose: 1 },
    );
    // The run reached handlers, not only the first check: several kinds of answers were given.
    expect(Object.keys(statuses).length).toBeGreaterThan(4);
    expect(count).toBe(RUNS);
    expect(await svc.healthy()).toBe(true);
    expect(maxRss).toBeLessThan(MAX_RSS_BYTES);
  }, 600_000);
});
