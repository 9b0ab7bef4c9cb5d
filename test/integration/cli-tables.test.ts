/**
 * `sluice tables export` and `sluice sql` as users run them: the built CLI (`node dist/main.js`,
 * so `npm run build` first) as a child process against a real server on a loopback port.
 * Every run also checks that the token never shows in the output.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { parse } from 'csv-parse/sync';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';
import { ProgressLine } from '../../src/cli/progress-line.js';
import { renderTable } from '../../src/cli/sql-output.js';

const MAIN = resolve('dist/main.js');
const TABLE = 'in.c-cli.clicks';
const ROWS = [['1', 'ann', '/home'], ['2', 'bob', '/a,"b"'], ['3', 'ann', '/c\nd']];
const BIG = 'in.c-cli.big';
const BIG_ROWS = 20_000;

interface Run {
  code: number | null;
  stdout: Buffer;
  stderr: string;
}

let svc: TestService;
let work: string;

/** Resolves with a port that nothing listens on (it was free a moment ago). */
async function closedPort(): Promise<number> {
  return new Promise((res, rej) => {
    const srv = createServer();
    srv.on('error', rej);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address() as { port: number };
      srv.close(() => res(port));
    });
  });
}

/**
 * Runs `sluice <args>` in `cwd` with SLUICE_URL and SLUICE_TOKEN of the test server unless `env`
 * says otherwise (a value of undefined removes the variable).
 */
async function sluice(args: string[], options: { env?: Record<string, string | undefined>; cwd?: string } = {}): Promise<Run> {
  const env: Record<string, string | undefined> = { ...process.env };
  for (const key of Object.keys(env)) if (key.startsWith('SLUICE_')) delete env[key];
  Object.assign(env, { SLUICE_URL: svc.server.address, SLUICE_TOKEN: MASTER_TOKEN }, options.env);
  for (const [key, value] of Object.entries(env)) if (value === undefined) delete env[key];
  const child = spawn(process.execPath, [MAIN, ...args], { cwd: options.cwd ?? work, env, stdio: ['ignore', 'pipe', 'pipe'] });
  const out: Buffer[] = [];
  const err: Buffer[] = [];
  child.stdout.on('data', (c: Buffer) => out.push(c));
  child.stderr.on('data', (c: Buffer) => err.push(c));
  const code = await new Promise<number | null>((res, rej) => {
    child.on('error', rej);
    child.on('close', (c) => res(c));
  });
  const run = { code, stdout: Buffer.concat(out), stderr: Buffer.concat(err).toString() };
  // The token is a secret: no run may print it, whatever happened.
  expect(run.stdout.toString('latin1')).not.toContain(MASTER_TOKEN);
  expect(run.stderr).not.toContain(MASTER_TOKEN);
  return run;
}

/** A fresh folder for one test's output files. */
function folder(name: string): string {
  const dir = join(work, name);
  mkdirSync(dir);
  return dir;
}

beforeAll(async () => {
  expect(existsSync(MAIN), `${MAIN} is missing: run "npm run build" first`).toBe(true);
  work = mkdtempSync(join(tmpdir(), 'sluice-cli-tables-'));
  svc = await TestService.start();
  const { tables } = svc.server.services;
  await tables.ensureTable(TABLE, [{ name: 'id' }, { name: 'user' }, { name: 'page' }], { metadata: {} });
  await tables.insertRows(TABLE, ROWS);
  await tables.ensureTable(BIG, [{ name: 'n' }, { name: 'text' }], { metadata: {} });
  await tables.insertRows(BIG, Array.from({ length: BIG_ROWS }, (_, i) => [String(i), `row number ${i}`]));
});

afterAll(async () => {
  await svc?.close();
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('sluice tables export', () => {
  it('writes <tableId>.csv.gz by default: gzip CSV with the header and the rows, progress and a summary on stderr', async () => {
    const dir = folder('default-name');
    const run = await sluice(['tables', 'export', TABLE], { cwd: dir });
    expect(run.stderr).toMatch(/^exporting in\.c-cli\.clicks: /m);
    expect(run.stderr).toMatch(/^exported 3 rows of in\.c-cli\.clicks to in\.c-cli\.clicks\.csv\.gz \(\d+ B\)$/m);
    expect(run.code).toBe(0);
    expect(run.stdout.length).toBe(0);
    expect(readdirSync(dir)).toEqual([`${TABLE}.csv.gz`]); // no .part left behind
    const body = readFileSync(join(dir, `${TABLE}.csv.gz`));
    expect(parse(gunzipSync(body))).toEqual([['id', 'user', 'page'], ...ROWS]);
    const size = /\((\d+) B\)/.exec(run.stderr)?.[1];
    expect(Number(size)).toBe(body.length);
  });

  it('writes plain CSV when --out ends in .csv', async () => {
    const dir = folder('plain');
    const run = await sluice(['tables', 'export', TABLE, '--out', 'clicks.csv'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const body = readFileSync(join(dir, 'clicks.csv'));
    expect(body.subarray(0, 2).toString('hex')).not.toBe('1f8b');
    expect(body.toString()).toMatch(/^id,user,page\n/);
    expect(parse(body)).toEqual([['id', 'user', 'page'], ...ROWS]);
    expect(run.stderr).toContain('exported 3 rows of in.c-cli.clicks to clicks.csv (');
  });

  it('writes Parquet with --format parquet, named <tableId>.parquet by default', async () => {
    const dir = folder('parquet');
    const run = await sluice(['tables', 'export', TABLE, '--format', 'parquet'], { cwd: dir });
    expect(run.code, run.stderr).toBe(0);
    const body = readFileSync(join(dir, `${TABLE}.parquet`));
    expect(body.subarray(0, 4).toString()).toBe('PAR1');
    expect(body.subarray(-4).toString()).toBe('PAR1');
  });

  it('passes --columns, --where-column, --where-values, --where-operator and --limit as the Keboola options', async () => {
    const dir = folder('filters');
    const eq = await sluice(['tables', 'export', TABLE, '--out', 'eq.csv', '--columns', 'page,id', '--where-column', 'user', '--where-values', 'ann,zoe'], { cwd: dir });
    expect(eq.code, eq.stderr).toBe(0);
    expect(parse(readFileSync(join(dir, 'eq.csv')))).toEqual([['page', 'id'], ['/home', '1'], ['/c\nd', '3']]);
    expect(eq.stderr).toContain('exported 2 rows of in.c-cli.clicks to eq.csv');

    const ne = await sluice(['tables', 'export', TABLE, '--out', 'ne.csv', '--columns', 'user', '--where-column', 'user', '--where-values', 'ann', '--where-operator', 'ne'], { cwd: dir });
    expect(ne.code, ne.stderr).toBe(0);
    expect(parse(readFileSync(join(dir, 'ne.csv')))).toEqual([['user'], ['bob']]);

    const limited = await sluice(['tables', 'export', BIG, '--out', 'limited.csv', '--limit', '5'], { cwd: dir });
    expect(limited.code, limited.stderr).toBe(0);
    expect(parse(readFileSync(join(dir, 'limited.csv')))).toHaveLength(6);
  });

  it('filters by time with --changed-since and --changed-until', async () => {
    const dir = folder('changed');
    const future = await sluice(['tables', 'export', TABLE, '--out', 'future.csv', '--changed-since', '2999-01-01T00:00:00Z'], { cwd: dir });
    expect(future.code, future.stderr).toBe(0);
    expect(parse(readFileSync(join(dir, 'future.csv')))).toEqual([['id', 'user', 'page']]);
    const past = await sluice(['tables', 'export', TABLE, '--out', 'past.csv', '--changed-since=-1 day', '--changed-until', '2999-01-01'], { cwd: dir });
    expect(past.code, past.stderr).toBe(0);
    expect(parse(readFileSync(join(dir, 'past.csv')))).toHaveLength(1 + ROWS.length);
  });

  it('streams a larger table to a file and to standard output with --out -', async () => {
    const dir = folder('big');
    const toFile = await sluice(['tables', 'export', BIG], { cwd: dir });
    expect(toFile.code, toFile.stderr).toBe(0);
    expect(toFile.stderr).toMatch(/^exported 20,000 rows of in\.c-cli\.big to in\.c-cli\.big\.csv\.gz \(\d+(\.\d)? kB\)$/m);
    const rows = parse(gunzipSync(readFileSync(join(dir, `${BIG}.csv.gz`)))) as string[][];
    expect(rows).toHaveLength(BIG_ROWS + 1);
    expect(rows[0]).toEqual(['n', 'text']);
    expect(new Set(rows.slice(1).map((r) => r[0])).size).toBe(BIG_ROWS);

    const toStdout = await sluice(['tables', 'export', BIG, '--out', '-'], { cwd: dir });
    expect(toStdout.code, toStdout.stderr).toBe(0);
    expect(toStdout.stderr).toMatch(/^exported 20,000 rows of in\.c-cli\.big to standard output \(/m);
    expect(parse(gunzipSync(toStdout.stdout))).toEqual(rows);
    expect(readdirSync(dir)).toEqual([`${BIG}.csv.gz`]);
  });

  it('exits 1 with the server message for a missing table, and writes nothing', async () => {
    const dir = folder('missing');
    const run = await sluice(['tables', 'export', 'in.c-cli.nope'], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('sluice: The table "in.c-cli.nope" was not found in the bucket "in.c-cli" in the project "11" (storage.tables.notFound, HTTP 404)\n');
    expect(readdirSync(dir)).toEqual([]);
  });

  it('exits 1 with the server message for an option the server refuses (HTTP 400)', async () => {
    const run = await sluice(['tables', 'export', TABLE, '--out', join(folder('bad-option'), 'x.csv'), '--columns', 'id,nope']);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^sluice: Invalid export option "columns": the table has no column "nope".* \(storage\.tables\.validation, HTTP 400\)\n$/);
  });

  it('exits 2 for a bad command line, without asking the server', async () => {
    const unknown = await sluice(['tables', 'export', TABLE, '--colums', 'id']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe('sluice: unknown option "--colums" for "sluice tables export". Did you mean --columns? (see "sluice tables export --help")\n');
    const noTable = await sluice(['tables', 'export']);
    expect(noTable.code).toBe(2);
    expect(noTable.stderr).toContain('which table?');
    const badFormat = await sluice(['tables', 'export', TABLE, '--format', 'xlsx']);
    expect(badFormat.code).toBe(2);
    expect(badFormat.stderr).toBe('sluice: --format must be csv or parquet, got "xlsx"\n');
    const valuesAlone = await sluice(['tables', 'export', TABLE, '--where-values', 'a']);
    expect(valuesAlone.code).toBe(2);
    expect(valuesAlone.stderr).toContain('--where-column');
    expect(readdirSync(work).filter((f) => f.startsWith(TABLE))).toEqual([]);
  });

  it('prints its usage with --help', async () => {
    const run = await sluice(['tables', 'export', '--help']);
    expect(run.code).toBe(0);
    expect(run.stdout.toString()).toMatch(/^Usage: sluice tables export <tableId> \[options\]/);
    expect(run.stdout.toString()).toContain('--where-operator eq|ne');
    expect(run.stdout.toString()).toContain('SLUICE_TOKEN');
  });
});

describe('sluice sql', () => {
  const query = `SELECT id, "user", page FROM "${'in.c-cli'}"."clicks" ORDER BY id`;

  it('prints CSV with a header (the default when stdout is not a terminal)', async () => {
    const byDefault = await sluice(['sql', query]);
    expect(byDefault.code, byDefault.stderr).toBe(0);
    expect(parse(byDefault.stdout)).toEqual([['id', 'user', 'page'], ...ROWS]);
    const explicit = await sluice(['sql', query, '--format', 'csv']);
    expect(explicit.stdout.toString()).toBe('id,user,page\n1,ann,/home\n2,bob,"/a,""b"""\n3,ann,"/c\nd"\n');
    expect(explicit.stderr).toBe('');
  });

  it('prints the answer as JSON', async () => {
    const run = await sluice(['sql', query, '--format', 'json']);
    expect(run.code, run.stderr).toBe(0);
    const answer = JSON.parse(run.stdout.toString());
    expect(answer.columns.map((c: { name: string }) => c.name)).toEqual(['id', 'user', 'page']);
    expect(answer).toMatchObject({ rows: ROWS, rowsCount: 3, truncated: false });
    expect(typeof answer.durationMs).toBe('number');
  });

  it('prints an aligned table with --format table, and says when the limit cut the rows', async () => {
    const run = await sluice(['sql', query, '--format', 'table', '--limit', '2']);
    expect(run.code, run.stderr).toBe(0);
    const lines = run.stdout.toString().split('\n');
    expect(lines[0]).toBe('id | user | page');
    expect(lines[1]).toBe('---+------+-------');
    expect(lines[2]).toBe('1  | ann  | /home');
    expect(lines[3]).toBe('2  | bob  | /a,"b"');
    expect(lines[4]).toMatch(/^2 rows \(\d+ ms\)$/);
    expect(lines[5]).toContain('more rows exist');
    expect(lines[5]).toContain('limit of 2 rows');

    const all = await sluice(['sql', query, '--format', 'table']);
    expect(all.stdout.toString()).toContain('3  | ann  | /c\\nd\n');
    expect(all.stdout.toString()).not.toContain('more rows exist');
  });

  it('notes a cut answer on stderr in CSV, keeping the data clean', async () => {
    const run = await sluice(['sql', query, '--limit', '1']);
    expect(run.code).toBe(0);
    expect(parse(run.stdout)).toEqual([['id', 'user', 'page'], ROWS[0]]);
    expect(run.stderr).toMatch(/^sluice: more rows exist: the answer stops at the limit of 1 rows/);
  });

  it('exits 1 with storage.sql.notReadOnly for a statement that writes', async () => {
    const run = await sluice(['sql', `DELETE FROM "in.c-cli"."clicks"`]);
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(/^sluice: .+ \(storage\.sql\.notReadOnly, HTTP 400\)\n$/);
    expect(run.stdout.length).toBe(0);
    const still = await sluice(['sql', `SELECT count(*) AS n FROM "in.c-cli"."clicks"`]);
    expect(parse(still.stdout)).toEqual([['n'], ['3']]);
  });

  it('exits 1 with the message for a wrong token', async () => {
    const run = await sluice(['sql', query], { env: { SLUICE_TOKEN: 'not-a-token' } });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe('sluice: Invalid access token (storage.tokenInvalid, HTTP 401)\n');
    const flag = await sluice(['sql', query, '--token', 'not-a-token-either']);
    expect(flag.code).toBe(1);
    expect(flag.stderr).toContain('storage.tokenInvalid');
  });

  it('exits 2 for an unknown option or a bad --limit', async () => {
    const unknown = await sluice(['sql', query, '--row-limit', '3']);
    expect(unknown.code).toBe(2);
    expect(unknown.stderr).toBe('sluice: unknown option "--row-limit" for "sluice sql" (see "sluice sql --help")\n');
    const limit = await sluice(['sql', query, '--limit', 'many']);
    expect(limit.code).toBe(2);
    expect(limit.stderr).toContain('--limit must be a whole number');
    const help = await sluice(['sql', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout.toString()).toMatch(/^Usage: sluice sql "<SELECT \.\.\.>" \[options\]/);
  });
});

describe('connection', () => {
  it('says there is no server at the URL, for both commands', async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const dir = folder('no-server');
    const line = `sluice: no server at ${url} (start one with "npx sluice serve")\n`;
    const sql = await sluice(['sql', 'SELECT 1'], { env: { SLUICE_URL: url } });
    expect(sql.code).toBe(1);
    expect(sql.stderr).toBe(line);
    const exp = await sluice(['tables', 'export', TABLE, '--url', url], { cwd: dir });
    expect(exp.code).toBe(1);
    expect(exp.stderr).toBe(line);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('reads the token from <data-dir>/master-token when none is given (--data-dir, SLUICE_DATA_DIR)', async () => {
    const dataDir = folder('data-dir');
    writeFileSync(join(dataDir, 'master-token'), `${MASTER_TOKEN}\n`);
    const noToken = { SLUICE_TOKEN: undefined };
    const byFlag = await sluice(['sql', 'SELECT 42 AS answer', '--data-dir', dataDir], { env: noToken });
    expect(byFlag.code, byFlag.stderr).toBe(0);
    expect(parse(byFlag.stdout)).toEqual([['answer'], ['42']]);
    const byEnv = await sluice(['sql', 'SELECT 42 AS answer'], { env: { ...noToken, SLUICE_DATA_DIR: dataDir } });
    expect(byEnv.code, byEnv.stderr).toBe(0);

    // ./data is the default data directory: the export works from the folder that holds it.
    const cwd = folder('default-data');
    mkdirSync(join(cwd, 'data'));
    writeFileSync(join(cwd, 'data', 'master-token'), MASTER_TOKEN);
    const exported = await sluice(['tables', 'export', TABLE, '--out', 'x.csv'], { cwd, env: noToken });
    expect(exported.code, exported.stderr).toBe(0);
    expect(parse(readFileSync(join(cwd, 'x.csv')))).toHaveLength(1 + ROWS.length);

    // The file's token is the one used: another one in it is refused.
    const wrongDir = folder('wrong-data-dir');
    writeFileSync(join(wrongDir, 'master-token'), 'some-other-token\n');
    const wrong = await sluice(['sql', 'SELECT 1', '--data-dir', wrongDir], { env: noToken });
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain('Invalid access token');
  });

  it('explains a missing token file', async () => {
    const empty = folder('no-token-file');
    const run = await sluice(['sql', 'SELECT 1', '--data-dir', empty], { env: { SLUICE_TOKEN: undefined } });
    expect(run.code).toBe(1);
    expect(run.stderr).toBe(`sluice: no token: give --token or SLUICE_TOKEN (or SLUICE_MASTER_TOKEN), or --data-dir of the server (${join(empty, 'master-token')} was not found)\n`);
  });

  it('takes the server\'s SLUICE_MASTER_TOKEN when no token is given, and SLUICE_TOKEN before it', async () => {
    const empty = folder('master-token-variable');
    const fromServerVariable = await sluice(['sql', 'SELECT 1 AS one', '--data-dir', empty], { env: { SLUICE_TOKEN: undefined, SLUICE_MASTER_TOKEN: MASTER_TOKEN } });
    expect(fromServerVariable.code, fromServerVariable.stderr).toBe(0);
    const tokenFirst = await sluice(['sql', 'SELECT 1 AS one', '--data-dir', empty], { env: { SLUICE_TOKEN: 'some-other-token', SLUICE_MASTER_TOKEN: MASTER_TOKEN } });
    expect(tokenFirst.code).toBe(1);
    expect(tokenFirst.stderr).toContain('Invalid access token');
  });

  it('never prints the token, whether it comes from the flag, the environment or the file', async () => {
    // sluice() checks every run; these are the runs most likely to echo what they were given.
    const runs = [
      await sluice(['sql', 'SELECT', '--token', MASTER_TOKEN], { env: { SLUICE_TOKEN: undefined } }),
      await sluice(['sql', 'DROP TABLE x']),
      await sluice(['tables', 'export', 'in.c-cli.nope', '--out', '-']),
      await sluice(['tables', 'export', TABLE, '--out', '-', '--format', 'csv', '--bogus']),
    ];
    expect(runs.map((r) => r.code)).toEqual([1, 1, 1, 2]);
  });
});

describe('against a stub server', () => {
  /** Answers the requests in turn with `answers` (status, JSON); notes what was asked. */
  async function stub(answers: [number, unknown][]): Promise<{ url: string; requests: string[]; close: () => Promise<void> }> {
    const requests: string[] = [];
    const server = http.createServer((req, res) => {
      requests.push(`${req.method} ${req.url} ${req.headers['x-storageapi-token'] ?? '-'}`);
      const [status, body] = answers.shift() ?? [500, { error: 'no more answers', code: 'stub', status: 'error' }];
      res.writeHead(status, { 'Content-Type': typeof body === 'string' ? 'text/html' : 'application/json' });
      res.end(typeof body === 'string' ? body : JSON.stringify(body));
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { url, requests, close: () => new Promise((r) => server.close(() => r())) };
  }

  it('follows the job at the CLI\'s URL (not the job\'s public one), shows its progress, and exits 1 with its error', async () => {
    const job = { id: 7, url: 'https://unreachable.invalid/v2/storage/jobs/7', tableId: 'in.c-x.y', results: null };
    const server = await stub([
      [202, { ...job, status: 'waiting', progress: { rows: 0, totalRows: null } }],
      [200, { ...job, status: 'processing', progress: { rows: 1200, totalRows: 10_000 } }],
      [200, { ...job, status: 'error', progress: { rows: 1200, totalRows: 10_000 }, error: { code: 'storage.tableExportFailed', message: 'The export of table "in.c-x.y" failed: disk full' } }],
    ]);
    try {
      const dir = folder('stub-job-error');
      const run = await sluice(['tables', 'export', 'in.c-x.y', '--url', server.url, '--token', 'stub-token'], { cwd: dir });
      expect(run.code).toBe(1);
      expect(run.stderr).toMatch(/^exporting in\.c-x\.y: waiting to start$/m);
      expect(run.stderr.trimEnd().split('\n').at(-1)).toBe('sluice: The export of table "in.c-x.y" failed: disk full (storage.tableExportFailed)');
      expect(server.requests).toEqual([
        'POST /v2/storage/tables/in.c-x.y/export-async stub-token',
        'GET /v2/storage/jobs/7 stub-token',
        'GET /v2/storage/jobs/7 stub-token',
      ]);
      expect(readdirSync(dir)).toEqual([]);
    } finally {
      await server.close();
    }
  });

  it('sends the Keboola option names in the JSON body', async () => {
    const bodies: unknown[] = [];
    const capture = http.createServer((req, res) => {
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        bodies.push(JSON.parse(Buffer.concat(chunks).toString()));
        res.writeHead(403, { 'Content-Type': 'application/json' });
        res.end(JSON.stringify({ error: 'You don\'t have access to the resource.', code: 'accessDenied', status: 'error' }));
      });
    });
    await new Promise<void>((r) => capture.listen(0, '127.0.0.1', r));
    try {
      const url = `http://127.0.0.1:${(capture.address() as AddressInfo).port}`;
      const run = await sluice(['tables', 'export', 'in.c-x.y', '--url', url, '--out', join(folder('stub-body'), 'y.csv'), '--columns', 'a, b',
        '--where-column', 'a', '--where-values', '1,2', '--where-operator', 'ne', '--changed-since=-2 hours', '--changed-until', '1700000000', '--limit', '10']);
      expect(run.code).toBe(1);
      expect(run.stderr).toBe('sluice: You don\'t have access to the resource. (accessDenied, HTTP 403)\n');
      expect(bodies).toEqual([{ format: 'rfc', gzip: false, columns: ['a', 'b'], whereColumn: 'a', whereValues: ['1', '2'], whereOperator: 'ne', changedSince: '-2 hours', changedUntil: '1700000000', limit: 10 }]);
      const sql = await sluice(['sql', 'SELECT 1', '--url', url, '--limit', '5', '--timeout', '2.5']);
      expect(sql.code).toBe(1);
      expect(bodies[1]).toEqual({ query: 'SELECT 1', limit: 5, timeout: 2.5 });
    } finally {
      await new Promise((r) => capture.close(r));
    }
  });

  it('reports an answer that is not the Storage envelope by its status', async () => {
    const server = await stub([[502, '<html><body>Bad Gateway</body></html>']]);
    try {
      const run = await sluice(['sql', 'SELECT 1', '--url', server.url]);
      expect(run.code).toBe(1);
      expect(run.stderr).toBe('sluice: HTTP 502 Bad Gateway: <html><body>Bad Gateway</body></html>\n');
    } finally {
      await server.close();
    }
  });
});

describe('progress line', () => {
  it('rewrites one line on a terminal (at most every 100 ms), and logs a line at most every 2 s otherwise', () => {
    const written: string[] = [];
    let now = 10_000;
    const tty = new ProgressLine({ isTTY: true, write: (s: string) => written.push(s) }, () => now);
    tty.update('exporting t: 1 / 4 rows (25 %)');
    now += 200;
    tty.update('exporting t: 1 / 4 rows (25 %)');
    tty.update('exporting t: 2 / 4 rows (50 %)');
    now += 50;
    tty.update('exporting t: 3 / 4 rows (75 %)');
    tty.clear();
    expect(written).toEqual(['\rexporting t: 1 / 4 rows (25 %)\x1b[K', '\rexporting t: 2 / 4 rows (50 %)\x1b[K', '\r\x1b[K']);

    const logged: string[] = [];
    const log = new ProgressLine({ isTTY: false, write: (s: string) => logged.push(s) }, () => now);
    log.update('a');
    now += 1_000;
    log.update('b');
    now += 1_500;
    log.update('c');
    log.clear();
    expect(logged).toEqual(['a\n', 'c\n']);
  });

  it('renders an empty answer as a header and a count', () => {
    const text = renderTable({ columns: [{ name: 'n', type: 'BIGINT' }], rows: [], rowsCount: 0, truncated: false, durationMs: 1234 });
    expect(text).toBe('n\n-\n0 rows (1,234 ms)\n');
  });
});
