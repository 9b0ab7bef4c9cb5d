/**
 * `sluice pull [dir]`, `sluice diff [dir]`, `sluice push [dir]`: a branch's sources and sinks as
 * YAML files, one per source (pipelines as code, as `kbc pull` / `kbc push` do for Keboola
 * projects), through the public Stream API only, with the connection of the other client
 * commands (--url, --token, --data-dir).
 *
 * Exit codes: pull and push 0 when done, 1 when something failed; diff 0 when nothing differs,
 * 1 when something does, and 2 for any trouble (as diff(1) has it, so a script never takes a
 * failure for "differs"); 2 for a wrong command line everywhere.
 */
import { integerOption, parseCommandLine } from '../args.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, resolveConnection, StorageClient } from '../client.js';
import { CliError, reportErrors, type CliIo } from '../errors.js';
import { byteSizeString, parseByteSize, parseDuration } from '../../pipeline/units.js';
import { BranchApi, type ReadBranch } from './branch-api.js';
import { DEFAULT_LIMITS, PipelineFileError, settingsProblems, type ReadLimits } from './file-format.js';
import { planBranch, type Change, type DesiredSource } from './plan.js';
import { planJson, planText, summaryLine } from './plan-output.js';
import { readPipelineDir, writePipelineDir, type ReadFile } from './pipeline-dir.js';
import { push } from './push.js';

const DEFAULT_DIR = './pipelines';
const DEFAULT_BRANCH = 'default';
const DEFAULT_TASK_TIMEOUT = '2m';

const COMMON_HELP = `  --branch <branch>    the branch (default ${DEFAULT_BRANCH})
  --help               this message
`;
const READ_HELP = `  --max-file-size <n>  the largest pipeline file read (default ${byteSizeString(DEFAULT_LIMITS.maxBytes)}; "16MB")
  --max-aliases <n>    YAML aliases (*name) one file may use, each expanded when read
                       (default ${DEFAULT_LIMITS.maxAliasCount}; 0: none)
`;

export const PULL_USAGE = `Usage: sluice pull [dir] [options]

Writes the sources of a branch and their sinks as YAML, one file per source (<dir>/<sourceId>.yaml,
dir default ${DEFAULT_DIR}): names, descriptions, types, mappings, allowed signals, the settings
each overrides, and whether it is disabled. Never a secret (the ingestion URL and secret, tokens),
never what the server derives (versions, times, statistics). A second pull of an unchanged server
changes no byte. Pipeline files of sources the server no longer has are removed.

Options:
${COMMON_HELP}
${CONNECTION_HELP}`;

export const DIFF_USAGE = `Usage: sluice diff [dir] [options]

Shows what "sluice push" would change on the server: per source and sink, create, update (each
field that differs, old -> new), restore (deleted on the server), and what only --delete deletes.
Exit code 0 when nothing differs, 1 when something does, 2 on any trouble (a file that does not
pass, no server, a wrong command line).

Options:
  --format text|json   text (default), or the changes as JSON
${READ_HELP}${COMMON_HELP}
${CONNECTION_HELP}`;

export const PUSH_USAGE = `Usage: sluice push [dir] [options]

Makes the server match the pipeline files of dir (default ${DEFAULT_DIR}): creates and updates
sources and sinks and their settings (a key a file no longer has goes back to its default), one
API call at a time, each waiting for its task. Every file is checked first: a file that does not
pass changes nothing. A second push does nothing and says so. Sources and sinks that no file has
are kept unless --delete is given (a soft delete: the tables stay, undelete brings them back).

Options:
  --dry-run            print what would change, change nothing
  --delete             also delete the sources and sinks no file has
  --task-timeout <d>   how long to wait for one API task (default ${DEFAULT_TASK_TIMEOUT})
${READ_HELP}${COMMON_HELP}
${CONNECTION_HELP}`;

const BASE_OPTIONS = { ...CONNECTION_OPTIONS, branch: { type: 'string' }, help: { type: 'boolean', short: 'h' } } as const;
const READ_OPTIONS = { 'max-file-size': { type: 'string' }, 'max-aliases': { type: 'string' } } as const;
const DIFF_OPTIONS = { ...BASE_OPTIONS, ...READ_OPTIONS, format: { type: 'string' } } as const;
const PUSH_OPTIONS = { ...BASE_OPTIONS, ...READ_OPTIONS, 'dry-run': { type: 'boolean' }, delete: { type: 'boolean' }, 'task-timeout': { type: 'string' } } as const;

function directoryOf(positionals: string[], command: string): string {
  if (positionals.length > 1) throw new CliError(`unexpected "${positionals[1]}": give one folder (see "sluice ${command} --help")`, 2);
  return positionals[0] ?? DEFAULT_DIR;
}

/** The folder as the user named it, with a trailing slash in messages ("pipelines/"). */
const shownDir = (dir: string) => (dir.endsWith('/') ? dir : `${dir}/`).replace(/^\.\//, '');

function limitsOf(values: { 'max-file-size'?: string; 'max-aliases'?: string }, command: string): ReadLimits {
  const size = values['max-file-size'];
  const bytes = size === undefined ? DEFAULT_LIMITS.maxBytes : parseByteSize(size);
  if (bytes === undefined || bytes < 1) throw new CliError(`--max-file-size must be a size like 4MB or 500kB, got "${size}" (see "sluice ${command} --help")`, 2);
  const maxAliasCount = integerOption('max-aliases', values['max-aliases'], 0) ?? DEFAULT_LIMITS.maxAliasCount;
  return { maxBytes: bytes, maxAliasCount };
}

function api(values: { url?: string; token?: string; 'data-dir'?: string; branch?: string }, io: CliIo, taskTimeoutMs?: number): { client: StorageClient; api: BranchApi; branch: string } {
  const client = new StorageClient(resolveConnection(values, io.env));
  const branch = values.branch ?? DEFAULT_BRANCH;
  if (branch.trim() === '') throw new CliError('--branch must not be empty', 2);
  return { client, api: new BranchApi(client, branch, taskTimeoutMs), branch };
}

function count(sources: Iterable<{ sinks: unknown[] }>): { sources: number; sinks: number } {
  let n = 0;
  let sinks = 0;
  for (const s of sources) {
    n++;
    sinks += s.sinks.length;
  }
  return { sources: n, sinks };
}

export async function runPullCli(argv: string[], io: CliIo = process): Promise<number> {
  return reportErrors(io, async () => {
    const { values, positionals } = parseCommandLine('pull', argv, BASE_OPTIONS);
    if (values.help) {
      io.stdout.write(PULL_USAGE);
      return 0;
    }
    const dir = directoryOf(positionals, 'pull');
    const { client, api: branchApi, branch } = api(values, io);
    const state = await branchApi.readBranch();
    const sources = [...state.sources.values()];
    const result = writePipelineDir(dir, sources, DEFAULT_LIMITS);
    const lines = [
      ...result.written.map((f) => `wrote ${f}`),
      ...result.removed.map((f) => `removed ${f}: the server has no such source (any more)`),
      ...result.kept.map((f) => `kept ${f}: not a pipeline file (no sourceId)`),
    ];
    const totals = count(sources);
    lines.push(`pulled ${totals.sources} source${totals.sources === 1 ? '' : 's'} and ${totals.sinks} sink${totals.sinks === 1 ? '' : 's'} of branch ${branch} at ${client.url} into ${shownDir(dir)}`
      + ` (${result.written.length} written, ${result.unchanged.length} unchanged, ${result.removed.length} removed)`);
    io.stdout.write(`${lines.join('\n')}\n`);
    return 0;
  });
}

interface Compared {
  dir: string;
  branch: string;
  api: BranchApi;
  files: ReadFile[];
  state: ReadBranch;
  changes: Change[];
}

/** The files read and checked, the server read, the plan made: what diff prints and push does. */
async function compare(dir: string, values: Parameters<typeof api>[0], limits: ReadLimits, io: CliIo, taskTimeoutMs?: number): Promise<Compared> {
  const connection = api(values, io, taskTimeoutMs);
  const { files, notes } = readPipelineDir(dir, limits);
  for (const note of notes) io.stderr.write(`sluice: ${note}\n`);
  const state = await connection.api.readBranch();
  // Settings again, with this server's minima of the durations (a server may allow shorter intervals).
  const problems = files.flatMap((f) => f.problemsAt(settingsProblems(f.definition, state.floors)));
  if (problems.length > 0) throw new PipelineFileError(problems);
  const desired: DesiredSource[] = files.map((f) => ({ file: f.file, definition: f.definition }));
  // Deleted sinks are asked for only where a file has a sink the server lacks (it may be restored).
  const deletedSinks = new Map<string, Set<string>>();
  for (const d of desired) {
    const now = state.sources.get(d.definition.sourceId);
    if (now && d.definition.sinks.some((s) => !now.sinks.some((n) => n.sinkId === s.sinkId))) {
      deletedSinks.set(d.definition.sourceId, await connection.api.deletedSinkIds(d.definition.sourceId));
    }
  }
  const current = { ...state, deletedSinks };
  return { dir, branch: connection.branch, api: connection.api, files, state: current, changes: planBranch(desired, current) };
}

/** A file problem: every line, then the count; the exit code is the command's. */
function reportFileProblems(io: CliIo, err: PipelineFileError, code: number): number {
  for (const line of err.problems) io.stderr.write(`sluice: ${line}\n`);
  io.stderr.write(`sluice: ${err.count} problem${err.count === 1 ? '' : 's'} in the pipeline files; nothing was changed\n`);
  return code;
}

export async function runDiffCli(argv: string[], io: CliIo = process): Promise<number> {
  return reportErrors(io, async () => {
    const { values, positionals } = parseCommandLine('diff', argv, DIFF_OPTIONS);
    if (values.help) {
      io.stdout.write(DIFF_USAGE);
      return 0;
    }
    const dir = directoryOf(positionals, 'diff');
    const format = values.format ?? 'text';
    if (format !== 'text' && format !== 'json') throw new CliError(`--format must be text or json, got "${format}" (see "sluice diff --help")`, 2);
    const limits = limitsOf(values, 'diff');
    let compared: Compared;
    try {
      compared = await compare(dir, values, limits, io);
    } catch (err) {
      if (err instanceof PipelineFileError) return reportFileProblems(io, err, 2);
      // Any trouble is 2 for diff: 1 means "differs".
      if (err instanceof CliError) throw new CliError(err.message, 2);
      throw err;
    }
    const { changes } = compared;
    if (format === 'json') {
      io.stdout.write(planJson(changes, shownDir(dir), compared.branch));
    } else {
      const lines = [...planText(changes, shownDir(dir)), summaryLine(changes, shownDir(dir), count(compared.files.map((f) => f.definition)))];
      io.stdout.write(`${lines.join('\n')}\n`);
    }
    return changes.length > 0 ? 1 : 0;
  });
}

export async function runPushCli(argv: string[], io: CliIo = process): Promise<number> {
  return reportErrors(io, async () => {
    const { values, positionals } = parseCommandLine('push', argv, PUSH_OPTIONS);
    if (values.help) {
      io.stdout.write(PUSH_USAGE);
      return 0;
    }
    const dir = directoryOf(positionals, 'push');
    const limits = limitsOf(values, 'push');
    const timeout = values['task-timeout'] ?? DEFAULT_TASK_TIMEOUT;
    const taskTimeoutMs = parseDuration(timeout);
    if (taskTimeoutMs === undefined || taskTimeoutMs <= 0) throw new CliError(`--task-timeout must be a duration like 2m or 90s, got "${timeout}" (see "sluice push --help")`, 2);
    let compared: Compared;
    try {
      compared = await compare(dir, values, limits, io, taskTimeoutMs);
    } catch (err) {
      if (err instanceof PipelineFileError) return reportFileProblems(io, err, 1);
      throw err;
    }
    const { changes, files, state } = compared;
    const shown = shownDir(dir);
    if (values.delete && files.length === 0) {
      throw new CliError(`${shown} has no pipeline files: push --delete would delete every source of branch ${compared.branch}; refused (delete them with the API, or pull first)`);
    }
    const pending = values.delete ? changes : changes.filter((c) => c.action !== 'delete');
    const kept = changes.length - pending.length;
    const keptLine = kept > 0 ? `${kept} source${kept === 1 ? '' : 's'} or sink${kept === 1 ? '' : 's'} on the server that no file has: kept (--delete deletes them)` : undefined;
    if (values['dry-run']) {
      const lines = [...planText(changes, shown), summaryLine(changes, shown, count(files.map((f) => f.definition))), 'dry run: nothing was changed'];
      io.stdout.write(`${lines.join('\n')}\n`);
      return 0;
    }
    if (pending.length === 0) {
      const totals = count(files.map((f) => f.definition));
      io.stdout.write(`nothing to push: the server matches ${shown} (${totals.sources} source${totals.sources === 1 ? '' : 's'}, ${totals.sinks} sink${totals.sinks === 1 ? '' : 's'})${keptLine ? `; ${keptLine}` : ''}\n`);
      return 0;
    }
    const made = await push(compared.api, files.map((f) => ({ file: f.file, definition: f.definition })), state, {
      delete: values.delete === true,
      log: (line) => io.stdout.write(`${line}\n`),
    });
    io.stdout.write(`pushed ${shown} to branch ${compared.branch}: ${made} change${made === 1 ? '' : 's'}${keptLine ? `; ${keptLine}` : ''}\n`);
    return 0;
  });
}
