/**
 * `sluice sources|sinks|tables list|get`: what a running server holds, for daily work at a
 * terminal (an aligned table) or in a script (`--format json`: the API's own objects). Through
 * the public API only (/v1 for sources and sinks, /v2/storage for tables), with the token of the
 * other client commands.
 */
import { parseCommandLine } from './args.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, resolveConnection, StorageClient } from './client.js';
import { CliError, reportErrors, type CliIo } from './errors.js';
import { formatCount } from './numbers.js';
import { alignedColumns } from './sql-output.js';
import type { SinksAnswer, SinkView, SourcesAnswer, SourceView } from '../contract/stream-sources.js';
import type { TableJson } from '../contract/storage-tables.js';

const BRANCH = '/v1/branches/default';
const PAGE = 100;

const LIST_OPTIONS = { ...CONNECTION_OPTIONS, format: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;

export const SOURCES_USAGE = `Usage: sluice sources <list|get> [options]

  list                 the sources: id, type, name, state, and the sinks of each
  get <sourceId>       one source as the API answers it (JSON)

Options:
  --format table|json  list: an aligned table (default) or the API's objects as JSON
  --help               this message

${CONNECTION_HELP}`;

export const SINKS_USAGE = `Usage: sluice sinks <list|get> <sourceId> [<sinkId>] [options]

  list <sourceId>             the sinks of a source: id, name, table, columns, state
  get <sourceId> <sinkId>     one sink as the API answers it (JSON)

Options:
  --format table|json  list: an aligned table (default) or the API's objects as JSON
  --help               this message

${CONNECTION_HELP}`;

export const TABLES_LIST_USAGE = `  list      the tables: id, rows, columns, last import (--format table|json)
  get       <tableId>: one table as the Storage API answers it (JSON)`;

type Format = 'table' | 'json';

function formatOf(value: string | undefined, command: string): Format {
  if (value === undefined || value === 'table' || value === 'json') return value ?? 'table';
  throw new CliError(`--format must be table or json, got "${value}" (see "sluice ${command} --help")`, 2);
}

/** Every page of a /v1 list. */
export async function allPages<T>(client: StorageClient, path: string, items: (answer: never) => T[]): Promise<T[]> {
  const out: T[] = [];
  let afterId = '';
  for (;;) {
    const answer = await client.json<{ page: { lastId: string } }>('GET', `${path}?limit=${PAGE}${afterId ? `&afterId=${encodeURIComponent(afterId)}` : ''}`);
    const page = items(answer as never);
    out.push(...page);
    if (page.length < PAGE || answer.page.lastId === '' || answer.page.lastId === afterId) return out;
    afterId = answer.page.lastId;
  }
}

export const stateOf = (entity: { disabled?: unknown; deleted?: unknown }): string => (entity.deleted ? 'deleted' : entity.disabled ? 'disabled' : 'enabled');

function printList(io: CliIo, format: Format, objects: unknown[], header: string[], rows: unknown[][], noun: string): void {
  if (format === 'json') {
    io.stdout.write(`${JSON.stringify(objects, null, 2)}\n`);
    return;
  }
  const lines = alignedColumns(header, rows);
  lines.push(`${formatCount(rows.length)} ${rows.length === 1 ? noun : `${noun}s`}`);
  io.stdout.write(`${lines.join('\n')}\n`);
}

function printJson(io: CliIo, value: unknown): void {
  io.stdout.write(`${JSON.stringify(value, null, 2)}\n`);
}

/** The command's words and options; the usage on --help. */
function commandLine(command: string, argv: string[], usage: string, io: CliIo) {
  const { values, positionals } = parseCommandLine(command, argv, LIST_OPTIONS);
  if (values.help) {
    io.stdout.write(usage);
    return undefined;
  }
  return { values, positionals, client: new StorageClient(resolveConnection(values, io.env)), format: formatOf(values.format, command) };
}

function needs(positionals: string[], count: number, what: string, command: string): void {
  if (positionals.length < count) throw new CliError(`give ${what} (see "sluice ${command} --help")`, 2);
  if (positionals.length > count) throw new CliError(`unexpected "${positionals[count]}" (see "sluice ${command} --help")`, 2);
}

export async function runSourcesCli(argv: string[], io: CliIo = process): Promise<number> {
  return reportErrors(io, async () => {
    const line = commandLine('sources', argv, SOURCES_USAGE, io);
    if (!line) return 0;
    const [verb, ...args] = line.positionals;
    if (verb === 'list') {
      needs(args, 0, 'no more words', 'sources');
      const sources = await allPages<SourceView>(line.client, `${BRANCH}/sources`, (a: SourcesAnswer) => a.sources);
      const sinks = await Promise.all(sources.map((s) => allPages<SinkView>(line.client, `${BRANCH}/sources/${encodeURIComponent(s.sourceId)}/sinks`, (a: SinksAnswer) => a.sinks)));
      printList(io, line.format, sources, ['source', 'type', 'name', 'state', 'sinks'],
        sources.map((s, i) => [s.sourceId, s.type, s.name, stateOf(s), sinks[i].map((k) => k.sinkId).join(', ')]), 'source');
      return 0;
    }
    if (verb === 'get') {
      needs(args, 1, 'the source id', 'sources');
      printJson(io, await line.client.json('GET', `${BRANCH}/sources/${encodeURIComponent(args[0])}`));
      return 0;
    }
    throw new CliError(`${verb === undefined ? 'give a command' : `unknown command "${verb}"`}: list or get (see "sluice sources --help")`, 2);
  });
}

export async function runSinksCli(argv: string[], io: CliIo = process): Promise<number> {
  return reportErrors(io, async () => {
    const line = commandLine('sinks', argv, SINKS_USAGE, io);
    if (!line) return 0;
    const [verb, ...args] = line.positionals;
    if (verb === 'list') {
      needs(args, 1, 'the source id', 'sinks');
      const sinks = await allPages<SinkView>(line.client, `${BRANCH}/sources/${encodeURIComponent(args[0])}/sinks`, (a: SinksAnswer) => a.sinks);
      printList(io, line.format, sinks, ['sink', 'name', 'table', 'columns', 'state'],
        sinks.map((k) => [k.sinkId, k.name, k.table.tableId, k.table.mapping.columns.length, stateOf(k)]), 'sink');
      return 0;
    }
    if (verb === 'get') {
      needs(args, 2, 'the source id and the sink id', 'sinks');
      printJson(io, await line.client.json('GET', `${BRANCH}/sources/${encodeURIComponent(args[0])}/sinks/${encodeURIComponent(args[1])}`));
      return 0;
    }
    throw new CliError(`${verb === undefined ? 'give a command' : `unknown command "${verb}"`}: list or get (see "sluice sinks --help")`, 2);
  });
}

/** `sluice tables list|get` (export is tables-export.ts). */
export async function runTablesListCli(verb: 'list' | 'get', argv: string[], io: CliIo, usage: string): Promise<number> {
  return reportErrors(io, async () => {
    const line = commandLine(`tables ${verb}`, argv, usage, io);
    if (!line) return 0;
    if (verb === 'list') {
      needs(line.positionals, 0, 'no more words', 'tables list');
      const tables = await line.client.json<TableJson[]>('GET', '/v2/storage/tables?include=columns');
      printList(io, line.format, tables, ['table', 'rows', 'columns', 'last import'],
        tables.map((t) => [t.id, t.rowsCount, t.columns?.length ?? 0, t.lastImportDate ?? '']), 'table');
      return 0;
    }
    needs(line.positionals, 1, 'the table id', 'tables get');
    printJson(io, await line.client.json('GET', `/v2/storage/tables/${encodeURIComponent(line.positionals[0])}`));
    return 0;
  });
}
