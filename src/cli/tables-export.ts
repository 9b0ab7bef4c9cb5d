/**
 * `sluice tables export <tableId>`: the Keboola export flow against a running server, as one
 * command — start the export job, follow it with a progress line, then stream the file it wrote
 * to disk (or standard output).
 */
import { parseCommandLine } from './args.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, resolveConnection, StorageClient } from './client.js';
import { CliError, reportErrors, type CliIo } from './errors.js';
import { exportRequest } from './export-request.js';
import { formatBytes, formatCount } from './numbers.js';
import { openOutput } from './output-file.js';
import { ProgressLine } from './progress-line.js';
import { waitForJob } from './storage-job.js';
import type { StorageFileJson, StorageJobJson } from '../contract/storage-jobs.js';
import { runTablesListCli, TABLES_LIST_USAGE } from './resources.js';

export const TABLES_USAGE = `Usage: sluice tables <command> [options]

Commands:
${TABLES_LIST_USAGE}
  export    export a table of a running server into a file (sluice tables export --help)

${CONNECTION_HELP}`;

export const TABLES_EXPORT_USAGE = `Usage: sluice tables export <tableId> [options]

Exports a table of a running server (POST /v2/storage/tables/{tableId}/export-async), shows
the job's progress on stderr and downloads the file it wrote.

Options:
  --format csv|parquet        file format (default csv; parquet when --out ends in .parquet)
  --out <file>                where to write (default <tableId>.csv.gz or <tableId>.parquet);
                              CSV is gzipped unless the name ends in .csv; - writes to stdout
  --columns <a,b>             only these columns, in this order (_timestamp may be asked for)
  --where-column <column>     only rows whose column is (or with ne: is not) one of
  --where-values <v1,v2>        these values
  --where-operator eq|ne        (default eq)
  --changed-since <time>      only rows written since: unix seconds, ISO 8601, or relative
                              ("--changed-since=-2 hours"; use = for a value starting with -)
  --changed-until <time>      only rows written before, as --changed-since
  --limit <n>                 at most n rows
  --help                      this message

${CONNECTION_HELP}`;

const EXPORT_OPTIONS = {
  ...CONNECTION_OPTIONS,
  format: { type: 'string' },
  out: { type: 'string', short: 'o' },
  columns: { type: 'string' },
  'where-column': { type: 'string' },
  'where-values': { type: 'string' },
  'where-operator': { type: 'string' },
  'changed-since': { type: 'string' },
  'changed-until': { type: 'string' },
  limit: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `sluice tables <command> ...`; resolves to the exit code. */
export async function runTablesCli(argv: string[], io: CliIo = process): Promise<number> {
  const [command, ...rest] = argv;
  if (command === undefined) {
    io.stderr.write(TABLES_USAGE);
    return 2;
  }
  if (command === 'help' || command === '--help' || command === '-h') {
    io.stdout.write(TABLES_USAGE);
    return 0;
  }
  if (command === 'list' || command === 'get') return runTablesListCli(command, rest, io, TABLES_USAGE);
  if (command !== 'export') {
    io.stderr.write(`sluice: unknown tables command "${command}"\n\n${TABLES_USAGE}`);
    return 2;
  }
  return reportErrors(io, () => exportTable(rest, io));
}

function progressText(tableId: string, job: StorageJobJson): string {
  if (job.status === 'waiting') return `exporting ${tableId}: waiting to start`;
  const rows = job.progress?.rows ?? 0;
  const total = job.progress?.totalRows;
  if (total === null || total === undefined) return `exporting ${tableId}: ${formatCount(rows)} row${rows === 1 ? '' : 's'}`;
  const percent = total === 0 ? 100 : Math.floor((rows / total) * 100);
  return `exporting ${tableId}: ${formatCount(rows)} / ${formatCount(total)} rows (${percent} %)`;
}

/**
 * The path and query of a signed download URL, to fetch from the CLI's own base URL: the URL
 * names the server's public address, which the CLI may not reach. A path prefix of the public
 * URL (a proxy's) is dropped, since the base URL carries its own.
 */
export function downloadPath(signedUrl: string): string {
  const url = new URL(signedUrl);
  const at = url.pathname.indexOf('/v2/storage/');
  return (at >= 0 ? url.pathname.slice(at) : url.pathname) + url.search;
}

async function exportTable(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine('tables export', argv, EXPORT_OPTIONS);
  if (values.help) {
    io.stdout.write(TABLES_EXPORT_USAGE);
    return 0;
  }
  if (positionals.length !== 1) {
    throw new CliError(positionals.length === 0 ? 'which table? (sluice tables export <tableId>)' : `one table at a time, got ${positionals.join(' ')}`, 2);
  }
  const tableId = positionals[0];
  const { body, out } = exportRequest(tableId, values);
  if (out === '-' && io.stdout.isTTY && (body.gzip || body.format === 'parquet')) {
    throw new CliError('refusing to write a compressed or Parquet file to a terminal; redirect standard output or use --out', 2);
  }
  const client = new StorageClient(resolveConnection(values, io.env));
  const progress = new ProgressLine(io.stderr);
  const output = await openOutput(out, io.stdout);

  // Ctrl-C: stop polling or downloading and remove the partial file (the job itself runs on).
  // `on`, not `once`: a signal sent to the process group too (timeout(1) does) comes twice, and
  // the second must not kill the process halfway through removing the partial file.
  const controller = new AbortController();
  const onSignal = () => controller.abort();
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    const started = await client.json<StorageJobJson>('POST', `/v2/storage/tables/${encodeURIComponent(tableId)}/export-async`, body, controller.signal);
    const job = await waitForJob(client, started, (j) => progress.update(progressText(tableId, j)), controller.signal);
    progress.clear();
    if (job.status === 'error') {
      const code = job.error?.code ? ` (${job.error.code})` : '';
      throw new CliError(`${job.error?.message ?? `the export of ${tableId} failed`}${code}`);
    }
    const fileId = job.results?.file?.id;
    if (fileId === undefined) throw new CliError(`the export job ${job.id} succeeded without a file`);
    const file = await client.json<StorageFileJson>('GET', `/v2/storage/files/${encodeURIComponent(String(fileId))}`, undefined, controller.signal);
    const res = await client.download(downloadPath(file.url), controller.signal);
    if (!res.body) throw new CliError(`the download of file ${file.id} has no body`);
    const total = file.sizeBytes;
    const bytes = await output.write(res.body, (n) => {
      const share = total > 0 ? ` (${Math.floor((n / total) * 100)} %)` : '';
      progress.update(`downloading ${file.name}: ${formatBytes(n)} / ${formatBytes(total)}${share}`);
    }, controller.signal);
    progress.clear();
    const rows = job.results?.totalRowsCount ?? job.progress?.rows ?? 0;
    io.stderr.write(`exported ${formatCount(rows)} row${rows === 1 ? '' : 's'} of ${tableId} to ${output.label} (${formatBytes(bytes)})\n`);
    return 0;
  } catch (err) {
    progress.clear();
    await output.discard();
    if (controller.signal.aborted) {
      io.stderr.write(`sluice: interrupted${out === '-' ? '' : `; ${out} was not written`}\n`);
      return 130;
    }
    throw err;
  } finally {
    process.removeListener('SIGINT', onSignal);
    process.removeListener('SIGTERM', onSignal);
  }
}
