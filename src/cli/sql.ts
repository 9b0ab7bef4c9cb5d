/**
 * `sluice sql "<SELECT ...>"`: a read-only query on the tables of a running server (`POST
 * /v2/storage/sql`), printed as a text table on a terminal and as CSV otherwise, so that
 * `sluice sql ... > out.csv` gives a file other tools read.
 */
import { integerOption, parseCommandLine } from './args.js';
import { ignoreClosedStdout } from './closed-stdout.js';
import { CONNECTION_HELP, CONNECTION_OPTIONS, resolveConnection, StorageClient } from './client.js';
import { CliError, reportErrors, type CliIo } from './errors.js';
import { renderCsv, renderJson, renderTable, SQL_FORMATS, truncationNote, type SqlAnswer, type SqlFormat } from './sql-output.js';

export const SQL_USAGE = `Usage: sluice sql "<SELECT ...>" [options]

Runs one read-only statement (SELECT, WITH ... SELECT, VALUES, TABLE) on the tables of a
running server (POST /v2/storage/sql). Tables are named "<bucket id>"."<table name>", each
part in double quotes (ids hold dots and dashes), e.g.
  sluice sql 'SELECT count(*) FROM "in.c-events"."clicks"'
The SQL is the target's own: DuckDB's (the default target) or PostgreSQL's (--target
postgres://...); the json format and every error name it. Times are ISO 8601 in UTC.

Options:
  --limit <n>                 rows at most (default and bound: the server's --sql-max-rows)
  --timeout <seconds>         run time at most (default and bound: the server's --sql-timeout)
  --format table|csv|json     table: aligned text columns (default on a terminal);
                              csv: RFC 4180 with a header (default otherwise);
                              json: the server's answer {columns, rows, rowsCount,
                              truncated, durationMs, dialect}
  --help                      this message

${CONNECTION_HELP}`;

const SQL_OPTIONS = {
  ...CONNECTION_OPTIONS,
  limit: { type: 'string' },
  timeout: { type: 'string' },
  format: { type: 'string' },
  help: { type: 'boolean', short: 'h' },
} as const;

/** `sluice sql ...`; resolves to the exit code. */
export async function runSqlCli(argv: string[], io: CliIo = process): Promise<number> {
  return reportErrors(io, () => runSql(argv, io));
}

function timeoutOption(value: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const seconds = Number(value);
  if (value.trim() === '' || !Number.isFinite(seconds) || seconds <= 0) {
    throw new CliError(`--timeout must be a number of seconds above 0, got "${value}"`, 2);
  }
  return seconds;
}

async function runSql(argv: string[], io: CliIo): Promise<number> {
  const { values, positionals } = parseCommandLine('sql', argv, SQL_OPTIONS);
  if (values.help) {
    io.stdout.write(SQL_USAGE);
    return 0;
  }
  if (positionals.length === 0) throw new CliError('which query? (sluice sql "SELECT ...")', 2);
  if (positionals.length > 1) throw new CliError('give the query as one argument, in quotes: sluice sql "SELECT ..."', 2);
  const format = (values.format ?? (io.stdout.isTTY ? 'table' : 'csv')) as SqlFormat;
  if (!SQL_FORMATS.includes(format)) throw new CliError(`--format must be one of ${SQL_FORMATS.join(', ')}, got "${values.format}"`, 2);
  const limit = integerOption('limit', values.limit, 1);
  const timeout = timeoutOption(values.timeout);

  const client = new StorageClient(resolveConnection(values, io.env));
  const answer = await client.json<SqlAnswer>('POST', '/v2/storage/sql', { query: positionals[0], limit, timeout });
  ignoreClosedStdout(io.stdout);
  if (format === 'json') {
    io.stdout.write(renderJson(answer));
  } else if (format === 'csv') {
    io.stdout.write(renderCsv(answer));
    // CSV has no room for it: the note goes to stderr, so the data stays clean.
    if (answer.truncated) io.stderr.write(`sluice: ${truncationNote(answer)}\n`);
  } else {
    io.stdout.write(renderTable(answer));
  }
  return 0;
}
