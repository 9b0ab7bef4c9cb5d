/**
 * The target a node imports into (DESIGN.md "Ports and adapters"): a PostgreSQL server when
 * `--target postgres://...` is given, else the embedded DuckDB file (`--target-path`), which
 * cluster nodes on one host open per operation (`shared`).
 */
import type { Config } from '../../config.js';
import type { Logger } from '../../logger.js';
import type { Target } from '../../storage/target.js';
import { DuckDbTarget } from './duckdb-target.js';
import { PostgresTarget } from './postgres-target.js';

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
  return DuckDbTarget.open(config.targetPath, { shared: config.kafkaBrokers !== undefined, memoryLimitBytes: config.sqlMemoryLimitBytes });
}
