/**
 * The configurations, events and job queue of one node, built together: the job store recovers
 * jobs interrupted by the previous stop, and the worker pool starts the queued ones.
 */
import type { Metrics } from '../observability/metrics.js';
import type { Config } from '../config.js';
import type { MetadataStore } from '../ports/metadata-store.js';
import { sequenceIds } from '../storage/id-sequence.js';
import type { IdAllocator } from '../ports/id-allocator.js';
import type { Logger } from '../logger.js';
import { ConfigurationService } from '../storage/configurations/service.js';
import type { Secrets } from '../storage/secrets.js';
import { EventService } from '../storage/events.js';
import type { TableService } from '../storage/tables.js';
import type { TokenService } from '../storage/tokens.js';
import { JobRunner } from './job-runner.js';
import { JobService } from './job-service.js';
import { WorkerPool } from './worker-pool.js';
import { runnableComponentIds } from '../components/registry.js';

export interface JobQueue {
  configurations: ConfigurationService;
  events: EventService;
  jobs: JobService;
  pool: WorkerPool;
}

export function createJobQueue(deps: {
  config: Config;
  metadata: MetadataStore;
  tables: TableService;
  secrets: Secrets;
  tokens: Pick<TokenService, 'get'>;
  logger: Logger;
  ids?: IdAllocator;
  metrics?: Metrics;
}): JobQueue {
  const { config, metadata, tables, secrets, tokens, ids = sequenceIds } = deps;
  const logger = deps.logger.child({ component: 'jobs' });
  const configurations = new ConfigurationService(metadata, secrets, ids);
  const events = new EventService(metadata);
  const jobs = new JobService(metadata, configurations, config.defaultBranchId, secrets, ids);
  const interrupted = jobs.recoverInterrupted();
  if (interrupted > 0) logger.warn({ interrupted }, 'jobs interrupted by the previous stop were marked as failed');
  // The job metrics of every runnable component start at 0 (a dashboard reads 0, not "No data").
  for (const component of runnableComponentIds()) deps.metrics?.knownComponent(component);
  const runner = new JobRunner({ jobs, configurations, events, tables, secrets, tokens, dataDir: config.dataDir, logger, metrics: deps.metrics });
  const pool = new WorkerPool(jobs, runner, config.jobWorkers, logger);
  return { configurations, events, jobs, pool };
}
