#!/usr/bin/env node
/** The `sluice` command line: `sluice <command> [options]` (see USAGE). */
// Each command's modules are loaded when it runs, so that --help, --version, jsonnet or sql do
// not load the server's (fastify, LMDB, DuckDB, Kafka).
import { ConfigError, loadConfig, OPTIONS, optionsHelp } from './config.js';
import { TargetUnavailableError } from './ports/target.js';
import { OtlpGrpcListenError } from './sources/otlp-grpc/listen-error.js';
import { VERSION } from './version.js';

const USAGE = `Usage: sluice <command> [options]

Commands (sluice --version prints the version; sluice <command> --help, or sluice help <command>,
describes one):
  serve     run the service (management API, storage API) on embedded defaults (sluice serve --help)
  jsonnet   evaluate a Jsonnet file or -e snippet like the jsonnet CLI (sluice jsonnet --help)
  extractor run the generic extractor: sluice extractor run --data DIR (sluice extractor --help)
  kafka     start|stop|status a local single-node Kafka broker for development and tests (sluice kafka --help)
  tables    export <tableId>: export a table of a running server to a CSV or Parquet file
            (sluice tables export --help)
  sql       "<SELECT ...>": run a read-only query on the tables of a running server and print
            the rows as a table, CSV or JSON (sluice sql --help)
  secrets   rotate-key: re-encrypt the stored # values with a new key, the server stopped
            (sluice secrets --help)

Options of serve (flag, environment variable, default; flags win over variables):
${optionsHelp()}
`;

const SERVE_USAGE = `Usage: sluice serve [options]

Runs the service: the management APIs (Stream /v1, Storage /v2/storage, job queue /jobs),
ingestion (HTTP, connector batches, OTLP over HTTP and gRPC), the sinks, imports, the jobs and
the web console (/console), on embedded defaults: LMDB, DuckDB and folders under the data
directory.
Each option is a flag (--flag value or --flag=value) or an environment variable; flags win.

Options (flag, environment variable, default):
${optionsHelp()}
`;

/** --help or -h where a flag may stand (not as the value of the flag before it). */
function asksForHelp(argv: string[]): boolean {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') return true;
    if (!arg.includes('=') && OPTIONS.some((o) => o.flag === arg)) i++;
  }
  return false;
}

async function serve(argv: string[]): Promise<void> {
  if (asksForHelp(argv)) {
    process.stdout.write(SERVE_USAGE);
    return;
  }
  const config = loadConfig(argv);
  const [{ createLogger }, { startServer }] = await Promise.all([import('./logger.js'), import('./server.js')]);
  const logger = createLogger(config.logLevel);
  // A promise nobody awaited that failed is a bug, but not a reason to drop every client: what was
  // acknowledged is durable either way, so the service logs it (with its stack) and goes on.
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection (a bug): logged, the service goes on'));
  const server = await startServer(config, logger);
  let stopping = false;
  const stop = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    const force = setTimeout(() => {
      logger.error('shutdown took longer than 10 s, exiting');
      process.exit(1);
    }, 10_000);
    force.unref();
    server.close().then(
      () => process.exit(0),
      (err) => {
        logger.error({ err }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => stop('SIGTERM'));
  process.on('SIGINT', () => stop('SIGINT'));
}

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  switch (command) {
    case 'serve':
      return serve(rest);
    case 'kafka':
      process.exitCode = await (await import('./tools/kafka-broker/cli.js')).runKafkaCli(rest);
      return;
    case 'jsonnet':
      process.exitCode = await (await import('@sluice/jsonnet')).runJsonnetCli(rest, process);
      return;
    case 'extractor':
      process.exitCode = await (await import('@sluice/generic-extractor')).runExtractorCli(rest);
      return;
    case 'tables':
      process.exitCode = await (await import('./cli/tables-export.js')).runTablesCli(rest);
      return;
    case 'sql':
      process.exitCode = await (await import('./cli/sql.js')).runSqlCli(rest);
      return;
    case 'secrets':
      process.exitCode = await (await import('./cli/secrets.js')).runSecretsCli(rest);
      return;
    case '--version':
    case '-V':
    case 'version':
      process.stdout.write(`sluice ${VERSION}\n`);
      return;
    case 'help':
      // `sluice help <command>`: that command's --help.
      if (rest.length > 0 && rest[0] !== 'help') return main([rest[0], '--help']);
      process.stdout.write(USAGE);
      return;
    case undefined:
    case '--help':
    case '-h':
      process.stdout.write(USAGE);
      return;
    default:
      process.stderr.write(`Unknown command "${command}".\n\n${USAGE}`);
      process.exitCode = 1;
  }
}

main(process.argv.slice(2)).catch((err) => {
  if (err instanceof ConfigError) {
    process.stderr.write(`Configuration error: ${err.message}\n`);
  } else if (err instanceof TargetUnavailableError || err instanceof OtlpGrpcListenError) {
    process.stderr.write(`Cannot start: ${err.message}\n`);
  } else {
    process.stderr.write(`${err?.stack ?? err}\n`);
  }
  process.exit(1);
});
