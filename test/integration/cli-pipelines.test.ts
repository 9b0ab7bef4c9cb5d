/**
 * `sluice pull | diff | push` as users run them: the built CLI (`node dist/main.js`) as a child
 * process against two real servers (A, where the pipeline is made through the API, and B, empty),
 * round-tripping sources and sinks of both types with mappings, filters and settings; then edits,
 * deletes only with --delete, and files that are refused before anything changes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { spawn } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { MASTER_TOKEN, TestService } from '../helpers/service.js';

const MAIN = resolve('dist/main.js');

interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

let a: TestService;
let b: TestService;
let work: string;
const B = (svc: TestService) => `/v1/branches/${svc.branchId}`;

function sluice(svc: TestService, args: string[]): Promise<Run> {
  const env: Record<string, string> = { PATH: process.env.PATH ?? '', SLUICE_URL: svc.server.address, SLUICE_TOKEN: MASTER_TOKEN };
  const child = spawn(process.execPath, [MAIN, ...args], { env, cwd: work, stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (d) => (stdout += d));
  child.stderr.on('data', (d) => (stderr += d));
  return new Promise((res, rej) => {
    child.on('error', rej);
    child.on('close', (code) => res({ code, stdout, stderr }));
  });
}

const files = (dir: string) => Object.fromEntries(readdirSync(join(work, dir)).sort().map((f) => [f, readFileSync(join(work, dir, f), 'utf8')]));

/** A source or sink as the API answers it, less what differs between servers by design (ids, times, versions, secrets). */
function comparable(entity: Record<string, unknown>): Record<string, unknown> {
  const { projectId: _p, branchId: _b, version: _v, created: _c, http: _h, otlp: _o, disabled, ...rest } = entity;
  return { ...rest, disabled: disabled !== undefined };
}

async function branchOf(svc: TestService): Promise<unknown> {
  const sources = (await svc.call('GET', `${B(svc)}/sources`)).json.sources as { sourceId: string }[];
  return Promise.all(sources.map(async (s) => {
    const path = `${B(svc)}/sources/${s.sourceId}`;
    const sinks = (await svc.call('GET', `${path}/sinks`)).json.sinks as { sinkId: string }[];
    const overrides = async (p: string) => ((await svc.call('GET', `${p}/settings`)).json.settings as { key: string; value: unknown; overwritten: boolean }[]).filter((x) => x.overwritten);
    return {
      source: comparable(s as never),
      settings: await overrides(path),
      sinks: await Promise.all(sinks.map(async (k) => ({ sink: comparable(k as never), settings: await overrides(`${path}/sinks/${k.sinkId}`) }))),
    };
  }));
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'sluice-pipelines-'));
  [a, b] = await Promise.all([TestService.start(), TestService.start({ projectId: 12, branchId: 23 })]);
  const api = `${B(a)}/sources`;
  await a.task('POST', api, { json: { sourceId: 'web', name: 'Web shop', type: 'http', description: 'Clicks and views\nfrom the shop: "all of them"' } });
  await a.task('POST', api, { json: { sourceId: 'telemetry', name: 'Telemetry', type: 'otlp' } });
  await a.task('POST', api, { json: { sourceId: 'quiet', name: 'Quiet', type: 'http' } });
  await a.task('PUT', `${api}/quiet/disable`);
  await a.task('POST', `${api}/web/sinks`, {
    json: {
      sinkId: 'views', name: 'Views', type: 'table', description: 'one row a view',
      table: {
        type: 'keboola', tableId: 'in.c-web.views',
        mapping: {
          columns: [
            { type: 'uuid', name: 'id', primaryKey: true },
            { type: 'datetime', name: 'at', dataType: 'TIMESTAMP' },
            { type: 'path', name: 'page', path: 'page', defaultValue: '/', rawString: true },
            { type: 'template', name: 'big', template: { language: 'jsonnet', content: 'local n = Body("n");\nn > 10' }, dataType: 'BOOLEAN' },
          ],
          filter: { language: 'jsonnet', content: 'Body("kind") == "view"' },
        },
      },
    },
  });
  await a.task('POST', `${api}/web/sinks`, { json: { sinkId: 'raw', name: 'Raw', type: 'table', table: { type: 'keboola', tableId: 'in.c-web.raw', mapping: { columns: [{ type: 'body', name: 'body' }, { type: 'headers', name: 'headers', dataType: 'JSON' }, { type: 'ip', name: 'ip' }] } } } });
  await a.task('POST', `${api}/telemetry/sinks`, { json: { sinkId: 'logs', name: 'Logs', type: 'table', allowedSignals: ['logs'], table: { type: 'keboola', tableId: 'in.c-telemetry.logs', mapping: { columns: [{ type: 'body', name: 'record', dataType: 'JSON' }] } } } });
  await a.task('POST', `${api}/telemetry/sinks`, { json: { sinkId: 'spans', name: 'Spans', type: 'table', allowedSignals: ['traces'], table: { type: 'keboola', tableId: 'in.c-telemetry.spans', mapping: { columns: [{ type: 'path', name: 'name', path: 'name' }] } } } });
  await a.task('PUT', `${api}/telemetry/sinks/spans/disable`);
  await a.task('PATCH', `${api}/web/settings`, { json: { settings: [{ key: 'storage.level.target.import.trigger.interval', value: '2m' }, { key: 'source.quota.recordsPerSecond', value: 500 }] } });
  await a.task('PATCH', `${api}/web/sinks/views/settings`, { json: { settings: [{ key: 'storage.level.staging.upload.trigger.count', value: 500 }, { key: 'storage.level.local.encoding.sync.wait', value: false }] } });
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  if (work) rmSync(work, { recursive: true, force: true });
});

describe('sluice pull | diff | push between two servers', () => {
  it('pulls one file per source, without a secret, and a second pull changes no byte', async () => {
    const pulled = await sluice(a, ['pull']);
    expect(pulled).toMatchObject({ code: 0, stderr: '' });
    expect(pulled.stdout).toContain('pulled 3 sources and 4 sinks of branch default at ');
    expect(pulled.stdout).toContain('into pipelines/ (3 written, 0 unchanged, 0 removed)');
    const first = files('pipelines');
    expect(Object.keys(first)).toEqual(['quiet.yaml', 'telemetry.yaml', 'web.yaml']);
    const secrets: string[] = [MASTER_TOKEN, 'https://in.test'];
    for (const id of ['web', 'telemetry', 'quiet']) {
      const source = (await a.call('GET', `${B(a)}/sources/${id}`)).json;
      if (source.http) secrets.push(source.http.url, new URL(source.http.url).pathname.split('/').pop()!);
      if (source.otlp) secrets.push(source.otlp.secret, source.otlp.url);
    }
    for (const [name, text] of Object.entries(first)) {
      for (const secret of secrets) expect(text.includes(secret), `${name} holds ${secret}`).toBe(false);
      expect(text).not.toMatch(/^\s*(projectId|branchId|version|created|hash|http|otlp):/m);
    }
    expect(first['quiet.yaml']).toContain('\ndisabled: true\n');
    expect(first['web.yaml']).toContain('  source.quota.recordsPerSecond: 500\n  storage.level.target.import.trigger.interval: 2m\n');

    const again = await sluice(a, ['pull']);
    expect(again.stdout).toContain('(0 written, 3 unchanged, 0 removed)');
    expect(files('pipelines')).toEqual(first);
  });

  it('diff against an empty server lists the creates (exit 1); push --dry-run changes nothing', async () => {
    const diff = await sluice(b, ['diff']);
    expect(diff.code).toBe(1);
    expect(diff.stdout.split('\n')).toEqual(expect.arrayContaining([
      'source web (pipelines/web.yaml): create, http source "Web shop", 2 sinks',
      '  sink views: create, into in.c-web.views, 4 columns',
      '  sink spans: create, into in.c-telemetry.spans, 1 column, disabled',
      '7 changes: 7 to create',
    ]));
    const json = JSON.parse((await sluice(b, ['diff', '--format', 'json'])).stdout);
    expect(json).toMatchObject({ directory: 'pipelines/', branch: 'default', differs: true });
    expect(json.changes).toHaveLength(7);

    const dry = await sluice(b, ['push', '--dry-run']);
    expect(dry.code).toBe(0);
    expect(dry.stdout).toContain('dry run: nothing was changed\n');
    expect((await b.call('GET', `${B(b)}/sources`)).json.sources).toEqual([]);
  });

  it('push makes B match A; then diff exits 0 and a second push does nothing', async () => {
    const pushed = await sluice(b, ['push']);
    expect(pushed.stderr).toBe('');
    expect(pushed.code).toBe(0);
    expect(pushed.stdout).toContain('created source web\n');
    expect(pushed.stdout).toContain('created sink telemetry/spans\nupdated sink telemetry/spans: disabled\n');
    expect(await branchOf(b)).toEqual(await branchOf(a));
    // Each server keeps its own ingestion secret.
    const [ta, tb] = await Promise.all([a.call('GET', `${B(a)}/sources/telemetry`), b.call('GET', `${B(b)}/sources/telemetry`)]);
    expect(tb.json.otlp.secret).toMatch(/\S{20,}/);
    expect(tb.json.otlp.secret).not.toBe(ta.json.otlp.secret);

    expect(await sluice(b, ['diff'])).toMatchObject({ code: 0, stdout: 'no differences: the server matches pipelines/ (3 sources, 4 sinks)\n' });
    expect(await sluice(b, ['push'])).toMatchObject({ code: 0, stdout: 'nothing to push: the server matches pipelines/ (3 sources, 4 sinks)\n' });
    const versions = (await b.call('GET', `${B(b)}/sources/web/sinks/views/versions`)).json.versions.length;
    await sluice(b, ['push']);
    expect((await b.call('GET', `${B(b)}/sources/web/sinks/views/versions`)).json.versions.length).toBe(versions);
  });

  it('shows an edit, pushes it, and deletes a sink no file has only with --delete', async () => {
    const file = join(work, 'pipelines', 'web.yaml');
    const text = readFileSync(file, 'utf8');
    // The mapping of "views" changes, a setting is dropped, and the sink "raw" is removed.
    const edited = text.replace('path: page\n', 'path: url.page\n').replace('  source.quota.recordsPerSecond: 500\n', '')
      .replace(/ {2}- sinkId: raw\n(?: {4}.*\n)+/, '');
    expect(edited).not.toContain('sinkId: raw');
    writeFileSync(file, edited);
    const diff = await sluice(b, ['diff']);
    expect(diff.code).toBe(1);
    expect(diff.stdout.split('\n')).toEqual([
      'source web (pipelines/web.yaml): update',
      '    settings["source.quota.recordsPerSecond"]: 500 -> (default)',
      '  sink views: update',
      '      table.mapping.columns["page"].path: "page" -> "url.page"',
      '  sink raw: would delete with --delete (on the server, not in the file)',
      '3 changes: 2 to update, 1 only with --delete',
      '',
    ]);

    const pushed = await sluice(b, ['push']);
    expect(pushed.code).toBe(0);
    expect(pushed.stdout).toBe('updated source web: settings\nupdated sink web/views: table.mapping\n'
      + 'pushed pipelines/ to branch default: 2 changes; 1 source or sink on the server that no file has: kept (--delete deletes them)\n');
    expect((await b.call('GET', `${B(b)}/sources/web/sinks/raw`)).status).toBe(200);
    const sink = (await b.call('GET', `${B(b)}/sources/web/sinks/views`)).json;
    expect(sink.table.mapping.columns[2]).toEqual({ type: 'path', name: 'page', path: 'url.page', defaultValue: '/', rawString: true });
    const quota = ((await b.call('GET', `${B(b)}/sources/web/settings`)).json.settings as { key: string; overwritten: boolean }[]).find((s) => s.key === 'source.quota.recordsPerSecond');
    expect(quota?.overwritten ?? false).toBe(false);
    expect((await sluice(b, ['diff'])).code).toBe(1);

    const deleted = await sluice(b, ['push', '--delete']);
    expect(deleted).toMatchObject({ code: 0, stdout: 'deleted sink web/raw (not in the file; its table stays)\npushed pipelines/ to branch default: 1 change\n' });
    expect((await b.call('GET', `${B(b)}/sources/web/sinks/raw`)).status).toBe(404);
    expect((await sluice(b, ['diff'])).code).toBe(0);

    // Back in the file: the deleted sink is restored, not created again.
    writeFileSync(file, text);
    expect((await sluice(b, ['diff'])).stdout).toContain('  sink raw: restore: deleted on the server: undeleted, then updated to the file\n');
    const restored = await sluice(b, ['push']);
    expect(restored.stdout).toContain('restored sink web/raw (it was deleted on the server)\n');
    expect((await sluice(b, ['diff'])).code).toBe(0);
    expect(await branchOf(b)).toEqual(await branchOf(a));
  });

  it('refuses bad files with the file and path named, and changes nothing', async () => {
    cpSync(join(work, 'pipelines'), join(work, 'bad'), { recursive: true });
    const web = join(work, 'bad', 'web.yaml');
    writeFileSync(web, readFileSync(web, 'utf8').replace('name: Web shop', 'name: Changed').replace('type: datetime', 'type: datetim'));
    writeFileSync(join(work, 'bad', 'quiet.yaml'), 'sourceId: quiet\ntype: http\nname: [Quiet\n');
    const before = await branchOf(b);
    for (const args of [['push', 'bad'], ['diff', 'bad']]) {
      const run = await sluice(b, args);
      expect(run.code).toBe(args[0] === 'push' ? 1 : 2);
      expect(run.stdout).toBe('');
      const lines = run.stderr.split('\n');
      expect(lines[0]).toBe('sluice: bad/quiet.yaml:4:1: not valid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]');
      expect(lines[1]).toMatch(/^sluice: bad\/web\.yaml: sinks\[1\]\.table\.mapping\.columns\[1\]\.type: "datetim" is not a column type; did you mean "datetime"\? .* \(line \d+\)$/);
      expect(lines[2]).toBe('sluice: 2 problems in the pipeline files; nothing was changed');
    }
    expect(await branchOf(b)).toEqual(before);
  });

  it('refuses a YAML bomb and a file over --max-file-size, quickly', async () => {
    const dir = join(work, 'hostile');
    cpSync(join(work, 'pipelines'), dir, { recursive: true });
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 10; i++) levels.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9).fill(`*${String.fromCharCode(96 + i)}`).join(',')}]`);
    writeFileSync(join(dir, 'bomb.yaml'), `sourceId: bomb\ntype: http\nname: Bomb\n${levels.join('\n')}\n`);
    const started = Date.now();
    const bomb = await sluice(b, ['diff', 'hostile']);
    expect(Date.now() - started).toBeLessThan(20_000);
    expect(bomb.code).toBe(2);
    expect(bomb.stderr).toContain('sluice: hostile/bomb.yaml: not read: Excessive alias count indicates a resource exhaustion attack\n');
    rmSync(join(dir, 'bomb.yaml'));
    const big = await sluice(b, ['diff', 'hostile', '--max-file-size', '1KB']);
    expect(big.code).toBe(2);
    expect(big.stderr).toMatch(/^sluice: hostile\/web\.yaml: is \d+ bytes, more than a pipeline file may have \(1KB, --max-file-size\)$/m);
    expect((await sluice(b, ['diff', 'hostile'])).code).toBe(0);
    // A few aliases (one mapping shared by two sinks) pass the default limit; --max-aliases 0 allows none.
    writeFileSync(join(dir, 'shared.yaml'), 'sourceId: shared\ntype: http\nname: Shared\nsinks:\n  - sinkId: a\n    name: A\n    table:\n      tableId: in.c-shared.a\n'
      + '      mapping: &m\n        columns:\n          - name: body\n            type: body\n  - sinkId: b\n    name: B\n    table:\n      tableId: in.c-shared.b\n      mapping: *m\n');
    expect((await sluice(b, ['diff', 'hostile'])).stdout).toContain('source shared (hostile/shared.yaml): create, http source "Shared", 2 sinks\n');
    const none = await sluice(b, ['diff', 'hostile', '--max-aliases', '0']);
    expect(none).toMatchObject({ code: 2, stdout: '' });
    expect(none.stderr).toContain('sluice: hostile/shared.yaml: not read: Alias resolution is disabled\n');
    expect((await sluice(b, ['diff', 'hostile', '--max-aliases', 'many'])).code).toBe(2);
  });

  it('answers usage errors with exit 2, and refuses --delete with no files', async () => {
    const wrong = await sluice(b, ['diff', '--frmat', 'json']);
    expect(wrong).toMatchObject({ code: 2, stderr: 'sluice: unknown option "--frmat" for "sluice diff". Did you mean --format? (see "sluice diff --help")\n' });
    expect((await sluice(b, ['push', 'a', 'b'])).code).toBe(2);
    expect((await sluice(b, ['push', '--task-timeout', 'soon'])).code).toBe(2);
    expect((await sluice(b, ['diff', 'nowhere'])).stderr).toBe('sluice: nowhere does not exist: "sluice pull nowhere" writes the files of a server\'s sources there\n');
    const help = await sluice(b, ['push', '--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^Usage: sluice push \[dir\] \[options\]/);
    rmSync(join(work, 'empty'), { recursive: true, force: true });
    cpSync(join(work, 'pipelines'), join(work, 'empty'), { recursive: true, filter: (src) => !src.endsWith('.yaml') });
    const refused = await sluice(b, ['push', 'empty', '--delete']);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toContain('has no pipeline files: push --delete would delete every source of branch default; refused');
    expect(((await b.call('GET', `${B(b)}/sources`)).json.sources as unknown[]).length).toBe(3);
  });

  it('pull removes the files of sources the server no longer has, and keeps other YAML files', async () => {
    writeFileSync(join(work, 'pipelines', 'notes.yaml'), 'todo: more sinks\n');
    await a.task('DELETE', `${B(a)}/sources/quiet`);
    const pulled = await sluice(a, ['pull']);
    expect(pulled.code).toBe(0);
    expect(pulled.stdout).toContain('removed pipelines/quiet.yaml: the server has no such source (any more)\n');
    expect(pulled.stdout).toContain('kept pipelines/notes.yaml: not a pipeline file (no sourceId)\n');
    expect(Object.keys(files('pipelines'))).toEqual(['notes.yaml', 'telemetry.yaml', 'web.yaml']);
  });
});
