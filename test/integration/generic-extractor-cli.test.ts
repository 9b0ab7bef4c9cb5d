/**
 * `sluice extractor run --data DIR` against a real local HTTP API: paging, retries, debug
 * logging with secrets masked, and the bad inputs of the seed's "Errors" section.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runExtractorCli } from '@sluice/generic-extractor';
import { component } from '../../src/components/generic-extractor/index.js';

type Handler = (url: URL, req: http.IncomingMessage, body: string) => { status?: number; headers?: Record<string, string>; body: string };

let handler: Handler;
let requests: string[] = [];
let server: http.Server;
let baseUrl = '';
const dirs: string[] = [];

beforeAll(async () => {
  server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const url = new URL(req.url ?? '/', 'http://x');
      requests.push(`${req.method} ${req.url}`);
      const out = handler(url, req, Buffer.concat(chunks).toString());
      res.writeHead(out.status ?? 200, { 'Content-Type': 'application/json', ...out.headers });
      res.end(out.body);
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/api/`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
  dirs.forEach((d) => rmSync(d, { recursive: true, force: true }));
});
beforeEach(() => {
  requests = [];
});

const users = (from: number, n: number) => Array.from({ length: n }, (_, i) => ({ id: from + i, name: `user ${from + i}` }));

async function run(api: Record<string, unknown>, config: Record<string, unknown>) {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-ge-it-'));
  dirs.push(dir);
  writeFileSync(join(dir, 'config.json'), JSON.stringify({ parameters: { api: { baseUrl, ...api }, config: { outputBucket: 'test', ...config } } }));
  let stdout = '';
  let stderr = '';
  const code = await runExtractorCli(['run', '--data', dir], { stdout: { write: (s: string) => (stdout += s) }, stderr: { write: (s: string) => (stderr += s) } });
  const tables: Record<string, string> = {};
  try {
    for (const f of readdirSync(join(dir, 'out', 'tables'))) tables[f] = readFileSync(join(dir, 'out', 'tables', f), 'utf8');
  } catch {
    // no output
  }
  return { code, stdout, stderr, tables, dir };
}

/** An offset-paged API of `total` users. */
const offsetApi =
  (total: number): Handler =>
  (url) => {
    const offset = Number(url.searchParams.get('offset') ?? 0);
    const limit = Number(url.searchParams.get('limit') ?? 10);
    return { body: JSON.stringify({ items: users(offset, Math.max(0, Math.min(limit, total - offset))) }) };
  };

describe('sluice extractor run', () => {
  it('pages through an offset API, writes CSV and manifest, and shows progress', async () => {
    handler = offsetApi(5);
    const r = await run({ pagination: { method: 'offset', limit: 2 } }, { jobs: [{ endpoint: 'users', dataField: 'items' }], incrementalOutput: true });
    expect(r.code).toBe(0);
    expect(requests).toEqual(['GET /api/users?limit=2&offset=0', 'GET /api/users?limit=2&offset=2', 'GET /api/users?limit=2&offset=4']);
    expect(r.tables['test.users.csv']).toBe('"id","name"\n"0","user 0"\n"1","user 1"\n"2","user 2"\n"3","user 3"\n"4","user 4"\n');
    expect(r.tables['test.users.csv.manifest']).toBe('{"destination":"in.c-test.users","incremental":true}');
    expect(r.stderr).toMatch(/pages 3, items 5, bytes \d+/);
    expect(r.stderr).toMatch(/Extracted 5 items from 3 pages into 1 table/);
  });

  it('runs as the keboola.ex-generic-v2 component with the stop reason in the job log', async () => {
    handler = offsetApi(3);
    const dir = mkdtempSync(join(tmpdir(), 'sluice-ge-it-'));
    dirs.push(dir);
    const config = { parameters: { api: { baseUrl, pagination: { method: 'offset', limit: 2 } }, config: { outputBucket: 'b', jobs: [{ endpoint: 'users', dataField: 'items' }] } } };
    const log: string[] = [];
    const result = await component.run({ dataDir: dir, config, state: {}, log: (m) => log.push(m), signal: new AbortController().signal });
    expect(component.id).toBe('keboola.ex-generic-v2');
    expect(result.message).toBe('Extracted 3 items from 2 pages into 1 table');
    expect(log.some((l) => /Stop reason: users: Pagination stopped, response is smaller than limit/.test(l))).toBe(true);
  });

  it('retries 429 and 503 honouring Retry-After, and masks secrets in debug logs', async () => {
    let calls = 0;
    handler = () => {
      calls++;
      if (calls === 1) return { status: 429, headers: { 'Retry-After': '0' }, body: '{}' };
      if (calls === 2) return { status: 503, headers: { 'Retry-After': '0' }, body: '{}' };
      return { body: JSON.stringify(users(1, 2)) };
    };
    const r = await run({ authentication: { type: 'query', query: { token: 'TopSecret123' } } }, { debug: true, jobs: [{ endpoint: 'users' }] });
    expect(r.code).toBe(0);
    expect(calls).toBe(3);
    expect(requests[2]).toBe('GET /api/users?token=TopSecret123');
    expect(r.stderr).toMatch(/GET http:\/\/127\.0\.0\.1:\d+\/api\/users\?token=\*\*\*\*\*/);
    expect(r.stderr).not.toContain('TopSecret123');
    expect(r.stderr).toMatch(/answered 429/);
  });

  it('sends basic auth and POST bodies', async () => {
    let seen: { auth?: string; body?: string } = {};
    handler = (_url, req, body) => {
      seen = { auth: req.headers.authorization, body };
      return { body: JSON.stringify(users(1, 1)) };
    };
    const r = await run({ authentication: { type: 'basic' } }, { '#username': 'ann', '#password': 'pw', jobs: [{ endpoint: 'search', method: 'POST', params: { q: 'a/b' } }] });
    expect(r.code).toBe(0);
    expect(seen).toEqual({ auth: `Basic ${Buffer.from('ann:pw').toString('base64')}`, body: '{"q":"a\\/b"}' });
  });

  it('logs in first and sends the token from the login response, masked in debug logs', async () => {
    handler = (url, req) => {
      if (url.pathname === '/api/login') {
        return req.headers['x-login'] === 'ann' ? { body: JSON.stringify({ auth: { token: 'tok-123456' } }) } : { status: 401, body: '{}' };
      }
      return req.headers['x-api-token'] === 'tok-123456' ? { body: JSON.stringify(users(1, 1)) } : { status: 403, body: '{"error":"no token"}' };
    };
    const r = await run(
      {
        authentication: {
          type: 'login',
          loginRequest: { endpoint: 'login', headers: { 'X-Login': { attr: 'login' } } },
          apiRequest: { headers: { 'X-Api-Token': 'auth.token' } },
        },
      },
      { debug: true, login: 'ann', jobs: [{ endpoint: 'users' }, { endpoint: 'orders' }] },
    );
    expect(r.code).toBe(0);
    expect(requests).toEqual(['GET /api/login', 'GET /api/users', 'GET /api/orders']);
    expect(r.stderr).not.toContain('tok-123456');
  });

  describe('bad input (seed, Errors)', () => {
    it('an error for the page past the last one fails with advice; nextPageFlag avoids it', async () => {
      handler = (url) => {
        const offset = Number(url.searchParams.get('offset'));
        if (offset >= 4) return { status: 400, body: '{"error":"offset out of range"}' };
        return { body: JSON.stringify({ items: users(offset, 2), hasMore: offset + 2 < 4 }) };
      };
      const failing = await run({ pagination: { method: 'offset', limit: 2 } }, { jobs: [{ endpoint: 'users', dataField: 'items' }] });
      expect(failing.code).toBe(1);
      expect(failing.stderr).toMatch(/\[400\].*offset out of range.*configure a stopping condition.*nextPageFlag/s);
      const fixed = await run(
        { pagination: { method: 'offset', limit: 2, nextPageFlag: { field: 'hasMore', stopOn: false } } },
        { jobs: [{ endpoint: 'users', dataField: 'items' }] },
      );
      expect(fixed.code).toBe(0);
      expect(fixed.tables['test.users.csv'].split('\n').filter(Boolean)).toHaveLength(5);
    });

    it('an API that keeps returning the last page stops when a page equals the previous one', async () => {
      handler = (url) => ({ body: JSON.stringify(users(Math.min(Number(url.searchParams.get('page')), 3) * 10, 2)) });
      const r = await run({ pagination: { method: 'pagenum' } }, { jobs: [{ endpoint: 'users' }] });
      expect(r.code).toBe(0);
      expect(requests).toHaveLength(4);
      expect(r.tables['test.users.csv'].split('\n').filter(Boolean)).toHaveLength(1 + 3 * 2);
    });

    it('an API that falls back to the first page duplicates it once, then stops', async () => {
      handler = (url) => {
        const offset = Number(url.searchParams.get('offset'));
        return { body: JSON.stringify(offset === 2 ? users(3, 2) : users(1, 2)) };
      };
      const r = await run({ pagination: { method: 'offset', limit: 2 } }, { jobs: [{ endpoint: 'users' }] });
      expect(r.code).toBe(0);
      expect(requests).toHaveLength(4);
      expect(r.tables['test.users.csv']).toBe('"id","name"\n"1","user 1"\n"2","user 2"\n"3","user 3"\n"4","user 4"\n"1","user 1"\n"2","user 2"\n');
    });

    it('a missing limitStop.field stops after the first page', async () => {
      handler = offsetApi(10);
      const r = await run({ pagination: { method: 'offset', limit: 2, limitStop: { field: 'meta.total' } } }, { jobs: [{ endpoint: 'users', dataField: 'items' }] });
      expect(r.code).toBe(0);
      expect(requests).toHaveLength(1);
      expect(r.stderr).toMatch(/Limit reached.*not found/);
    });

    it('a broken JSON body is a clear error', async () => {
      handler = () => ({ body: '{"items": [1, 2' });
      const r = await run({}, { jobs: [{ endpoint: 'users' }] });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/error: Invalid JSON response from API for GET http.*\/api\/users/);
    });

    it('a non-JSON response is a clear error naming its content type', async () => {
      handler = () => ({ headers: { 'Content-Type': 'text/html' }, body: '<html><body>Login</body></html>' });
      const r = await run({}, { jobs: [{ endpoint: 'users' }] });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/Invalid JSON response from API \(Content-Type: text\/html\).*<html>/);
    });

    it('an API that never ends is bounded by config.maxPages', async () => {
      handler = (url) => ({ body: JSON.stringify({ page: url.searchParams.get('page'), items: users(Number(url.searchParams.get('page')), 1) }) });
      const r = await run({ pagination: { method: 'pagenum' } }, { maxPages: 5, jobs: [{ endpoint: 'users', dataField: 'items' }] });
      expect(r.code).toBe(0);
      expect(requests).toHaveLength(5);
      expect(r.stderr).toMatch(/warning: Stopped after 5 pages: the default bound/);
    });

    it('an invalid configuration fails before any request', async () => {
      handler = offsetApi(1);
      const r = await run({ pagination: { method: 'offset' } }, { jobs: [{ endpoint: 'users' }] });
      expect(r.code).toBe(1);
      expect(r.stderr).toMatch(/Missing 'pagination.limit'/);
      expect(requests).toHaveLength(0);
    });
  });

  it('prints usage and rejects a missing --data', async () => {
    let err = '';
    expect(await runExtractorCli(['run'], { stdout: { write: () => true }, stderr: { write: (s: string) => (err += s) } })).toBe(1);
    expect(err).toMatch(/--data DIR is required/);
  });
});
