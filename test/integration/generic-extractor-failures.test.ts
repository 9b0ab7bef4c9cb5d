/**
 * The generic extractor fails fast and logs little (issue 17, item 8), against real sockets: a
 * refused connection is retried within `api.retryConfig.maxTime` and then fails with a message
 * that says what to check; the reference's `retryConfig.curl.codes` decide which transport errors
 * are retried; a wait the API asks for (Retry-After) is honoured beyond the bound; a job with
 * many child jobs logs the first few stop lines and one summary instead of one line per child.
 * Also the injected clock and host mapping (`now`, `connectTo`) the conformance runner uses.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { component } from '../../src/components/generic-extractor/index.js';
import { runExtraction, runExtractorCli } from '@sluice/generic-extractor';

type Handler = (req: http.IncomingMessage) => { status?: number; headers?: Record<string, string>; body: string };

let handler: Handler = () => ({ body: '[]' });
let server: http.Server;
let port = 0;
const dirs: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    req.resume();
    req.on('end', () => {
      const out = handler(req);
      res.writeHead(out.status ?? 200, { 'Content-Type': 'application/json', ...out.headers });
      res.end(out.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const s = net.createServer();
  await new Promise<void>((r) => s.listen(0, '127.0.0.1', r));
  const p = (s.address() as AddressInfo).port;
  await new Promise((r) => s.close(r));
  return p;
}

function dataDir(parameters: Record<string, unknown>): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-ge-fail-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ parameters }));
  return dir;
}

/** Runs the component as the job queue does; the job log and the outcome. */
async function runJob(parameters: Record<string, unknown>) {
  const dir = dataDir(parameters);
  const log: string[] = [];
  const started = performance.now();
  let error: Error | null = null;
  try {
    await component.run({ dataDir: dir, config: { parameters }, state: {}, log: (m, level = 'info') => log.push(`${level}: ${m}`), signal: new AbortController().signal });
  } catch (err) {
    error = err as Error;
  }
  return { log, error, ms: performance.now() - started, dir };
}

describe('generic extractor: failures come fast', () => {
  it('a job against a closed port fails within retryConfig.maxTime with a clear message', async () => {
    const closed = await closedPort();
    const r = await runJob({ api: { baseUrl: `http://127.0.0.1:${closed}/v1/`, retryConfig: { maxTime: 2 } }, config: { outputBucket: 'b', jobs: [{ endpoint: 'users' }] } });
    expect(r.error?.name).toBe('UserError');
    expect(r.error?.message).toMatch(
      new RegExp(
        `^The API request failed: GET http://127\\.0\\.0\\.1:${closed}/v1/users: connect ECONNREFUSED .*\\(nothing accepts connections at 127\\.0\\.0\\.1:${closed}; ` +
          'is the API running, and are the host and port in api\\.baseUrl right\\?\\); gave up after \\d retries in 2\\.\\d s \\(api\\.retryConfig\\.maxTime: 2 s\\)$',
      ),
    );
    // It did retry (1 s, then what was left of the 2 s), and it stopped at the bound.
    expect(r.ms).toBeGreaterThan(1900);
    expect(r.ms).toBeLessThan(4000);
    expect(r.log.filter((l) => /failed \(connect ECONNREFUSED/.test(l))).toHaveLength(2);
  }, 15_000);

  it('the CLI exits 1 with the message; retryConfig.curl.codes without 7 (connect) does not retry at all', async () => {
    const closed = await closedPort();
    const dir = dataDir({ api: { baseUrl: `http://127.0.0.1:${closed}/`, retryConfig: { curl: { codes: [28] } } }, config: { outputBucket: 'b', jobs: [{ endpoint: 'users' }] } });
    let stderr = '';
    const started = performance.now();
    const code = await runExtractorCli(['run', '--data', dir], { stdout: { write: () => true }, stderr: { write: (s: string) => (stderr += s) } });
    expect(performance.now() - started).toBeLessThan(1000);
    expect(code).toBe(1);
    expect(stderr).toMatch(/^error: The API request failed: GET http:\/\/127\.0\.0\.1:\d+\/users: connect ECONNREFUSED .*nothing accepts connections/m);
    expect(stderr).not.toMatch(/retrying/);
  }, 15_000);

  it('the bound stops our backoff, but a wait the API asks for (Retry-After) is honoured', async () => {
    let calls = 0;
    handler = () => (++calls === 1 ? { status: 503, body: '{"error":"busy"}' } : { body: '[{"id":1}]' });
    const noHeader = await runJob({ api: { baseUrl: `http://127.0.0.1:${port}/`, retryConfig: { maxTime: 0 } }, config: { outputBucket: 'b', jobs: [{ endpoint: 'users' }] } });
    expect(noHeader.error?.message).toMatch(/^The API request failed: \[503\] GET .*\/users: \{"error":"busy"\} \(gave up after 0 retries in 0\.\d s: api\.retryConfig\.maxTime is 0 s\)$/);
    expect(calls).toBe(1);

    calls = 0;
    handler = () => (++calls === 1 ? { status: 503, headers: { 'Retry-After': '0' }, body: '{}' } : { body: '[{"id":1}]' });
    const withHeader = await runJob({ api: { baseUrl: `http://127.0.0.1:${port}/`, retryConfig: { maxTime: 0 } }, config: { outputBucket: 'b', jobs: [{ endpoint: 'users' }] } });
    expect(withHeader.error).toBeNull();
    expect(calls).toBe(2);
  });
});

describe('generic extractor: a job log stays readable', () => {
  it('150 child jobs stopping alike log the first three lines and one summary, and one stop reason', async () => {
    handler = (req) => {
      const url = new URL(req.url ?? '/', 'http://x');
      if (url.pathname === '/users') {
        return { body: JSON.stringify({ total: 150, items: Array.from({ length: 150 }, (_, i) => ({ id: i + 1 })) }) };
      }
      const id = /^\/users\/(\d+)\/orders$/.exec(url.pathname)?.[1];
      return { body: JSON.stringify({ total: 1, items: [{ order: `o${id}` }] }) };
    };
    const r = await runJob({
      api: { baseUrl: `http://127.0.0.1:${port}/`, pagination: { method: 'offset', limit: 500, limitStop: { field: 'total' } } },
      config: {
        outputBucket: 'b',
        jobs: [{ endpoint: 'users', dataField: 'items', children: [{ endpoint: 'users/{id}/orders', dataType: 'orders', dataField: 'items', placeholders: { id: 'id' } }] }],
      },
    });
    expect(r.error).toBeNull();
    const childLines = r.log.filter((l) => /^info: Job 'users\/\d+\/orders': Limit reached, stopping scrolling/.test(l));
    expect(childLines).toEqual([
      "info: Job 'users/1/orders': Limit reached, stopping scrolling. Current count: 1, limit: 1",
      "info: Job 'users/2/orders': Limit reached, stopping scrolling. Current count: 1, limit: 1",
      "info: Job 'users/3/orders': Limit reached, stopping scrolling. Current count: 1, limit: 1",
    ]);
    expect(r.log.filter((l) => l.includes('more like this'))).toEqual([
      "info: … and 147 more like this (150 in all) for child jobs of 'users/{id}/orders'; the last: Job 'users/150/orders': Limit reached, stopping scrolling. Current count: 1, limit: 1",
    ]);
    // The child jobs of a page run before the parent asks for its next page.
    expect(r.log.filter((l) => l.startsWith('info: Stop reason:'))).toEqual([
      'info: Stop reason: orders: Limit reached, stopping scrolling. Current count: 1, limit: 1 (and 149 more child jobs alike)',
      'info: Stop reason: users: Limit reached, stopping scrolling. Current count: 150, limit: 150',
    ]);
    expect(r.log.length).toBeLessThan(12);
    // Every child's rows are there all the same.
    const orders = readFileSync(join(r.dir, 'out', 'tables', 'b.orders.csv'), 'utf8').trim().split('\n');
    expect(orders).toHaveLength(151);
  });
});

describe('generic extractor: injected clock and host mapping', () => {
  it('reads the time from `now` and reaches a named host where `connectTo` says', async () => {
    const hosts: string[] = [];
    handler = (req) => {
      hosts.push(String(req.headers.host));
      return { body: '[{"id":1}]' };
    };
    const dir = dataDir({
      api: { baseUrl: 'http://api.invalid/v1/' },
      config: { outputBucket: 'b', jobs: [{ endpoint: 'users' }], userData: { at: { function: 'date', args: ['Y-m-d H:i:s'] } } },
    });
    await runExtraction({
      dataDir: dir,
      log: () => undefined,
      now: () => Date.parse('2020-01-02T03:04:05Z'),
      connectTo: (host) => (host === 'api.invalid' ? { host: '127.0.0.1', port } : undefined),
    });
    expect(hosts).toEqual(['api.invalid']);
    expect(readFileSync(join(dir, 'out', 'tables', 'b.users.csv'), 'utf8')).toBe('"id","at"\n"1","2020-01-02 03:04:05"\n');
    expect(JSON.parse(readFileSync(join(dir, 'out', 'state.json'), 'utf8')).time.previousStart).toBe(Date.parse('2020-01-02T03:04:05Z') / 1000);
  });
});
