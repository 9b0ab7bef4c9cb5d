/**
 * Loading and running one scenario of the Stream API conformance suite (see the suite's
 * FORMAT.md; test/helpers/shared-dir.ts says where the suite is): steps `NNN-name/` in name
 * order, each with `request.json`, `expected-http-code` and `expected-response.json`.
 */
import { readdir, readFile, stat } from 'node:fs/promises';
import http from 'node:http';
import { join } from 'node:path';
import zlib from 'node:zlib';
import { matchBody } from './match.js';

// ---------------------------------------------------------------------------------------------
// Loading

export interface RequestDef {
  path: string;
  method: string;
  headers?: Record<string, string>;
  body?: unknown;
  repeat?: { until?: string; timeout?: number; wait?: number };
}

export interface Step {
  /** The step directory name, e.g. `003-get-source`; references use it. */
  name: string;
  dir: string;
  /** request.json as text; placeholders are substituted when the step runs. */
  requestText: string;
  expectedCodeText: string;
  expectedBodyText: string;
}

export interface Scenario {
  /** `<group>/<scenario>`, e.g. `source/create-001-minimal-and-get`. */
  name: string;
  dir: string;
  steps: Step[];
  /**
   * `initial-etcd-kvs.txt` as text (placeholders not replaced), when the scenario has one: state
   * the reference loaded into etcd before the first step (etcd-fixtures.ts loads it).
   */
  etcdFixtureText?: string;
}

/** The file of a scenario with the reference's initial etcd state. */
export const ETCD_FIXTURE_FILE = 'initial-etcd-kvs.txt';

const STEP_DIR = /^\d{3}-/;
const byName = (a: string, b: string): number => (a < b ? -1 : a > b ? 1 : 0);

async function isDir(path: string): Promise<boolean> {
  try {
    return (await stat(path)).isDirectory();
  } catch {
    return false;
  }
}

/** All scenario names (`group/scenario`) under the cases directory, sorted. */
export async function listScenarios(casesDir: string): Promise<string[]> {
  const names: string[] = [];
  for (const group of (await readdir(casesDir)).sort(byName)) {
    if (!(await isDir(join(casesDir, group)))) continue;
    for (const scenario of (await readdir(join(casesDir, group))).sort(byName)) {
      if (await isDir(join(casesDir, group, scenario))) names.push(`${group}/${scenario}`);
    }
  }
  return names;
}

export async function loadScenario(casesDir: string, name: string): Promise<Scenario> {
  const dir = join(casesDir, name);
  const entries = await readdir(dir);
  const stepNames = entries.filter((n) => STEP_DIR.test(n)).sort(byName);
  const steps: Step[] = [];
  for (const stepName of stepNames) {
    const stepDir = join(dir, stepName);
    if (!(await isDir(stepDir))) continue;
    const read = (file: string): Promise<string> => readFile(join(stepDir, file), 'utf8');
    steps.push({
      name: stepName,
      dir: stepDir,
      requestText: await read('request.json'),
      expectedCodeText: await read('expected-http-code'),
      expectedBodyText: await read('expected-response.json'),
    });
  }
  const scenario: Scenario = { name, dir, steps };
  if (entries.includes(ETCD_FIXTURE_FILE)) scenario.etcdFixtureText = await readFile(join(dir, ETCD_FIXTURE_FILE), 'utf8');
  return scenario;
}

// ---------------------------------------------------------------------------------------------
// Placeholders and references

export interface Vars {
  projectId: number;
  defaultBranchId: number;
  storageApiToken: string;
}

/** Replaces `%%TEST_...%%` placeholders; an unknown placeholder is an error. */
export function substitutePlaceholders(text: string, vars: Vars): string {
  const values: Record<string, string> = {
    TEST_KBC_PROJECT_ID: String(vars.projectId),
    TEST_DEFAULT_BRANCH_ID: String(vars.defaultBranchId),
    TEST_KBC_STORAGE_API_TOKEN: vars.storageApiToken,
  };
  return text.replace(/%%([A-Z][A-Z0-9_]*)%%/g, (whole, name: string) => {
    if (!Object.prototype.hasOwnProperty.call(values, name)) throw new Error(`unknown placeholder ${whole}`);
    return values[name];
  });
}

/** The value at a dotted path (`a.b.0.c`) of a JSON value; `found: false` when absent. */
export function getAtPath(value: unknown, path: string): { found: boolean; value?: unknown } {
  let cur: unknown = value;
  for (const part of path.split('.')) {
    if (Array.isArray(cur) && /^\d+$/.test(part) && Number(part) < cur.length) cur = cur[Number(part)];
    else if (typeof cur === 'object' && cur !== null && !Array.isArray(cur) && Object.prototype.hasOwnProperty.call(cur, part)) {
      cur = (cur as Record<string, unknown>)[part];
    } else return { found: false };
  }
  return { found: true, value: cur };
}

const REFERENCE = /<<([^<>:]+):response\.([^<>]+)>>/g;

/**
 * Replaces `<<NNN-step:response.a.b>>` by the value at `a.b` of that earlier step's response
 * body. With `asPath`, a URL value becomes a request path: the public API base URL is stripped
 * (any other absolute URL is reduced to its path and query).
 */
export function resolveReferences(
  text: string,
  responses: ReadonlyMap<string, unknown>,
  opts: { publicApiUrl: string; asPath?: boolean; escape?: (s: string) => string },
): string {
  return text.replace(REFERENCE, (whole, step: string, path: string) => {
    if (!responses.has(step)) throw new Error(`reference ${whole}: no earlier step "${step}" in this scenario`);
    const got = getAtPath(responses.get(step), path);
    if (!got.found) throw new Error(`reference ${whole}: the response of "${step}" has no "${path}"`);
    const v = got.value;
    const s = typeof v === 'string' ? v : JSON.stringify(v);
    const out = opts.asPath ? urlToPath(s, opts.publicApiUrl) : s;
    return opts.escape ? opts.escape(out) : out;
  });
}

/** `https://stream.keboola.local/v1/x?y` -> `/v1/x?y` (public API base stripped). */
export function urlToPath(value: string, publicApiUrl: string): string {
  const base = publicApiUrl.replace(/\/+$/, '');
  if (value === base) return '/';
  if (value.startsWith(`${base}/`) || value.startsWith(`${base}?`)) return value.slice(base.length);
  if (/^[a-z][a-z0-9+.-]*:\/\//i.test(value)) {
    const u = new URL(value);
    return u.pathname + u.search;
  }
  return value;
}

/** Substitutes references in every string of a request definition; the path becomes a path. */
export function resolveRequest(req: RequestDef, responses: ReadonlyMap<string, unknown>, publicApiUrl: string): RequestDef {
  const inStrings = (v: unknown): unknown => {
    if (typeof v === 'string') return resolveReferences(v, responses, { publicApiUrl });
    if (Array.isArray(v)) return v.map(inStrings);
    if (typeof v === 'object' && v !== null) {
      return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, inStrings(x)]));
    }
    return v;
  };
  return {
    ...req,
    path: resolveReferences(req.path, responses, { publicApiUrl, asPath: true }),
    headers: req.headers ? (inStrings(req.headers) as Record<string, string>) : undefined,
    body: inStrings(req.body),
  };
}

/**
 * Replaces references in an expected body (they stand inside a JSON string there): values go in
 * JSON-escaped, with `%` doubled so that they are not read as wildcards.
 */
export function resolveExpectedReferences(text: string, responses: ReadonlyMap<string, unknown>, publicApiUrl: string): string {
  return resolveReferences(text, responses, {
    publicApiUrl,
    escape: (s) => JSON.stringify(s).slice(1, -1).replace(/%/g, '%%'),
  });
}

export function parseRequest(text: string, where: string): RequestDef {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    throw new Error(`${where}: invalid JSON: ${(err as Error).message}`);
  }
  const r = parsed as Partial<RequestDef>;
  if (typeof r !== 'object' || r === null || typeof r.path !== 'string' || typeof r.method !== 'string') {
    throw new Error(`${where}: "path" and "method" are required strings`);
  }
  if (r.headers !== undefined && (typeof r.headers !== 'object' || r.headers === null)) {
    throw new Error(`${where}: "headers" must be an object`);
  }
  return r as RequestDef;
}

// ---------------------------------------------------------------------------------------------
// repeat.until

/**
 * Evaluates a `repeat.until` expression against a response body. Supported: comparisons
 * `<field.path> (==|!=) <'string'|"string"|number|true|false|null>` joined by `&&` / `||`
 * (`&&` binds tighter). A missing field compares as null.
 */
export function evaluateUntil(expr: string, body: unknown): boolean {
  const evalCmp = (cmp: string): boolean => {
    const m = /^\s*([A-Za-z_][\w.]*)\s*(==|!=)\s*('(?:[^'\\]|\\.)*'|"(?:[^"\\]|\\.)*"|-?\d+(?:\.\d+)?|true|false|null)\s*$/.exec(cmp);
    if (!m) throw new Error(`unsupported repeat.until expression: ${JSON.stringify(expr)}`);
    const got = getAtPath(body, m[1]);
    const actual = got.found ? got.value : null;
    const lit = m[3];
    const expected: unknown = lit.startsWith("'") ? lit.slice(1, -1).replace(/\\(.)/g, '$1') : JSON.parse(lit);
    const equal = actual === expected;
    return m[2] === '==' ? equal : !equal;
  };
  return expr.split('||').some((conj) => conj.split('&&').every(evalCmp));
}

// ---------------------------------------------------------------------------------------------
// HTTP

export interface HttpResponse {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/**
 * Headers the reference runner's HTTP client (go-resty on Go's net/http) sent. The test
 * endpoint echoes request headers, and the cases expect exactly these.
 */
const CLIENT_USER_AGENT = 'go-resty/2.16.5 (https://github.com/go-resty/resty)';
const isJsonType = (ct: string): boolean => /(application|text)\/(.+\+)?json/i.test(ct);

export interface Target {
  host: string;
  port: number;
  publicApiUrl: string;
  agent: http.Agent;
}

/**
 * JSON as Go's json.Marshal writes a decoded `map[string]any`: keys sorted at every level, and
 * `<`, `>`, `&`, U+2028, U+2029 escaped. The reference client sent request bodies this way.
 */
export function goJsonMarshal(v: unknown): string {
  const enc = (x: unknown): string => {
    if (Array.isArray(x)) return `[${x.map(enc).join(',')}]`;
    if (typeof x === 'object' && x !== null) {
      const o = x as Record<string, unknown>;
      const keys = Object.keys(o).sort((a, b) => (a < b ? -1 : a > b ? 1 : 0));
      return `{${keys.map((k) => `${JSON.stringify(k)}:${enc(o[k])}`).join(',')}}`;
    }
    return JSON.stringify(x) ?? 'null';
  };
  const escapes: Record<string, string> = { '<': '\\u003c', '>': '\\u003e', '&': '\\u0026', '\u2028': '\\u2028', '\u2029': '\\u2029' };
  return enc(v).replace(/[<>&\u2028\u2029]/g, (c) => escapes[c]);
}

function decode(body: Buffer, encoding: string | undefined): Buffer {
  switch ((encoding ?? '').trim().toLowerCase()) {
    case 'gzip':
    case 'x-gzip':
      return zlib.gunzipSync(body);
    case 'deflate':
      return zlib.inflateSync(body);
    case 'br':
      return zlib.brotliDecompressSync(body);
    default:
      return body;
  }
}

function rawRequest(
  target: Target,
  method: string,
  path: string,
  headers: Record<string, string>,
  body: Buffer | undefined,
  timeoutMs: number,
): Promise<HttpResponse & { location?: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: target.host, port: target.port, method, path, headers, agent: target.agent },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => {
          try {
            const raw = Buffer.concat(chunks);
            const text = decode(raw, res.headers['content-encoding']).toString('utf8');
            resolve({ status: res.statusCode ?? 0, headers: res.headers, body: text, location: res.headers.location });
          } catch (err) {
            reject(err);
          }
        });
      },
    );
    // Go's client sends no Connection header; Node would add "Connection: keep-alive".
    req.removeHeader('Connection');
    req.setTimeout(timeoutMs, () => req.destroy(new Error(`no response within ${timeoutMs / 1000} s`)));
    req.on('error', reject);
    req.end(body);
  });
}

/**
 * Sends a request like the reference client: JSON body for objects, raw string bodies as given,
 * `Accept` = the JSON content type, `Accept-Encoding: gzip`, and redirects followed (at most 10;
 * 301/302/303 turn a non-GET into a GET without body, 307/308 keep it).
 */
export async function sendRequest(target: Target, req: RequestDef, timeoutMs = 30_000): Promise<HttpResponse> {
  const headers: Record<string, string> = { ...(req.headers ?? {}) };
  const has = (name: string): string | undefined => {
    const k = Object.keys(headers).find((h) => h.toLowerCase() === name.toLowerCase());
    return k === undefined ? undefined : headers[k];
  };
  let body: Buffer | undefined;
  if (req.body !== undefined && req.body !== null) {
    if (typeof req.body === 'string') {
      body = Buffer.from(req.body, 'utf8');
      if (has('Content-Type') === undefined) headers['Content-Type'] = 'text/plain; charset=utf-8';
    } else {
      body = Buffer.from(goJsonMarshal(req.body), 'utf8');
      if (has('Content-Type') === undefined) headers['Content-Type'] = 'application/json';
    }
  }
  if (has('User-Agent') === undefined) headers['User-Agent'] = CLIENT_USER_AGENT;
  const ct = has('Content-Type');
  if (has('Accept') === undefined && ct !== undefined && isJsonType(ct)) headers.Accept = ct;
  if (has('Accept-Encoding') === undefined) headers['Accept-Encoding'] = 'gzip';
  const method = req.method.toUpperCase();
  if (body !== undefined) headers['Content-Length'] = String(body.length);
  else if (['POST', 'PUT', 'PATCH'].includes(method)) headers['Content-Length'] = '0';

  let curMethod = method;
  let curPath = req.path;
  let curBody = body;
  for (let hop = 0; ; hop++) {
    const res = await rawRequest(target, curMethod, curPath, headers, curBody, timeoutMs);
    if (![301, 302, 303, 307, 308].includes(res.status) || !res.location || hop >= 10) {
      return { status: res.status, headers: res.headers, body: res.body };
    }
    const next = redirectPath(res.location, curPath, target);
    if (next === undefined) return { status: res.status, headers: res.headers, body: res.body };
    curPath = next;
    if (res.status !== 307 && res.status !== 308 && curMethod !== 'GET' && curMethod !== 'HEAD') {
      curMethod = 'GET';
      curBody = undefined;
      for (const k of Object.keys(headers)) {
        if (['content-type', 'content-length'].includes(k.toLowerCase())) delete headers[k];
      }
    }
  }
}

/** The local path of a redirect target, or undefined if it points to another host. */
function redirectPath(location: string, currentPath: string, target: Target): string | undefined {
  const base = target.publicApiUrl.replace(/\/+$/, '');
  if (location === base || location.startsWith(`${base}/`) || location.startsWith(`${base}?`)) {
    return location.slice(base.length) || '/';
  }
  const local = new URL(`http://${target.host}:${target.port}`);
  const u = new URL(location, new URL(currentPath, local));
  if (u.host !== local.host) return undefined;
  return u.pathname + u.search;
}

// ---------------------------------------------------------------------------------------------
// Running a scenario

export interface StepFailure {
  step: string;
  /** Short reason for the summary line, e.g. `expected 200, got 404`. */
  summary: string;
  /** Multi-line details: request, response, diff. */
  details: string;
}

export interface RunOptions {
  vars: Vars;
  target: Target;
  /** Pause between repeated requests (the reference waited 3 s; the cases do not depend on it). */
  repeatWaitMs?: number;
}

const indent = (s: string, by = '    '): string => s.replace(/^/gm, by);
const truncate = (s: string, max = 4000): string => (s.length > max ? `${s.slice(0, max)}\n... (${s.length - max} more chars)` : s);

/** Runs the steps in order; stops at the first failing step. */
export async function runScenario(scenario: Scenario, opts: RunOptions): Promise<StepFailure | undefined> {
  const responses = new Map<string, unknown>();
  const wait = opts.repeatWaitMs ?? 100;
  for (const step of scenario.steps) {
    let req: RequestDef;
    let expectedBody: string;
    let expectedCode: number;
    try {
      const raw = parseRequest(substitutePlaceholders(step.requestText, opts.vars), `${step.name}/request.json`);
      req = resolveRequest(raw, responses, opts.target.publicApiUrl);
      expectedBody = resolveExpectedReferences(
        substitutePlaceholders(step.expectedBodyText, opts.vars),
        responses,
        opts.target.publicApiUrl,
      );
      expectedCode = Number(step.expectedCodeText.trim());
      if (!Number.isInteger(expectedCode)) throw new Error(`${step.name}/expected-http-code: not a number: ${JSON.stringify(step.expectedCodeText)}`);
    } catch (err) {
      return { step: step.name, summary: (err as Error).message, details: '' };
    }

    const describeReq = `${req.method} ${req.path}${req.body !== undefined ? `\n${truncate(typeof req.body === 'string' ? req.body : JSON.stringify(req.body))}` : ''}`;
    let res: HttpResponse;
    try {
      const deadline = Date.now() + (req.repeat?.timeout ?? 60) * 1000;
      for (;;) {
        res = await sendRequest(opts.target, req);
        if (!req.repeat?.until) break;
        let body: unknown = {};
        try {
          body = res.body.trim() === '' ? {} : JSON.parse(res.body);
        } catch {
          break; // not JSON: the condition cannot be evaluated, the match below reports it
        }
        if (evaluateUntil(req.repeat.until, body)) break;
        if (Date.now() + wait > deadline) break;
        await new Promise((r) => setTimeout(r, wait));
      }
    } catch (err) {
      return {
        step: step.name,
        summary: `request failed: ${(err as Error).message}`,
        details: `request:\n${indent(describeReq)}`,
      };
    }

    // Remember the body for later references (the reference kept `{}` for an empty body).
    try {
      responses.set(step.name, res.body.trim() === '' ? {} : JSON.parse(res.body));
    } catch {
      responses.set(step.name, res.body);
    }

    const codeOk = res.status === expectedCode;
    const bodyResult = matchBody(expectedBody, res.body);
    if (codeOk && bodyResult.ok) continue;

    const parts = [`request:\n${indent(describeReq)}`];
    if (!codeOk) parts.push(`status: expected ${expectedCode}, got ${res.status}`);
    if (!bodyResult.ok) {
      parts.push(`body: ${bodyResult.reason}`);
      if (bodyResult.diff) parts.push(indent(bodyResult.diff));
    } else {
      parts.push('body: matches');
    }
    return {
      step: step.name,
      summary: !codeOk ? `expected ${expectedCode}, got ${res.status}` : `body mismatch at ${bodyResult.reason}`,
      details: parts.join('\n'),
    };
  }
  return undefined;
}
