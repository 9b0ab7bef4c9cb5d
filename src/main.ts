#!/usr/bin/env node
/** The `sluice` command line: `sluice <command> [options]` (see USAGE). */
// Each command's modules are loaded when it runs, so that --help, --version, jsonnet or sql do
// not load the server's (fastify, LMDB, DuckDB, Kafka), nor the option table (config.ts loads
// the Jsonnet engine's limits): `sluice --help` and `--version` answer at once.
import { didYouMean } from './model/did-you-mean.js';
import { VERSION } from './version.js';

/** The exit code of a wrong command line (unknown command or option, a bad value), as the client commands use. */
const USAGE_ERROR = 2;


const USAGE = `Usage: sluice <command> [options]

Commands:
  serve     run the service on embedded defaults (API, ingestion, sinks, jobs, console)
  status    a running server at a glance: readiness, sources, sinks, lags, failures
  sources   list | get <sourceId>: the sources of a running server
  sinks     list <sourceId> | get <sourceId> <sinkId>: the sinks of a source
  tables    list | get <tableId> | export <tableId>: the tables, one to a CSV or Parquet file
  sql       "<SELECT ...>": a read-only query on the tables of a running server
  wait      the task a Stream API write answered (on stdin): wait until it is finished
  pull      pull | diff | push [dir]: a branch's sources and sinks as YAML files (pipelines as code)
  jsonnet   evaluate a Jsonnet file or -e snippet like the jsonnet CLI
  extractor run the generic extractor: sluice extractor run --data DIR
  kafka     start|stop|status a local single-node Kafka broker for development and tests
  postgres  start|stop|status a local PostgreSQL server for development (prints --target)
  secrets   rotate-key: re-encrypt the stored # values with a new key, the server stopped

sluice <command> --help (or sluice help <command>) describes a command and its options;
sluice --version prints the version.
`;

const serveUsage = (optionsHelp: string) => `Usage: sluice serve [options]

Runs the service: the management APIs (Stream /v1, Storage /v2/storage, job queue /jobs),
ingestion (HTTP, connector batches, OTLP over HTTP and gRPC), the sinks, imports, the jobs and
the web console (/console), on embedded defaults: LMDB, DuckDB and folders under the data
directory.
Each option is a flag (--flag value or --flag=value) or an environment variable; flags win.

Options (flag, environment variable, default):
${optionsHelp}
`;

/** --help or -h where a flag may stand (not as the value of the flag before it). */
function asksForHelp(argv: string[], OPTIONS: ReadonlyArray<{ flag: string }>): boolean {
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--help' || arg === '-h') return true;
    if (!arg.includes('=') && OPTIONS.some((o) => o.flag === arg)) i++;
  }
  return false;
}

async function serve(argv: string[]): Promise<void> {
  const { loadConfig, OPTIONS, optionsHelp } = await import('./config.js');
  if (asksForHelp(argv, OPTIONS)) {
    process.stdout.write(serveUsage(optionsHelp()));
    return;
  }
  const config = loadConfig(argv);
  const [{ createLogger }, { startServer }] = await Promise.all([import('./logger.js'), import('./server.js')]);
  const logger = createLogger(config.logLevel, config.logFormat);
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

/** The commands other than serve: each loads its module when it runs, and resolves to the exit code. */
/** The development tools' console, with the project's "did you mean" (tools/ import nothing of the project). */
const TOOL_IO = { stdout: process.stdout, stderr: process.stderr, env: process.env, didYouMean };

const RUNNERS: Readonly<Record<string, (args: string[]) => Promise<number>>> = {
  kafka: async (args) => (await import('./tools/kafka-broker/cli.js')).runKafkaCli(args, TOOL_IO),
  postgres: async (args) => (await import('./tools/postgres/cli.js')).runPostgresCli(args, TOOL_IO),
  jsonnet: async (args) => (await import('@sluice/jsonnet')).runJsonnetCli(args, process),
  extractor: async (args) => (await import('@sluice/generic-extractor')).runExtractorCli(args),
  tables: async (args) => (await import('./cli/tables-export.js')).runTablesCli(args),
  sources: async (args) => (await import('./cli/resources.js')).runSourcesCli(args),
  sinks: async (args) => (await import('./cli/resources.js')).runSinksCli(args),
  status: async (args) => (await import('./cli/status.js')).runStatusCli(args),
  sql: async (args) => (await import('./cli/sql.js')).runSqlCli(args),
  pull: async (args) => (await import('./cli/pipelines/commands.js')).runPullCli(args),
  diff: async (args) => (await import('./cli/pipelines/commands.js')).runDiffCli(args),
  push: async (args) => (await import('./cli/pipelines/commands.js')).runPushCli(args),
  secrets: async (args) => (await import('./cli/secrets.js')).runSecretsCli(args),
  wait: async (args) => (await import('./cli/wait.js')).runWaitCli(args),
};

async function main(argv: string[]): Promise<void> {
  const [command, ...rest] = argv;
  if (command !== undefined && Object.hasOwn(RUNNERS, command)) {
    process.exitCode = await RUNNERS[command](rest);
    return;
  }
  switch (command) {
    case 'serve':
      return serve(rest);
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
      process.stderr.write(`Unknown command "${command}".${didYouMean(command, ['serve', ...Object.keys(RUNNERS), 'help', 'version'])}\n\n${USAGE}`);
      process.exitCode = USAGE_ERROR;
  }
}

main(process.argv.slice(2)).catch(async (err) => {
  const [{ ConfigError }, { TargetUnavailableError }, { StartFailure }] = await Promise.all([
    import('./config.js'), import('./ports/target.js'), import('./start-failure.js'),
  ]);
  if (err instanceof ConfigError) {
    process.stderr.write(`Configuration error: ${err.message}\n`);
    process.exit(USAGE_ERROR);
  } else if (err instanceof TargetUnavailableError || err instanceof StartFailure) {
    process.stderr.write(`Cannot start: ${err.message}\n`);
  } else {
    process.stderr.write(`${err?.stack ?? err}\n`);
  }
  process.exit(1);
});
