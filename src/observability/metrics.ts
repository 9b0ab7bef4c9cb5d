/**
 * The node's Prometheus metrics (prom-client), every one defined here so that the names, labels
 * and help texts are in one place (docs/observability.md, "Observability" list and the Grafana
 * dashboard's queries are checked against them). One registry per node process (tests run
 * several nodes in one process). Conventions: `sluice_` prefix, `_total` counters, `_seconds`
 * histograms, base units; labels only of bounded values: configured source, sink and table
 * ids, status classes, reason kinds, levels and states, never record ids or addresses.
 *
 * Counters start at 0 with the process (Prometheus handles resets); gauges are read from the
 * stores when scraped (observability/gauges.ts), so they are right after a restart too.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import { HotCounter, HotHistogram } from './hot-metrics.js';
import type { MappingErrorKind } from '../pipeline/columns/errors.js';

/** Upload, import and request durations: from a millisecond to minutes. */
const SECONDS = [0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const JOB_SECONDS = [0.1, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600, 1800, 3600];

export type IngestRoute = 'record' | 'batch' | 'otlp' | 'otlp-grpc';
/** Why ingestion answered 503. */
export type RefusalReason = 'log_full' | 'disk_full' | 'cluster_unavailable' | 'shutdown';

export class Metrics {
  readonly registry = new Registry();

  readonly buildInfo = new Gauge({
    name: 'sluice_build_info', help: 'The running Sluice: its version and target kind (always 1).',
    labelNames: ['version', 'target', 'event_log'] as const, registers: [this.registry],
  });

  // ---- ingestion (hot path: observability/hot-metrics.ts) ----
  readonly ingestRequests = new HotCounter(
    'sluice_ingest_requests_total', 'Ingestion requests by route (record, batch, otlp, otlp-grpc) and status: the class (2xx, 4xx, 5xx), or for otlp-grpc the gRPC code\'s name (OK, UNAVAILABLE, ...).',
    ['route', 'status'] as const, this.registry,
  );
  readonly ingestDuration = new HotHistogram(
    'sluice_ingest_request_duration_seconds', 'Time from an ingestion request to its answer.',
    ['route'] as const, SECONDS, this.registry,
  );
  readonly ingestRecords = new HotCounter(
    'sluice_ingest_records_total', 'Records accepted into the event log, per source and signal (http, logs, metrics, traces).',
    ['source', 'signal'] as const, this.registry,
  );
  readonly ingestBytes = new HotCounter(
    'sluice_ingest_bytes_total', 'Body bytes of the records accepted into the event log, per source.',
    ['source'] as const, this.registry,
  );
  readonly ingestThrottledRecords = new HotCounter(
    'sluice_ingest_throttled_records_total', 'Records refused (429) because their source was over its quota on this node, per source (from 0 once the source sends under a quota).',
    ['source'] as const, this.registry,
  );
  readonly ingestThrottledBytes = new HotCounter(
    'sluice_ingest_throttled_bytes_total', 'Record bytes refused (429) because their source was over its quota on this node, per source.',
    ['source'] as const, this.registry,
  );
  readonly ingestRefused = new Counter({
    name: 'sluice_ingest_refused_total', help: 'Ingestion requests answered 503, by reason (log_full, disk_full, cluster_unavailable, shutdown).',
    labelNames: ['reason'] as const, registers: [this.registry],
  });

  // ---- the OTLP/gRPC listener's connections ----
  readonly otlpGrpcConnections = new Gauge({
    name: 'sluice_otlp_grpc_connections', help: 'Open OTLP/gRPC connections.',
    registers: [this.registry],
  });
  readonly otlpGrpcConnectionsRefused = new Counter({
    name: 'sluice_otlp_grpc_connections_refused_total', help: 'OTLP/gRPC connections reset at once because a cap was reached, by limit (otlp-grpc: --otlp-grpc-max-connections; node: --max-connections).',
    labelNames: ['limit'] as const, registers: [this.registry],
  });
  readonly otlpGrpcConnectionsClosed = new Counter({
    name: 'sluice_otlp_grpc_connections_closed_total', help: 'OTLP/gRPC connections the node closed for their behaviour, by reason (too_many_pings: --otlp-grpc-min-ping-interval).',
    labelNames: ['reason'] as const, registers: [this.registry],
  });

  // ---- event log ----
  readonly logAppended = new HotCounter(
    'sluice_log_records_appended_total', 'Records appended to the event log, per source.',
    ['source'] as const, this.registry,
  );
  readonly logBytes = new Gauge({
    name: 'sluice_log_bytes', help: 'Bytes the embedded event log holds per source topic (not reported for Kafka: the broker keeps them).',
    labelNames: ['source'] as const, registers: [this.registry],
  });
  readonly sinkLagRecords = new Gauge({
    name: 'sluice_sink_lag_records', help: 'Records of the source not yet mapped by the sink on this node: the log head minus the sink\'s committed position.',
    labelNames: ['source', 'sink'] as const, registers: [this.registry],
  });
  readonly sinkLagSeconds = new Gauge({
    name: 'sluice_sink_lag_seconds', help: 'Age of the oldest record the sink has not mapped yet (0 when it is caught up).',
    labelNames: ['source', 'sink'] as const, registers: [this.registry],
  });

  // ---- sinks and levels ----
  readonly recordsMapped = new Counter({
    name: 'sluice_sink_records_mapped_total', help: 'Records a sink mapped into rows.',
    labelNames: ['source', 'sink'] as const, registers: [this.registry],
  });
  readonly recordsFailed = new Counter({
    name: 'sluice_sink_records_failed_total', help: 'Records a sink could not map, by reason kind (path_not_found, template, invalid_value, filter, stopped, other).',
    labelNames: ['source', 'sink', 'reason'] as const, registers: [this.registry],
  });
  readonly recordsFiltered = new Counter({
    name: 'sluice_sink_records_filtered_total', help: 'Records a sink skipped because its filter returned false for them (handled: neither rows nor failures).',
    labelNames: ['source', 'sink'] as const, registers: [this.registry],
  });
  readonly sinkFailing = new Gauge({
    name: 'sluice_sink_failing', help: 'Whether the sink on this node is failing (1): its writes kept failing, the other sinks of its source go on without it; 0 while it works.',
    labelNames: ['source', 'sink', 'branch'] as const, registers: [this.registry],
  });
  readonly sinkGiveUps = new Counter({
    name: 'sluice_sink_give_ups_total', help: 'Times a sink writer gave up after its bounded retries and marked the sink failing.',
    labelNames: ['source', 'sink', 'branch'] as const, registers: [this.registry],
  });
  readonly slices = new Gauge({
    name: 'sluice_sink_slices', help: 'Slices of the sink on this node by state (writing, closing, uploading, uploaded, imported).',
    labelNames: ['source', 'sink', 'state'] as const, registers: [this.registry],
  });
  readonly files = new Gauge({
    name: 'sluice_sink_files', help: 'Files of the sink on this node by state (writing, closing, importing, imported).',
    labelNames: ['source', 'sink', 'state'] as const, registers: [this.registry],
  });
  readonly levelBytes = new Gauge({
    name: 'sluice_sink_level_bytes', help: 'Bytes of the sink on this node per level: local (CSV not yet staged), staging (gzip not yet imported).',
    labelNames: ['source', 'sink', 'level'] as const, registers: [this.registry],
  });
  readonly uploadDuration = new Histogram({
    name: 'sluice_upload_duration_seconds', help: 'Time to stage a closed slice (gzip to the staging level).',
    buckets: SECONDS, registers: [this.registry],
  });
  readonly importDuration = new Histogram({
    name: 'sluice_import_duration_seconds', help: 'Time to import a file into its table (one target transaction).',
    buckets: SECONDS, registers: [this.registry],
  });
  readonly importsFailed = new Counter({
    name: 'sluice_imports_failed_total', help: 'File imports that failed (and will be retried), per sink.',
    labelNames: ['source', 'sink'] as const, registers: [this.registry],
  });
  readonly importRetriesPending = new Gauge({
    name: 'sluice_import_retries_pending', help: 'Files and slices of the sink on this node that failed and wait for their retry.',
    labelNames: ['source', 'sink'] as const, registers: [this.registry],
  });
  readonly rowsImported = new Counter({
    name: 'sluice_table_rows_imported_total', help: 'Rows imported into a table by the sinks of this node.',
    labelNames: ['table'] as const, registers: [this.registry],
  });

  // ---- cluster ----
  readonly partitionsOwned = new Gauge({
    name: 'sluice_cluster_partitions_owned', help: 'Topic partitions this node works on (cluster mode).',
    registers: [this.registry],
  });
  readonly handOvers = new Counter({
    name: 'sluice_cluster_handovers_total', help: 'Partitions this node took up (direction=taken) or released (direction=released).',
    labelNames: ['direction'] as const, registers: [this.registry],
  });
  readonly fencingRefusals = new Counter({
    name: 'sluice_cluster_fencing_refusals_total', help: 'Imports the target refused because another node had claimed the sink\'s stream since.',
    registers: [this.registry],
  });

  // ---- jobs ----
  readonly jobs = new Counter({
    name: 'sluice_jobs_total', help: 'Finished jobs by component and final status (success, error, terminated).',
    labelNames: ['component', 'status'] as const, registers: [this.registry],
  });
  readonly jobDuration = new Histogram({
    name: 'sluice_job_duration_seconds', help: 'Run time of finished jobs, per component.',
    labelNames: ['component'] as const, buckets: JOB_SECONDS, registers: [this.registry],
  });
  readonly extractorPages = new Counter({
    name: 'sluice_extractor_pages_total', help: 'Pages the generic extractor fetched in finished jobs.',
    registers: [this.registry],
  });
  readonly extractorItems = new Counter({
    name: 'sluice_extractor_items_total', help: 'Items the generic extractor extracted in finished jobs.',
    registers: [this.registry],
  });

  constructor(info: { version: string; target: string; eventLog: string }, options: { defaultMetrics?: boolean } = {}) {
    this.buildInfo.set({ version: info.version, target: info.target, event_log: info.eventLog }, 1);
    // Series of bounded labels start at 0, so that "nothing is failing" reads 0, not "No data".
    for (const reason of REFUSAL_REASONS) this.ingestRefused.inc({ reason }, 0);
    for (const direction of ['taken', 'released']) this.handOvers.inc({ direction }, 0);
    // Event loop lag, heap, GC, handles, CPU: prom-client's standard process metrics.
    if (options.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry });
  }

  /**
   * The counters of a sink known on this node start at 0 (called when scraped, for every sink
   * with a writer here): a dashboard's "failures" and "give-ups" panels read 0 from its start.
   * Adding 0 to an existing series changes nothing.
   */
  knownSink(labels: { source: string; sink: string; branch: string }): void {
    const sink = { source: labels.source, sink: labels.sink };
    this.recordsMapped.inc(sink, 0);
    this.recordsFiltered.inc(sink, 0);
    for (const reason of FAILURE_KINDS) this.recordsFailed.inc({ ...sink, reason }, 0);
    this.sinkGiveUps.inc(labels, 0);
    this.importsFailed.inc(sink, 0);
  }

  /** The job metrics of a runnable component start at 0 for every final status. */
  knownComponent(component: string): void {
    for (const status of FINAL_JOB_STATUSES) this.jobs.inc({ component, status }, 0);
    this.jobDuration.zero({ component });
  }

  /** Called before every scrape: the gauges read from the stores (observability/gauges.ts). */
  onScrape(refresh: () => Promise<void> | void): void {
    this.refreshers.push(refresh);
  }

  /** The text format of every metric, after the gauges were refreshed. */
  async scrape(): Promise<{ contentType: string; body: string }> {
    for (const refresh of this.refreshers) await refresh();
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  private readonly refreshers: (() => Promise<void> | void)[] = [];
}

/** The bounded values of the `reason` label of sluice_sink_records_failed_total. */
export type FailureKind = 'path_not_found' | 'template' | 'invalid_value' | 'filter' | 'stopped' | 'other';
const FAILURE_KINDS: readonly FailureKind[] = ['path_not_found', 'template', 'invalid_value', 'filter', 'stopped', 'other'];
const REFUSAL_REASONS: readonly RefusalReason[] = ['log_full', 'disk_full', 'cluster_unavailable', 'shutdown'];
/** The statuses sluice_jobs_total counts (queue/events.ts: a job's final status). */
const FINAL_JOB_STATUSES = ['success', 'error', 'terminated'] as const;

/**
 * The kind of a mapping failure, for a label of bounded values (the reasons themselves name
 * columns and paths): `path_not_found` (a body path or a header the mapping reads is missing
 * and has no default), `invalid_value` (the body cannot be read as the mapping needs: not JSON,
 * bad form data, an unsupported content type; or a typed column's value does not convert to its
 * type), `template` (a template failed: its error() or a runtime error), `filter` (the sink's
 * filter failed, or answered something else than a boolean), `stopped` (its mapping stopped the
 * process or the render worker before: parked,
 * not mapped again), `other` (an internal failure). The renderer's `kind` (columns/errors.ts)
 * decides when the caller has it; otherwise the reason is read. Every reason of a column starts
 * with `Invalid value for column "x": `, so that prefix says nothing of the kind.
 */
export function failureKind(reason: string, kind?: MappingErrorKind | 'stopped' | 'filter'): FailureKind {
  switch (kind) {
    case 'stopped':
      return 'stopped';
    case 'filter':
      return 'filter';
    case 'notFound':
      return 'path_not_found';
    case 'invalidBody':
    case 'unsupportedMediaType':
    case 'conversion':
      return 'invalid_value';
    case 'template':
      return 'template';
    case 'internal':
      return 'other';
  }
  // A filter's reason says what it returned or how it failed (a missing path too): the filter first.
  if (/^Filter (failed: |returned )/.test(reason)) return 'filter';
  const own = reason.replace(/^Invalid value for column ".*?": /, '');
  if (/^(path|header) ".*" not found|not found in the body|^the column is part of the primary key and has no value/.test(own)) return 'path_not_found';
  if (/^cannot parse request body/.test(own)) return 'invalid_value';
  if (/ is not an? (STRING|INTEGER|NUMERIC|FLOAT|BOOLEAN|DATE|TIMESTAMP|JSON) \(|^the column is part of the primary key and its value has /.test(own)) return 'invalid_value';
  if (/^The mapping of this record stopped /.test(own)) return 'stopped';
  if (/template|jsonnet/i.test(own)) return 'template';
  // Path, header and body failures are matched above: anything else a column reports is its template's error.
  return own !== reason ? 'template' : 'other';
}
