/**
 * The pipeline file of `sluice pull|diff|push` (src/cli/pipelines/): written in one stable form
 * that reads back to the same definition, read strictly with the file, path and line of every
 * problem, hostile files refused; and the plan (what differs between a file and a server).
 */
import { describe, expect, it } from 'vitest';
import fc from 'fast-check';
import { parsePipeline, pipelineYaml, PipelineFileError, settingsProblems } from '../../../src/cli/pipelines/file-format.js';
import { canonicalSource, sinkFromApi, sourceFromApi, type SourceDefinition } from '../../../src/cli/pipelines/definition.js';
import { differences, planBranch, type CurrentBranch } from '../../../src/cli/pipelines/plan.js';
import { planText, summaryLine } from '../../../src/cli/pipelines/plan-output.js';
import { waitForTask } from '../../../src/cli/tasks.js';
import type { SinkView, SourceView } from '../../../src/contract/stream-sources.js';
import type { SettingView } from '../../../src/contract/settings.js';
import type { Task } from '../../../src/contract/tasks.js';

const WEB: SourceDefinition = {
  sourceId: 'web',
  type: 'http',
  name: 'Web',
  description: 'Clicks\nand views',
  settings: { 'storage.level.target.import.trigger.interval': '2m', 'source.quota.recordsPerSecond': 500 },
  sinks: [
    {
      sinkId: 'views',
      name: 'Views',
      table: {
        tableId: 'in.c-web.views',
        mapping: {
          columns: [
            { name: 'id', type: 'uuid', primaryKey: true },
            { name: 'page', type: 'path', path: 'page', defaultValue: '/', rawString: true },
            { name: 'big', type: 'template', template: { language: 'jsonnet', content: 'local n = Body("n");\nn > 10' }, dataType: 'BOOLEAN' },
          ],
          filter: { language: 'jsonnet', content: 'Body("kind") == "view"' },
        },
      },
      settings: { 'storage.level.staging.upload.trigger.count': 500 },
    },
    { sinkId: 'all', name: 'All', disabled: true, table: { tableId: 'in.c-web.all', mapping: { columns: [{ name: 'body', type: 'body' }] } } },
  ],
};

/** The problems of a text as file `pipelines/<id>.yaml`. */
function problemsOf(text: string, file = 'pipelines/web.yaml'): string[] {
  try {
    parsePipeline(file, text);
  } catch (err) {
    if (err instanceof PipelineFileError) return err.problems;
    throw err;
  }
  return [];
}

describe('writing a pipeline file', () => {
  it('writes the header, then the fields in a fixed order, settings sorted, sinks by id, without defaults', () => {
    const text = pipelineYaml(WEB);
    expect(text.startsWith('# Sluice pipeline: the source "web" and its sinks, as `sluice pull` wrote them.\n')).toBe(true);
    expect(text).toContain('never a secret');
    const body = text.split('\n').filter((l) => !l.startsWith('#'));
    expect(body.slice(0, 10)).toEqual([
      'sourceId: web',
      'type: http',
      'name: Web',
      'description: |-',
      '  Clicks',
      '  and views',
      'settings:',
      '  source.quota.recordsPerSecond: 500',
      '  storage.level.target.import.trigger.interval: 2m',
      'sinks:',
    ]);
    expect(body[10]).toBe('  - sinkId: all');
    // A multi-line template is a block, not a folded or escaped line.
    expect(text).toContain('              content: |-\n                local n = Body("n");\n                n > 10\n');
  });

  it('reads back to the same definition, and writing that again gives the same bytes', () => {
    const text = pipelineYaml(WEB);
    const read = parsePipeline('pipelines/web.yaml', text).definition;
    expect(canonicalSource(read)).toEqual(canonicalSource(WEB));
    expect(pipelineYaml(read)).toBe(text);
  });

  it('round-trips any text in names, descriptions and templates (quotes, colons, #, newlines, unicode)', () => {
    const text = fc.string({ unit: 'binary', maxLength: 60 });
    fc.assert(fc.property(fc.string({ minLength: 1, maxLength: 40 }), text, fc.string({ minLength: 1, maxLength: 200 }), (name, description, content) => {
      const source: SourceDefinition = {
        ...WEB,
        name,
        description,
        sinks: [{ ...WEB.sinks[0], table: { tableId: 'in.c-web.views', mapping: { columns: [{ name: 'x', type: 'template', template: { language: 'jsonnet', content } }] } } }],
      };
      const written = pipelineYaml(source);
      const read = parsePipeline('pipelines/web.yaml', written).definition;
      expect(canonicalSource(read)).toEqual(canonicalSource(source));
      expect(pipelineYaml(read)).toBe(written);
    }), { numRuns: 300 });
  });

  it('takes from the API only what a user sets: no ids, versions, times, URLs or secrets', () => {
    const at = { at: '2026-11-27T07:00:00.000Z', by: { type: 'user' as const, tokenId: '1' } };
    const version = { ...at, number: 3, hash: 'abc', description: 'x' };
    const source: SourceView = {
      projectId: 1, branchId: 2, sourceId: 'web', type: 'otlp', name: 'Web', description: '', version, created: at,
      otlp: { url: 'http://in/v1/otlp/SECRETSECRET', baseUrl: 'http://in', secret: 'SECRETSECRET' },
    };
    const sink: SinkView = {
      projectId: 1, branchId: 2, sourceId: 'web', sinkId: 'logs', type: 'table', name: 'Logs', description: '', version, created: at,
      disabled: { ...at, reason: 'API' },
      table: { type: 'keboola', tableId: 'in.c-web.logs', mapping: { columns: [{ type: 'path', name: 'a', path: 'a', rawString: false }] } },
      allowedSignals: ['traces', 'logs'],
    };
    const setting = (key: string, value: unknown, overwritten: boolean): SettingView => ({ key, type: 'int', description: '', value, defaultValue: 1, overwritten, protected: false });
    const definition = sourceFromApi(source, [setting('a.b', 5, true), setting('c.d', 1, false)], [sinkFromApi(sink, [])]);
    expect(definition).toEqual({
      sourceId: 'web', type: 'otlp', name: 'Web', settings: { 'a.b': 5 },
      sinks: [{ sinkId: 'logs', name: 'Logs', disabled: true, table: { tableId: 'in.c-web.logs', mapping: { columns: [{ name: 'a', type: 'path', path: 'a' }] } }, allowedSignals: ['logs', 'traces'] }],
    });
    const body = pipelineYaml(definition).split('\n').filter((l) => !l.startsWith('#')).join('\n');
    expect(body).not.toMatch(/SECRET|2026-11-27|projectId|branchId|version|created|hash|otlp:|url/);
  });
});

describe('reading a pipeline file', () => {
  it('names the file, the path and the line of each problem, with the closest known name', () => {
    const text = pipelineYaml(WEB).replace('type: uuid', 'type: uuidd').replace('dataType: BOOLEAN', 'dataType: BOOL').replace('    name: Views', '    nmae: Views');
    const problems = problemsOf(text);
    expect(problems).toContain('pipelines/web.yaml: sinks[1].nmae: unknown key; did you mean "name"? (known: sinkId, type, name, description, disabled, table, allowedSignals, settings) (line 26)');
    expect(problems).toContain('pipelines/web.yaml: sinks[1].name: is missing (line 25)');
    expect(problems).toContain('pipelines/web.yaml: sinks[1].table.mapping.columns[0].type: "uuidd" is not a column type; did you mean "uuid"? (one of uuid, datetime, ip, body, headers, path, template) (line 32)');
    expect(problems.find((p) => p.includes('columns[2].dataType'))).toMatch(/^pipelines\/web\.yaml: sinks\[1\]\.table\.mapping\.columns\[2\]\.dataType: "BOOL" is not a data type \(one of STRING, .*\) \(line \d+\)$/);
  });

  it('checks what the API checks: ids, table ids, column names, types per column type, keys, settings', () => {
    const base = (sink: string, extra = '') => `sourceId: web\ntype: http\nname: Web\n${extra}sinks:\n${sink}`;
    const sink = (columns: string, tableId = 'in.c-web.t') => `  - sinkId: s\n    name: S\n    table:\n      tableId: ${tableId}\n      mapping:\n        columns:\n${columns}`;
    const col = (lines: string) => `          - ${lines.split('\n').join('\n            ')}\n`;
    expect(problemsOf(base(sink(col('name: a\ntype: uuid\ndataType: INTEGER'))))[0])
      .toBe('pipelines/web.yaml: sinks[0].table.mapping.columns[0].dataType: a column of type "uuid" cannot be INTEGER: it may be STRING (line 13)');
    expect(problemsOf(base(sink(col('name: a\ntype: body\nprimaryKey: true'))))[0]).toMatch(/columns\[0\]\.primaryKey: a column of type "body" cannot be part of the primary key/);
    expect(problemsOf(base(sink(col('name: a\ntype: path'))))[0]).toMatch(/columns\[0\]\.path: is missing \(a column of type "path" needs it/);
    expect(problemsOf(base(sink(col('name: a\ntype: uuid\npath: x'))))[0]).toMatch(/columns\[0\]\.path: is only for columns of type "path", not "uuid"/);
    expect(problemsOf(base(sink(col('name: _timestamp\ntype: uuid'))))[0]).toMatch(/columns: Column name "_timestamp" is reserved/);
    expect(problemsOf(base(sink(col('name: a\ntype: uuid'), 'out.bad')))[0]).toMatch(/sinks\[0\]\.table\.tableId: Invalid table id "out\.bad"/);
    expect(problemsOf(base(sink(col('name: a\ntype: uuid')).replace('sinkId: s', 'sinkId: My Sink')))[0])
      .toMatch(/sinks\[0\]\.sinkId: "My Sink" is not an id the server keeps as it is: use lowercase letters, digits and "-" \(e\.g\. "my-sink"\)/);
    expect(problemsOf(base(sink(col('name: a\ntype: uuid')), 'name2: x\n'))[0]).toMatch(/^pipelines\/web\.yaml: name2: unknown key; did you mean "name"\?/);
    expect(problemsOf(base(sink(col('name: a\ntype: uuid')), 'settings:\n  storage.level.local.encoding.sync.mode: cache\n'))[0])
      .toBe('pipelines/web.yaml: settings["storage.level.local.encoding.sync.mode"]: Cannot modify protected keys: "storage.level.local.encoding.sync.mode". (line 5)');
    expect(problemsOf(base(`${sink(col('name: a\ntype: uuid'))}    settings:\n      source.quota.recordsPerSecond: 5\n`))[0]).toMatch(/sinks\[0\]\.settings\["source\.quota\.recordsPerSecond"\]: Settings of the source, not of its sinks/);
    expect(problemsOf(base(sink(col('name: a\ntype: uuid')), 'settings:\n  storage.level.staging.upload.trigger.count: "10"\n'))[0]).toMatch(/expected int/);
    expect(problemsOf(base(sink(col('name: a\ntype: uuid'))).replace('name: Web', 'name: 2024'))).toContain('pipelines/web.yaml: name: must be a string, got number 2024 (put it in quotes) (line 3)');
    expect(problemsOf(base(sink(col('name: a\ntype: uuid'))).replace('sourceId: web', 'sourceId: shop'))).toContain('pipelines/web.yaml: sourceId: "shop" is not the file\'s name: the file of source "shop" is shop.yaml (rename the file, or the id) (line 1)');
    expect(problemsOf(base(sink(col('name: a\ntype: uuid')) + sink(col('name: a\ntype: uuid'))))).toContain('pipelines/web.yaml: sinks[1].sinkId: "s" is the id of sinks[0] too: sink ids are unique in a source (line 13)');
    expect(problemsOf(base(sink(col('name: a\ntype: uuid'))))).toEqual([]);
  });

  it('says where YAML is not valid, and refuses duplicate keys', () => {
    expect(problemsOf('sourceId: web\n  type: [\n')).toEqual(['pipelines/web.yaml:1:11: not valid YAML: Nested mappings are not allowed in compact mappings']);
    expect(problemsOf('sourceId: web\nsourceId: web\n')).toEqual(['pipelines/web.yaml:2:1: not valid YAML: the key "sourceId" is there twice in one mapping']);
    expect(problemsOf('')).toEqual(['pipelines/web.yaml: is empty (sluice pull writes one file per source)']);
    expect(problemsOf('- a\n- b\n')).toEqual(['pipelines/web.yaml: must be a mapping (key: value lines), got a list']);
  });

  it('refuses a "billion laughs" file at the alias limit, fast and without building it', () => {
    const levels = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]'];
    for (let i = 1; i < 10; i++) levels.push(`${String.fromCharCode(97 + i)}: &${String.fromCharCode(97 + i)} [${Array(9).fill(`*${String.fromCharCode(96 + i)}`).join(',')}]`);
    const bomb = `sourceId: web\ntype: http\nname: W\ndescription: x\n${levels.join('\n')}\n`;
    const started = Date.now();
    expect(problemsOf(bomb)).toEqual(['pipelines/web.yaml: not read: Excessive alias count indicates a resource exhaustion attack']);
    expect(Date.now() - started).toBeLessThan(5_000);
    // A few aliases (a column list shared by two sinks) are fine; the limit is a parameter.
    const shared = 'sourceId: web\ntype: http\nname: W\nsinks:\n  - sinkId: a\n    name: A\n    table:\n      tableId: in.c-web.a\n      mapping: &m\n        columns:\n          - name: body\n            type: body\n  - sinkId: b\n    name: B\n    table:\n      tableId: in.c-web.b\n      mapping: *m\n';
    expect(parsePipeline('pipelines/web.yaml', shared).definition.sinks.map((s) => s.table.mapping.columns[0].name)).toEqual(['body', 'body']);
    expect(() => parsePipeline('pipelines/web.yaml', shared, { maxBytes: 1e6, maxAliasCount: 0 })).toThrow(/Alias resolution is disabled/);
  });

  it('lists 20 problems of a file at most, and reads a file of 200,000 keys in linear time', () => {
    const text = `sourceId: web\ntype: http\nname: W\n${Array.from({ length: 200_000 }, (_, i) => `k${i}: v`).join('\n')}\n`;
    const started = Date.now();
    let error: PipelineFileError | undefined;
    try {
      parsePipeline('pipelines/web.yaml', text);
    } catch (err) {
      error = err as PipelineFileError;
    }
    // About 2 s here (the YAML library's own duplicate-key check took minutes: it compares each key with every earlier one).
    expect(Date.now() - started).toBeLessThan(30_000);
    expect(error?.count).toBe(200_000);
    expect(error?.problems).toHaveLength(21);
    expect(error?.problems[0]).toMatch(/^pipelines\/web\.yaml: k0: unknown key/);
    expect(error?.problems[20]).toBe('pipelines/web.yaml: 199980 more problems not listed');
  });

  it('refuses a nesting deeper than the parser can take as a problem of the file', () => {
    const deep = `sourceId: web\ntype: http\nname: W\ndescription: ${'['.repeat(100_000)}${']'.repeat(100_000)}\n`;
    expect(problemsOf(deep)[0]).toMatch(/^pipelines\/web\.yaml(:\d+:\d+)?: not (valid YAML|read): it is nested too deeply to read$/);
  });

  it("checks a duration's minimum against the server's floors, or leaves it to the server", () => {
    const source = { ...WEB, sinks: [], settings: { 'storage.level.target.import.trigger.interval': '5s' } };
    expect(settingsProblems(source, 'lenient')).toEqual([]);
    expect(settingsProblems(source, [])).toEqual([{ path: ['settings', 'storage.level.target.import.trigger.interval'], message: '"storage.level.target.import.trigger.interval" must be 30s or greater.' }]);
    expect(settingsProblems(source, [{ key: 'storage.level.target.import.trigger.interval', ms: 1000, flag: '' }])).toEqual([]);
  });
});

describe('the plan', () => {
  const file = 'pipelines/web.yaml';
  const branch = (sources: SourceDefinition[], more: Partial<CurrentBranch> = {}): CurrentBranch => ({
    sources: new Map(sources.map((s) => [s.sourceId, canonicalSource(s)])), deletedSources: new Set(), deletedSinks: new Map(), ...more,
  });

  it('is empty when the file and the server agree', () => {
    expect(planBranch([{ file, definition: WEB }], branch([WEB]))).toEqual([]);
    expect(summaryLine([], 'pipelines/', { sources: 1, sinks: 2 })).toBe('no differences: the server matches pipelines/ (1 source, 2 sinks)');
  });

  it('creates what the server lacks, restores what it deleted, lists what only --delete deletes', () => {
    const other: SourceDefinition = { ...WEB, sourceId: 'other', sinks: [] };
    const changes = planBranch([{ file, definition: WEB }], branch([other]));
    expect(changes.map((c) => [c.action, c.sourceId, c.sinkId])).toEqual([
      ['create', 'web', undefined], ['create', 'web', 'all'], ['create', 'web', 'views'], ['delete', 'other', undefined],
    ]);
    expect(planText(changes, 'pipelines/')).toEqual([
      'source web (pipelines/web.yaml): create, http source "Web", 2 sinks',
      '  sink all: create, into in.c-web.all, 1 column, disabled',
      '  sink views: create, into in.c-web.views, 3 columns',
      'source other: would delete with --delete (on the server, no file in pipelines/)',
    ]);
    expect(summaryLine(changes, 'pipelines/', { sources: 1, sinks: 2 })).toBe('4 changes: 3 to create, 1 only with --delete');
    const restored = planBranch([{ file, definition: WEB }], branch([], { deletedSources: new Set(['web']) }));
    expect(restored).toMatchObject([{ action: 'restore', sourceId: 'web' }]);
    const sinkRestored = planBranch([{ file, definition: WEB }], branch([{ ...WEB, sinks: [WEB.sinks[0]] }], { deletedSinks: new Map([['web', new Set(['all'])]]) }));
    expect(sinkRestored).toMatchObject([{ action: 'restore', sourceId: 'web', sinkId: 'all' }]);
  });

  it('shows each field that differs, columns by name, settings by key', () => {
    const edited: SourceDefinition = structuredClone(WEB);
    edited.name = 'Web shop';
    delete edited.settings!['source.quota.recordsPerSecond'];
    const columns = edited.sinks[0].table.mapping.columns;
    columns[1].path = 'url.page';
    columns.push({ name: 'ip', type: 'ip' });
    columns.splice(0, 1);
    edited.sinks[0].disabled = true;
    edited.sinks[1].settings = { 'storage.level.staging.upload.trigger.count': 100 };
    const changes = planBranch([{ file, definition: edited }], branch([WEB]));
    expect(planText(changes, 'pipelines/')).toEqual([
      'source web (pipelines/web.yaml): update',
      '    name: "Web" -> "Web shop"',
      '    settings["source.quota.recordsPerSecond"]: 500 -> (default)',
      '  sink all: update',
      '      settings["storage.level.staging.upload.trigger.count"]: (default) -> 100',
      '  sink views: update',
      '      disabled: false -> true',
      '      table.mapping.columns["page"].path: "page" -> "url.page"',
      '      table.mapping.columns["ip"]: (none) -> {"name":"ip","type":"ip"}',
      '      table.mapping.columns["id"]: {"name":"id","type":"uuid","primaryKey":true} -> (none)',
    ]);
    expect(differences(['a', 'b'], ['b', 'a'])).toEqual([{ path: '', from: ['a', 'b'], to: ['b', 'a'] }]);
    expect(differences([{ name: 'a' }, { name: 'b' }], [{ name: 'b' }, { name: 'a' }], 'columns')).toEqual([{ path: 'columns (order)', from: ['a', 'b'], to: ['b', 'a'] }]);
  });
});

describe('waiting for a task', () => {
  const task = (status: Task['status']): Task => ({ taskId: 'api.create.source/1/web/2026-11-27T07:00:00.000Z_abcde', type: 'api.create.source', url: '', status, isFinished: status !== 'processing', createdAt: '' });

  it('polls GET /v1/tasks/<id> (each part encoded) until the task ends', async () => {
    const asked: string[] = [];
    let calls = 0;
    const client = { json: async <T>(_method: string, path: string) => { asked.push(path); return task(++calls < 3 ? 'processing' : 'success') as T; } };
    const done = await waitForTask(client, task('processing'), 10_000, () => 'timed out', async () => undefined);
    expect(done.status).toBe('success');
    expect(asked[0]).toBe('/v1/tasks/api.create.source/1/web/2026-11-27T07%3A00%3A00.000Z_abcde');
    expect(asked).toHaveLength(3);
  });

  it('gives up after --task-timeout with what to do', async () => {
    const client = { json: async <T>() => task('processing') as T };
    await expect(waitForTask(client, task('processing'), 30, (t, path, seconds) => `${t.taskId} at ${path} after ${seconds} s`, async () => { await new Promise((r) => setTimeout(r, 10)); })).rejects.toThrow(/ at \/v1\/tasks\/.* after 0\.03 s/);
  });
});
