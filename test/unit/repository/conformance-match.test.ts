import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { lineDiff, matchBody, matchesFormat, normalizeExpected, parsePattern, prettyJson } from '../../conformance/stream-api/match.js';
import {
  evaluateUntil,
  getAtPath,
  goJsonMarshal,
  parseRequest,
  resolveExpectedReferences,
  resolveRequest,
  runScenario,
  substitutePlaceholders,
  urlToPath,
  type Scenario,
} from '../../conformance/stream-api/scenario.js';

const ok = (expected: string, actual: unknown): boolean =>
  matchBody(expected, typeof actual === 'string' ? actual : JSON.stringify(actual)).ok;

describe('wildcards', () => {
  it('%s is one or more characters except a newline', () => {
    expect(matchesFormat('a%sz', 'abcz')).toBe(true);
    expect(matchesFormat('a%sz', 'az')).toBe(false);
    expect(matchesFormat('a%sz', 'a\nz')).toBe(false);
  });
  it('%d is digits, %x hex digits', () => {
    expect(matchesFormat('v%d', 'v123')).toBe(true);
    expect(matchesFormat('v%d', 'v12a')).toBe(false);
    expect(matchesFormat('%x.%x', 'a0f.16')).toBe(true);
    expect(matchesFormat('%x', 'xyz')).toBe(false);
  });
  it('%A is anything including newlines and nothing', () => {
    expect(matchesFormat('a%Az', 'az')).toBe(true);
    expect(matchesFormat('a%Az', 'a\n\nz')).toBe(true);
  });
  it('%% is a literal percent; regex characters are literal', () => {
    expect(matchesFormat('100%% (a.b)', '100% (a.b)')).toBe(true);
    expect(matchesFormat('a.b', 'axb')).toBe(false);
  });
});

describe('matchBody', () => {
  it('matches quoted wildcards in strings', () => {
    expect(ok('{"taskId": "api.create.source/5678/my-source/%s", "createdAt": "%s"}', {
      taskId: 'api.create.source/5678/my-source/abc123',
      createdAt: '2024-01-01T00:00:00.000Z',
    })).toBe(true);
    expect(ok('{"taskId": "api.create.source/5678/my-source/%s"}', { taskId: 'api.create.source/1234/my-source/abc' })).toBe(false);
  });

  it('matches unquoted %d where a number is expected', () => {
    const expected = '{\n  "duration": %d,\n  "projectId": 1234\n}';
    expect(parsePattern(expected)).toBeDefined();
    expect(ok(expected, { duration: 17, projectId: 1234 })).toBe(true);
    expect(ok(expected, { duration: '17', projectId: 1234 })).toBe(false);
    expect(ok(expected, { duration: 1.5, projectId: 1234 })).toBe(false);
  });

  it('ignores key order at every level', () => {
    const expected = '{"a": 1, "b": {"c": "x", "d": [1, 2]}}';
    expect(ok(expected, { b: { d: [1, 2], c: 'x' }, a: 1 })).toBe(true);
  });

  it('is order-sensitive for arrays', () => {
    expect(ok('{"l": [1, 2]}', { l: [1, 2] })).toBe(true);
    expect(ok('{"l": [1, 2]}', { l: [2, 1] })).toBe(false);
    expect(ok('{"l": [1, 2]}', { l: [1, 2, 3] })).toBe(false);
  });

  it('requires exactly the listed keys without %A', () => {
    expect(ok('{"a": 1}', { a: 1, b: 2 })).toBe(false);
    expect(ok('{"a": 1, "b": 2}', { a: 1 })).toBe(false);
  });

  it('takes a bare %A member as "any other members", wherever they sort', () => {
    const expected = '{\n%A\n  "status": "success",\n%A\n}';
    expect(ok(expected, { createdAt: 'x', status: 'success', url: 'y', type: 'z' })).toBe(true);
    expect(ok(expected, { createdAt: 'x', status: 'error' })).toBe(false);
    const listed = `{
      "sinks": [
        { "sinkId": "my-sink-1", %A },
        { "sinkId": "my-sink-2",
          %A
        }
      ]
    }`;
    const sink = (id: string) => ({ branchId: 1, created: {}, name: 'n', sinkId: id, type: 'table', version: { number: 1 } });
    expect(ok(listed, { sinks: [sink('my-sink-1'), sink('my-sink-2')] })).toBe(true);
    expect(ok(listed, { sinks: [sink('my-sink-2'), sink('my-sink-1')] })).toBe(false);
  });

  it('takes a bare %A element as any run of array elements', () => {
    expect(ok('[1, %A, 4]', [1, 2, 3, 4])).toBe(true);
    expect(ok('[1, %A, 4]', [1, 4])).toBe(true);
    expect(ok('[1, %A, 4]', [1, 2, 3])).toBe(false);
  });

  it('applies wildcards to the JSON-escaped string content', () => {
    const expected = String.raw`{"value": "{\"Accept\":\"application/json\",\"Content-Length\":\"%x\",\"User-Agent\":\"go-resty/%x.%x.%x (https://github.com/go-resty/resty)\"}"}`;
    const value = JSON.stringify({
      Accept: 'application/json',
      'Content-Length': '42',
      'User-Agent': 'go-resty/2.16.5 (https://github.com/go-resty/resty)',
    });
    expect(ok(expected, { value })).toBe(true);
    expect(ok(expected, { value: value.replace('42', 'zz') })).toBe(false);
    // Escapes are compared canonically: \u0041 is "A".
    expect(ok('{"v": "\\u0041%s"}', { v: 'Abc' })).toBe(true);
  });

  it('counts an empty body as {} and matches text bodies as text', () => {
    expect(ok('{}', '')).toBe(true);
    expect(ok('OK', 'OK\n')).toBe(true);
    expect(ok('Hello %s!', 'Hello world!')).toBe(true);
    expect(ok('Hello %s!', 'Bye world!')).toBe(false);
    expect(ok('{"a": 1}', 'not json')).toBe(false);
  });

  it('reports a mismatch with its path and a readable diff', () => {
    const res = matchBody(
      '{\n  "version": {"number": 1, "hash": "%s"},\n  "name": "My Source"\n}',
      JSON.stringify({ name: 'My Source', version: { hash: 'abc', number: 2 } }),
    );
    expect(res.ok).toBe(false);
    expect(res.reason).toBe('$.version.number: expected 1, got 2');
    expect(res.diff).toContain('-     "number": 1');
    expect(res.diff).toContain('+     "number": 2');
    // Matched wildcard parts do not show as differences.
    expect(res.diff).not.toContain('-     "hash"');
    expect(res.diff).toMatch(/first differing line: \d+/);
  });

  it('reports missing and unexpected keys', () => {
    expect(matchBody('{"a": 1, "b": 2}', '{"a": 1}').reason).toBe('$: missing key "b"');
    expect(matchBody('{"a": 1}', '{"a": 1, "c": 3}').reason).toBe('$: unexpected key(s) "c"');
  });
});

describe('rendering', () => {
  it('pretty-prints with two spaces and sorted keys', () => {
    expect(prettyJson({ b: [1, {}], a: { d: [], c: null } })).toBe(
      '{\n  "a": {\n    "c": null,\n    "d": []\n  },\n  "b": [\n    1,\n    {}\n  ]\n}',
    );
  });
  it('normalises the expected text the same way, keeping wildcards', () => {
    expect(normalizeExpected('{"b": %d, "a": "%s", %A}')).toBe('{\n  "a": "%s",\n  "b": %d,\n  %A\n}');
  });
  it('diffs lines', () => {
    const d = lineDiff('a\nb\nc', 'a\nx\nc');
    expect(d.firstDifferingLine).toBe(2);
    expect(d.text).toBe('  a\n- b\n+ x\n  c');
  });
});

describe('placeholders and references', () => {
  const vars = { projectId: 1234, defaultBranchId: 5678, storageApiToken: 'tok' };

  it('substitutes %%TEST_...%% placeholders', () => {
    expect(
      substitutePlaceholders('/v1/branches/%%TEST_DEFAULT_BRANCH_ID%%/x %%TEST_KBC_PROJECT_ID%% %%TEST_KBC_STORAGE_API_TOKEN%%', vars),
    ).toBe('/v1/branches/5678/x 1234 tok');
    expect(() => substitutePlaceholders('%%TEST_UNKNOWN%%', vars)).toThrow(/unknown placeholder/);
    // Wildcards and an unquoted placeholder in an expected body.
    expect(substitutePlaceholders('{"projectId": %%TEST_KBC_PROJECT_ID%%, "d": %d}', vars)).toBe('{"projectId": 1234, "d": %d}');
  });

  const responses = new Map<string, unknown>([
    ['001-create-source', { url: 'https://stream.keboola.local/v1/tasks/api.create.source/5678/my-source/abc' }],
    ['002-poll-source', { outputs: { url: 'https://stream.keboola.local/v1/branches/5678/sources/my-source', n: 3 }, list: ['a%b'] }],
  ]);
  const base = 'https://stream.keboola.local';

  it('resolves <<step:response.path>> in the request path to a path', () => {
    const req = parseRequest(
      '{"path": "<<001-create-source:response.url>>", "method": "GET", "headers": {"X": "<<002-poll-source:response.outputs.n>>"}}',
      'request.json',
    );
    const resolved = resolveRequest(req, responses, base);
    expect(resolved.path).toBe('/v1/tasks/api.create.source/5678/my-source/abc');
    expect(resolved.headers).toEqual({ X: '3' });
    expect(resolveRequest({ path: '<<002-poll-source:response.outputs.url>>', method: 'GET' }, responses, base).path).toBe(
      '/v1/branches/5678/sources/my-source',
    );
  });

  it('fails clearly on unknown steps and paths', () => {
    expect(() => resolveRequest({ path: '<<009-x:response.url>>', method: 'GET' }, responses, base)).toThrow(/no earlier step/);
    expect(() => resolveRequest({ path: '<<001-create-source:response.nope>>', method: 'GET' }, responses, base)).toThrow(
      /has no "nope"/,
    );
  });

  it('escapes referenced values in expected bodies', () => {
    expect(resolveExpectedReferences('{"v": "<<002-poll-source:response.list.0>>"}', responses, base)).toBe('{"v": "a%%b"}');
  });

  it('reads paths and URLs', () => {
    expect(getAtPath({ a: [{ b: 1 }] }, 'a.0.b')).toEqual({ found: true, value: 1 });
    expect(getAtPath({ a: 1 }, 'a.b').found).toBe(false);
    expect(urlToPath('https://stream.keboola.local/v1/x?y=1', base)).toBe('/v1/x?y=1');
    expect(urlToPath('http://other:1/z', base)).toBe('/z');
    expect(urlToPath('/already/a/path', base)).toBe('/already/a/path');
  });

  it('evaluates repeat.until', () => {
    expect(evaluateUntil("status != 'processing'", { status: 'processing' })).toBe(false);
    expect(evaluateUntil("status != 'processing'", { status: 'success' })).toBe(true);
    expect(evaluateUntil("status != 'processing'", {})).toBe(true);
    expect(evaluateUntil("a == 1 && b == 'x' || c == true", { a: 1, b: 'y', c: true })).toBe(true);
    expect(() => evaluateUntil('status in (1)', {})).toThrow(/unsupported/);
  });

  it('encodes request bodies like Go', () => {
    expect(goJsonMarshal({ my: { value: 42 }, key: 'value', '10': 1, '9': 2, h: '<&>' })).toBe(
      '{"10":1,"9":2,"h":"\\u003c\\u0026\\u003e","key":"value","my":{"value":42}}',
    );
  });
});

describe('runScenario against a mock service', () => {
  let server: http.Server;
  let port = 0;
  const seen: Array<{ method: string; url: string; headers: http.IncomingHttpHeaders; body: string }> = [];
  let polls = 0;

  beforeAll(async () => {
    server = http.createServer((req, res) => {
      let body = '';
      req.on('data', (c: Buffer) => (body += c.toString()));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', url: req.url ?? '', headers: req.headers, body });
        const json = (status: number, v: unknown) => {
          res.writeHead(status, { 'content-type': 'application/json' });
          res.end(JSON.stringify(v));
        };
        if (req.url === '/') {
          res.writeHead(301, { location: '/v1' });
          res.end();
        } else if (req.url === '/v1') json(200, { documentation: 'https://stream.keboola.local/v1/documentation', api: 'stream' });
        else if (req.method === 'POST' && req.url === '/v1/branches/5678/sources') {
          json(202, { status: 'processing', url: 'https://stream.keboola.local/v1/tasks/t/1' });
        } else if (req.url === '/v1/tasks/t/1') {
          polls++;
          json(200, polls < 3 ? { status: 'processing' } : { status: 'success', duration: 12, outputs: { url: 'https://stream.keboola.local/v1/src/a' } });
        } else if (req.url === '/v1/src/a') json(200, { projectId: 1234, sourceId: 'a' });
        else json(404, { statusCode: 404 });
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', () => r()));
    port = (server.address() as AddressInfo).port;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const step = (name: string, request: unknown, code: number, expected: string) => ({
    name,
    dir: name,
    requestText: JSON.stringify(request),
    expectedCodeText: `${code}\n`,
    expectedBodyText: `${expected}\n`,
  });
  const run = (scenario: Scenario) => {
    const agent = new http.Agent({ keepAlive: true });
    return runScenario(scenario, {
      vars: { projectId: 1234, defaultBranchId: 5678, storageApiToken: 'tok' },
      target: { host: '127.0.0.1', port, publicApiUrl: 'https://stream.keboola.local', agent },
      repeatWaitMs: 10,
    }).finally(() => agent.destroy());
  };

  it('follows redirects, polls with repeat.until, and resolves references', async () => {
    const failure = await run({
      name: 'mock/ok',
      dir: '',
      steps: [
        step('001-index', { path: '/', method: 'GET' }, 200, '{"api": "stream", "documentation": "https://stream.keboola.local/v1/documentation"}'),
        step(
          '002-create',
          {
            path: '/v1/branches/%%TEST_DEFAULT_BRANCH_ID%%/sources',
            method: 'POST',
            headers: { 'Content-Type': 'application/json', 'X-StorageApi-Token': '%%TEST_KBC_STORAGE_API_TOKEN%%' },
            body: { type: 'http', name: 'My Source' },
          },
          202,
          '{"status": "processing", "url": "https://stream.keboola.local/v1/tasks/%s"}',
        ),
        step(
          '003-poll',
          { path: '<<002-create:response.url>>', method: 'GET', repeat: { until: "status != 'processing'", timeout: 5 } },
          200,
          '{"status": "success", "duration": %d, "outputs": {"url": "%s"}}',
        ),
        step('004-get', { path: '<<003-poll:response.outputs.url>>', method: 'GET' }, 200, '{"sourceId": "a", "projectId": %%TEST_KBC_PROJECT_ID%%}'),
      ],
    });
    expect(failure).toBeUndefined();
    expect(polls).toBe(3);
    const create = seen.find((s) => s.method === 'POST');
    expect(create?.headers['x-storageapi-token']).toBe('tok');
    expect(create?.headers.accept).toBe('application/json');
    expect(create?.headers.connection).toBeUndefined();
    expect(create?.body).toBe('{"name":"My Source","type":"http"}');
  });

  it('reports the failing step, the status and the body diff', async () => {
    const failure = await run({
      name: 'mock/fail',
      dir: '',
      steps: [
        step('001-missing', { path: '/nope', method: 'GET' }, 200, '{"statusCode": 200}'),
        step('002-never', { path: '/v1', method: 'GET' }, 200, '{}'),
      ],
    });
    expect(failure?.step).toBe('001-missing');
    expect(failure?.summary).toBe('expected 200, got 404');
    expect(failure?.details).toContain('+   "statusCode": 404');
    expect(seen.some((s) => s.url === '/v1' && s.method === 'GET' && s.headers['user-agent']?.startsWith('go-resty/'))).toBe(true);
  });
});
