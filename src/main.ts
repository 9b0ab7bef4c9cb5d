#!/usr/bin/env node
/** The `sluice` command line: `sluice <command> [options]` (see USAGE). */
import { ConfigError, loadConfig, optionsHelp } from './config.js';
import { runJsonnetCli } from './jsonnet/cli.js';
import { runExtractorCli } from './components/generic-extractor/cli.js';
import { runKafkaCli } from './connectors/kafka/broker/cli.js';
import { runSqlCli } from './cli/sql.js';
import { runTablesCli } from './cli/tables-export.js';
import { createLogger } from './logger.js';
import { startServer } from './server.js';
import { TargetUnavailableError } from './storage/target.js';
import { VERSION } from './version.js';

const USAGE = `Usage: sluice <command> [options]

Commands (sluice --version prints the version):
  serve     run the service (management API, storage API) on embedded defaults
  jsonnet   evaluate a Jsonnet file or -e snippet like the jsonnet CLI (sluice jsonnet --help)
  extractor run the generic extractor: sluice extractor run --data DIR (sluice extractor --help)
  kafka     start|stop|status a local single-node Kafka broker for development and tests (sluice kafka --help)
  tables    export <tableId>: export a table of a running server to a CSV or Parquet file
            (sluice tables export --help)
  sql       "<SELECT ...>": run a read-only query on the tables of a running server and print
            the rows as a table, CSV or JSON (sluice sql --help)

Options of serve (flag, environment variable):
${optionsHelp()}
`;

async function serve(argv: string[]): Promise<void> {
  const config = loadConfig(argv);
  const logger = createLogger(config.logLevel);
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
      process.exitCode = await runKafkaCli(rest);
      return;
    case 'jsonnet':
      process.exitCode = await runJsonnetCli(rest, process);
      return;
    case 'extractor':
      process.exitCode = await runExtractorCli(rest);
      return;
    case 'tables':
      process.exitCode = await runTablesCli(rest);
      return;
    case 'sql':
      process.exitCode = await runSqlCli(rest);
      return;
    case '--version':
    case '-V':
    case 'version':
      process.stdout.write(`sluice ${VERSION}\n`);
      return;
    case undefined:
    case 'help':
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
  } else if (err instanceof TargetUnavailableError) {
    process.stderr.write(`Cannot start: ${err.message}\n`);
  } else {
    process.stderr.write(`${err?.stack ?? err}\n`);
  }
  process.exit(1);
});
