/**
 * The target a node imports into (docs/architecture.md "Ports and adapters"): a PostgreSQL server when
 * `--target postgres://...` is given, else the embedded DuckDB file (`--target-path`), which
 * cluster nodes on one host open per operation (`shared`).
 */
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { Target } from '../ports/target.js';
import { DuckDbTarget } from '../adapters/target/duckdb-target.js';
import { PostgresTarget } from '../adapters/target/postgres-target.js';

export async function openTarget(config: Config, logger: Logger): Promise<Target> {
  if (config.targetUrl) {
    return PostgresTarget.open(config.targetUrl, {
      poolSize: config.targetPoolSize,
      onIdleError: (err) => logger.warn({ reason: err.message }, 'a PostgreSQL target connection was closed; the pool opens another when needed'),
      queryConnections: config.sqlConnections,
      queryMemoryBytes: config.sqlMemoryLimitBytes,
      onNotice: (message) => logger.warn(message),
    });
  }
  warnOfThreads(config, logger);
  return DuckDbTarget.open(config.targetPath, { shared: config.kafkaBrokers !== undefined, memoryLimitBytes: config.sqlMemoryLimitBytes });
}

/**
 * Every DuckDB call that runs holds one of Node's libuv threads, which the process's file access
 * shares: read-only queries, an import and an export at once must leave some (docs/exports-and-sql.md, "Read-only SQL").
 */
function warnOfThreads(config: Config, logger: Logger): void {
  const threads = Number(process.env.UV_THREADPOOL_SIZE) || 4;
  if (config.sqlConnections + 2 <= threads) return;
  logger.warn(
    { sqlConnections: config.sqlConnections, uvThreadpoolSize: threads },
    `--sql-connections ${config.sqlConnections} with an import and an export can take all ${threads} libuv threads, and file access would wait: start the process with UV_THREADPOOL_SIZE=${config.sqlConnections + 4} or more`,
  );
}
