/**
 * The composition root's product: every long-lived service of one node, built once at start
 * and handed to the actors and to buildApp (wiring/http-app.ts), which gives each API plugin only the
 * part its options declare.
 */
import type { BacklogGate } from './actors/backlog-gate.js';
import type { Config } from './config.js';
import type { Logger } from './logger.js';
import type { MetadataStore } from './ports/metadata-store.js';
import type { TokenService } from './storage/tokens.js';
import type { TableService } from './storage/tables.js';
import type { Project } from './storage/project.js';
import type { TaskRunner } from './definition/tasks.js';
import type { SourceService } from './definition/sources.js';
import type { SinkService } from './definition/sinks.js';
import type { StatisticsService } from './levels/statistics.js';
import type { StatisticsHistory } from './levels/statistics-history.js';
import type { TemplateEngine } from './pipeline/template-engine.js';
import type { MappingCache } from './pipeline/mapping-cache.js';
import type { EventLog } from './ports/event-log.js';
import type { IngestSources } from './sources/http/index.js';
import type { InflightBudget } from './sources/otlp/inflight.js';
import type { QuotaBuckets } from './sources/ingest/source-quotas.js';
import type { StreamRuntime } from './actors/stream-runtime.js';
import type { MappingFailures } from './levels/mapping-failures.js';
import type { ConfigurationService } from './storage/configurations/service.js';
import type { EventService } from './storage/events.js';
import type { JobService } from './queue/job-service.js';
import type { ExportService } from './storage/exports.js';
import type { FileService } from './storage/files.js';
import type { StorageJobs } from './storage/storage-jobs.js';
import type { SqlService } from './storage/sql.js';
import type { Metrics } from './observability/metrics.js';

export interface Services {
  config: Config;
  logger: Logger;
  metadata: MetadataStore;
  project: Project;
  tokens: TokenService;
  tables: TableService;
  tasks: TaskRunner;
  sources: SourceService;
  sinks: SinkService;
  statistics: StatisticsService;
  /** The sinks' statistics of the last hours, sampled by this node (GET .../statistics/history). */
  statisticsHistory: StatisticsHistory;
  templates: TemplateEngine;
  mappings: MappingCache;
  eventLog: EventLog;
  /** Back-pressure: refuses a source's records while its sinks are too far behind. */
  backlogGate: BacklogGate;
  ingestSources: IngestSources;
  /** OTLP request bytes processed at once, over OTLP/HTTP and OTLP/gRPC together. */
  otlpInflight: InflightBudget;
  /** Per-source quotas on this node: every ingestion path takes from them; the API shows them. */
  quotas: QuotaBuckets;
  runtime: StreamRuntime;
  failures: MappingFailures;
  /** Component configurations and rows (Storage API). */
  configurations: ConfigurationService;
  /** Storage events: the job log. */
  events: EventService;
  /** The job queue's jobs. */
  jobs: JobService;
  /** Table exports (Storage jobs writing Storage files). */
  exports: ExportService;
  /** Storage jobs: the exports' progress and results. */
  storageJobs: StorageJobs;
  /** Storage files: what exports wrote, with signed download URLs. */
  files: FileService;
  /** Read-only SQL on the tables. */
  sql: SqlService;
  /** The node's Prometheus metrics. */
  metrics: Metrics;
  /** True from the moment a graceful shutdown starts: ingestion answers 503. */
  isShuttingDown: () => boolean;
}
