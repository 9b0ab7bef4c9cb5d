import { mkdirSync, readFileSync, writeFileSync, existsSync, chmodSync, rmSync } from 'node:fs';
import { join, relative, isAbsolute } from 'node:path';
import { randomBytes, randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import { templateLimits, type Config } from './config.js';
import { createLogger, type Logger } from './logger.js';
import { openMetadataStore } from './wiring/open-metadata-store.js';
import { ReplicatedMetadataStore } from './adapters/metadata/replicated-store.js';
import { BlockIds } from './adapters/metadata/block-ids.js';
import { sequenceIds } from './storage/id-sequence.js';
import { openTarget } from './wiring/open-target.js';
import { TokenService } from './storage/tokens.js';
import { TableService } from './storage/tables.js';
import { StorageJobs } from './storage/storage-jobs.js';
import { FileService } from './storage/files.js';
import { ExportService } from './storage/exports.js';
import { SqlService } from './storage/sql.js';
import { Metrics } from './observability/metrics.js';
import { MeteredEventLog } from './observability/metered-event-log.js';
import { refreshGauges } from './observability/gauges.js';
import { VERSION } from './version.js';
import { checkTargetOfDataDir, lockDataDir, makePrivate, type TargetIdentity } from './data-dir.js';
import { historyKey, StatisticsHistory } from './levels/statistics-history.js';
import { StartFailure } from './start-failure.js';
import { startMetricsListener } from './observability/metrics-listener.js';
import { Project } from './storage/project.js';
import { StatisticsService } from './levels/statistics.js';
import { ClusterStatistics } from './levels/cluster-statistics.js';
import { ClusterOrders } from './actors/cluster-orders.js';
import { TaskRunner } from './definition/tasks.js';
import { SourceService } from './definition/sources.js';
import { SinkService } from './definition/sinks.js';
import { SinkLifecycle } from './definition/sink-lifecycle.js';
import type { MappingChecker } from './model/columns.js';
import { SluiceTemplateEngine } from './adapters/jsonnet/sluice-engine.js';
import { InThreadRenderer } from './actors/render/renderer.js';
import { WorkerRenderer } from './actors/render/worker-renderer.js';
import { InflightSlot, leftMarks as readLeftMarks, slotPath } from './actors/render/inflight.js';
import { RenderSandbox } from './actors/render/sandbox.js';
import { validateMapping } from './pipeline/columns/index.js';
import { checkFilter } from './pipeline/record-filter.js';
import { MappingCache } from './pipeline/mapping-cache.js';
import { openEventLog } from './wiring/open-event-log.js';
import { FilesRepository } from './levels/files-repository.js';
import { SinkPositions } from './levels/positions.js';
import { FileExpiry } from './levels/expiry.js';
import { MappingFailures } from './levels/mapping-failures.js';
import { LocalDirectoryStaging } from './adapters/staging/local-directory-staging.js';
import { LevelOperator } from './actors/level-operator/index.js';
import { SINK_WRITE_ATTEMPTS } from './actors/sink-health.js';
import { BacklogGate } from './actors/backlog-gate.js';
import { StreamRuntime } from './actors/stream-runtime.js';
import { PartitionHandOver } from './actors/hand-over.js';
import { MetadataIngestSources } from './sources/http/index.js';
import { QuotaBuckets } from './sources/ingest/source-quotas.js';
import { throttleCounters } from './observability/ingest-requests.js';
import { buildApp } from './wiring/http-app.js';
import { startOtlpGrpcListener } from './wiring/otlp-grpc.js';
import { InflightBudget } from './sources/otlp/inflight.js';
import { defaultInflightBytes } from './sources/otlp/ingest.js';
import type { OtlpGrpcListener } from './sources/otlp-grpc/index.js';
import { HttpServers, httpLimits } from './http/http-server.js';
import { createJobQueue } from './queue/index.js';
import { resealStoredSecrets } from './queue/stored-secrets.js';
import { Secrets } from './storage/secrets.js';
import {
  checkProjectKey, ENCRYPTION_KEY_FILE, ENCRYPTION_KEY_SPACES, markPlainSecretsSealed, plainSecretsSealed, projectKeyId, resolveEncryptionKeys, type NodeKeys,
} from './storage/encryption-key.js';
import type { Services } from './services.js';
import type { KeySpace, MetadataStore } from './ports/metadata-store.js';
import { ID_BLOCK_KEY_SPACES } from './adapters/metadata/kafka-metadata-log.js';
import { DEFINITION_KEY_SPACES } from './definition/repository.js';
import { TASK_KEY_SPACES } from './definition/tasks.js';
import { TOKEN_KEY_SPACES } from './storage/tokens.js';
import { CONFIGURATION_KEY_SPACES } from './storage/configurations/service.js';
import { EVENT_KEY_SPACES } from './storage/events.js';
import { ID_SEQUENCE_KEY_SPACES } from './storage/id-sequence.js';
import { STORAGE_JOB_KEY_SPACES } from './storage/storage-jobs.js';
import { FILE_KEY_SPACES } from './storage/files.js';
import { MAPPING_FAILURE_KEY_SPACES } from './levels/mapping-failures.js';
import { CLUSTER_STATISTICS_KEY_SPACES } from './levels/cluster-statistics.js';
import { LEVEL_FILE_KEY_SPACES } from './levels/files-repository.js';
import { POSITION_KEY_SPACES } from './levels/positions.js';
import { STATISTICS_ARCHIVE_KEY_SPACES } from './levels/statistics-archive.js';
import { FILTERED_COUNT_KEY_SPACES } from './levels/filtered-counts.js';
import { JOB_KEY_SPACES } from './queue/job-service.js';
import { SINK_HEALTH_KEY_SPACES } from './actors/sink-health.js';
import { HAND_OVER_KEY_SPACES } from './actors/hand-over.js';
import { CLUSTER_ORDER_KEY_SPACES } from './actors/cluster-orders.js';

/**
 * Every key space of the metadata, as the modules that own the keys declare them: the
 * metadata store replicates the shared ones between cluster nodes (replicated-store.ts).
 */
export const KEY_SPACES: readonly KeySpace[] = [
  ...DEFINITION_KEY_SPACES,
  ...TASK_KEY_SPACES,
  ...TOKEN_KEY_SPACES,
  ...CONFIGURATION_KEY_SPACES,
  ...EVENT_KEY_SPACES,
  ...ID_SEQUENCE_KEY_SPACES,
  ...STORAGE_JOB_KEY_SPACES,
  ...FILE_KEY_SPACES,
  ...MAPPING_FAILURE_KEY_SPACES,
  ...CLUSTER_STATISTICS_KEY_SPACES,
  ...LEVEL_FILE_KEY_SPACES,
  ...POSITION_KEY_SPACES,
  ...STATISTICS_ARCHIVE_KEY_SPACES,
  ...FILTERED_COUNT_KEY_SPACES,
  ...JOB_KEY_SPACES,
  ...SINK_HEALTH_KEY_SPACES,
  ...HAND_OVER_KEY_SPACES,
  ...CLUSTER_ORDER_KEY_SPACES,
  ...ID_BLOCK_KEY_SPACES,
  ...ENCRYPTION_KEY_SPACES,
];

export interface RunningServer {
  app: FastifyInstance;
  services: Services;
  /** The address the listener is bound to, e.g. http://127.0.0.1:8000 */
  address: string;
  /** The --metrics-port listener's address, when there is one. */
  metricsAddress?: string;
  /** The OTLP/gRPC listener's `host:port`, when there is one (--otlp-grpc-port, nodes with the ingest role). */
  otlpGrpcAddress?: string;
  close(): Promise<void>;
}

const MASTER_TOKEN_FILE = 'master-token';

/**
 * The master token: SLUICE_MASTER_TOKEN when set, otherwise the one generated on the first
 * start and kept in the data directory (mode 0600). `generated` is true only on that first
 * start, so the caller prints it exactly once.
 */
function resolveMasterToken(config: Config): { secret: string; generated: boolean } {
  if (config.masterToken) return { secret: config.masterToken, generated: false };
  const file = join(config.dataDir, MASTER_TOKEN_FILE);
  // A token generated by a start that then failed (a port in use) is shown by the next one that succeeds.
  const unshown = existsSync(join(config.dataDir, MASTER_TOKEN_UNSHOWN));
  if (existsSync(file)) return { secret: readFileSync(file, 'utf8').trim(), generated: unshown };
  const secret = `${config.projectId}-1-${randomBytes(30).toString('base64url').slice(0, 40)}`;
  writeFileSync(join(config.dataDir, MASTER_TOKEN_UNSHOWN), '', { mode: 0o600 });
  writeFileSync(file, secret + '\n', { mode: 0o600 });
  chmodSync(file, 0o600);
  return { secret, generated: true };
}

/** The target this start names, as the data directory records it (no password). */
function targetIdentity(config: Config): TargetIdentity {
  if (!config.targetUrl) return { kind: 'duckdb', where: config.targetPath };
  const url = new URL(config.targetUrl);
  return { kind: 'postgres', where: `${url.hostname}:${url.port || 5432}${url.pathname}` };
}

/**
 * Every sink's table in this node's target, created where missing (the sink's own columns, as
 * creating the sink does); resolves to how many sinks there are and the ones that failed.
 */
async function ensureSinkTables(config: Config, sources: SourceService, sinks: SinkService, lifecycle: SinkLifecycle): Promise<{ sinks: number; failed: { sink: string; reason: string }[] }> {
  const branchId = config.defaultBranchId;
  let count = 0;
  const failed: { sink: string; reason: string }[] = [];
  for (const source of sources.list(branchId, false)) {
    for (const sink of sinks.list(branchId, source.sourceId, false)) {
      count++;
      try {
        await lifecycle.ensureTable(sink);
      } catch (err) {
        failed.push({ sink: `${source.sourceId}/${sink.sinkId}`, reason: (err as Error).message });
      }
    }
  }
  return { sinks: count, failed };
}

/** --adopt-target on: the sinks' tables are created in the new target (their rows stay in the old one). */
async function adoptTarget(config: Config, sources: SourceService, sinks: SinkService, lifecycle: SinkLifecycle, logger: Logger): Promise<void> {
  const { sinks: count, failed } = await ensureSinkTables(config, sources, sinks, lifecycle);
  if (failed.length > 0) throw new StartFailure(`--adopt-target on could not create the table of ${failed.length} sink(s) in the new target: ${failed.slice(0, 3).map((f) => `${f.sink}: ${f.reason}`).join('; ')}`);
  logger.warn({ sinks: count }, 'the data directory moved to this target (--adopt-target on): its sinks\' tables were created here; the rows imported before stay in the previous target');
}

/**
 * A data directory that records no target yet (a node joining a cluster whose metadata already
 * names sinks, or a directory of a version before target.json) writes to this one: the sinks'
 * tables that are missing here are created, so that their imports do not fail on a table that
 * does not exist. A failure is logged, not fatal: the imports retry, and their errors say why.
 */
async function ensureTablesOfNewDataDir(config: Config, sources: SourceService, sinks: SinkService, lifecycle: SinkLifecycle, logger: Logger): Promise<void> {
  const { sinks: count, failed } = await ensureSinkTables(config, sources, sinks, lifecycle);
  if (count > 0) logger.info({ sinks: count }, 'a data directory new to this target: the sinks\' tables are in place');
  if (failed.length > 0) logger.warn({ failed: failed.slice(0, 10), count: failed.length }, 'could not create the tables of some sinks in this target; their imports fail until the tables exist');
}

/** A listener that cannot bind, as one line with the flag to change. */
function listenFailure(err: unknown, what: string, host: string, port: number, flag: string): unknown {
  const code = (err as NodeJS.ErrnoException).code;
  if (code === 'EADDRINUSE') return new StartFailure(`port ${port} on ${host} (${what}) is in use by another process: stop it, or start with another ${flag}.`);
  if (code === 'EACCES') return new StartFailure(`port ${port} on ${host} (${what}) needs privileges this process does not have: choose a port above 1023 with ${flag}.`);
  if (code === 'EADDRNOTAVAIL') return new StartFailure(`the address ${host} (${what}) is not one of this machine's: change --host (SLUICE_HOST).`);
  return err;
}

/** Marks a generated master token that no start has printed yet. */
const MASTER_TOKEN_UNSHOWN = 'master-token.unshown';

/**
 * The `#` values' key ring after checking it against the project's key (a node with another
 * key refuses to start); a node without a key is told, once, what it cannot do.
 */
function openSecrets(keys: NodeKeys, config: Config, metadata: MetadataStore, logger: Logger): Secrets {
  checkProjectKey(metadata, keys.cipher);
  if (keys.source === 'generated') logger.info({ file: join(config.dataDir, ENCRYPTION_KEY_FILE), keyId: keys.cipher?.keyId }, 'encryption key of the # values generated');
  if (!keys.cipher) {
    logger.warn({ projectKeyId: projectKeyId(metadata) },
      'no encryption key (SLUICE_ENCRYPTION_KEY): in cluster mode none is generated; this node refuses to save # values (503) and fails jobs that need one');
  }
  return new Secrets(keys.cipher);
}

/** The paths that are not inside `dir` (the data directory's own are made private with it). */
function outside(dir: string, paths: string[]): string[] {
  return paths.filter((p) => {
    const rel = relative(dir, p);
    return rel.startsWith('..') || isAbsolute(rel);
  });
}

/** Opens every store of the node, builds the services and the HTTP app, and listens. */
export async function startServer(config: Config, logger: Logger = createLogger(config.logLevel, config.logFormat)): Promise<RunningServer> {
  const started = Date.now();
  mkdirSync(config.dataDir, { recursive: true, mode: 0o700 });
  // One process per data directory: a second one is refused here, naming the first one's PID.
  const releaseDataDir = lockDataDir(config.dataDir);
  const privateModes = makePrivate(config.dataDir, outside(config.dataDir, [config.targetPath, `${config.targetPath}.wal`]));
  if (privateModes.changed > 0) logger.info({ changed: privateModes.changed, dataDir: config.dataDir }, 'group and other rights removed from the data directory\'s entries');
  if (privateModes.failed.length > 0) logger.warn({ failed: privateModes.failed.slice(0, 10), count: privateModes.failed.length }, 'could not make some entries of the data directory private');
  // The key of the `#` values first: a key file that cannot be read ends the start at once.
  const keys = resolveEncryptionKeys({ dataDir: config.dataDir, key: config.encryptionKey, cluster: config.kafkaBrokers !== undefined });
  const metrics = new Metrics({ version: VERSION, target: config.targetUrl ? 'postgres' : 'duckdb', eventLog: config.kafkaBrokers ? 'kafka' : 'lmdb' });
  // The target first: a database that cannot be reached ends the start at once, with one line.
  const target = await openTarget(config, logger);
  // The data directory's sinks write to the target it was created with: another one is refused (or adopted).
  let targetOfDataDir: ReturnType<typeof checkTargetOfDataDir>;
  try {
    targetOfDataDir = checkTargetOfDataDir(config.dataDir, targetIdentity(config), config.adoptTarget);
  } catch (err) {
    await target.close();
    throw err;
  }
  // This process in a cluster: its metadata changes, partition-group membership and hand-over marks carry it.
  const nodeId = randomUUID();
  const metadata = await openMetadataStore(config, logger, nodeId, KEY_SPACES);
  let secrets: Secrets;
  try {
    secrets = openSecrets(keys, config, metadata, logger);
  } catch (err) {
    await metadata.close();
    await target.close();
    throw err;
  }
  const project = new Project(config.projectId, config.defaultBranchId);
  // Ids no two cluster nodes can both hand out; counters in the store on a node of its own.
  const ids = metadata instanceof ReplicatedMetadataStore ? await BlockIds.start(() => metadata.reserveBlock()) : sequenceIds;
  const tokens = new TokenService(metadata, config.projectId, ids);
  const master = resolveMasterToken(config);
  tokens.ensureMaster(master.secret);
  const tables = new TableService(target, config.projectId);
  const storageJobs = new StorageJobs(metadata, ids);
  const files = new FileService(metadata, ids, config.dataDir, config.publicApiUrl);
  const exports = new ExportService({ tables, jobs: storageJobs, files, dataDir: config.dataDir, retentionMs: config.exportRetentionMs, logger: logger.child({ component: 'exports' }) });
  const sql = new SqlService(tables, {
    timeoutMs: config.sqlTimeoutMs, maxRows: config.sqlMaxRows, connections: config.sqlConnections, queueSize: config.sqlQueueSize,
    dialect: config.targetUrl ? 'PostgreSQL' : 'DuckDB',
  });

  const tasks = new TaskRunner(metadata, logger.child({ component: 'tasks' }), config.publicApiUrl);
  const interrupted = tasks.recoverInterrupted();
  if (interrupted > 0) logger.warn({ interrupted }, 'tasks interrupted by the previous stop were marked as failed');
  const lifecycle = new SinkLifecycle(metadata, tokens, {
    ensureTable: (id, columns, options) => tables.ensureTable(id, columns, options),
    findTable: (id) => tables.findTable(id),
    dropTable: async (id) => void (await tables.dropTable(id)),
    // Cascade delete removes a stream's bucket only when no other table is left in it.
    dropBucket: async (id) => {
      if ((await tables.listTables(id)).length === 0) await tables.dropBucket(id);
    },
  });
  // Templates run on Sluice's own Jsonnet compiler; libjsonnet is only the tests' oracle.
  // The same limits wherever a template runs: the render worker, and this thread (the test
  // endpoint, verbose ingestion, OTLP's checks, and rendering when --render-thread is off).
  const limits = templateLimits(config);
  const templates = new SluiceTemplateEngine(limits);
  const mappings = new MappingCache(templates);
  const checkMapping: MappingChecker = async (columns, filter) =>
    (await validateMapping(columns, templates)) ?? (filter ? await checkFilter(filter, templates) : undefined);
  const sources = new SourceService(metadata, tasks, config.projectId, lifecycle);
  const sinks = new SinkService(metadata, tasks, config.projectId, lifecycle, checkMapping);
  if (targetOfDataDir === 'adopted') await adoptTarget(config, sources, sinks, lifecycle, logger);
  else if (targetOfDataDir === 'new') await ensureTablesOfNewDataDir(config, sources, sinks, lifecycle, logger);
  // Cluster mode: streams pass between nodes by a hand-over, and each node publishes its part of the statistics.
  const handOver = config.kafkaBrokers
    ? new PartitionHandOver(metadata, nodeId, logger.child({ component: 'hand-over' }), { metrics })
    : undefined;
  const clusterStatistics = handOver ? new ClusterStatistics(metadata, nodeId, (node) => handOver.isAlive(node)) : undefined;
  const statistics = new StatisticsService(metadata, { peers: clusterStatistics && ((sink) => clusterStatistics.peers(sink)) });
  // Every ingestion path acknowledges through the log's append: counted there, once.
  const eventLog = new MeteredEventLog(await openEventLog(config, logger, nodeId), metrics);
  const levelFiles = new FilesRepository(metadata);
  const positions = new SinkPositions(metadata);
  const failures = new MappingFailures(metadata);
  // The staging level: a directory on this node (an object store would be another adapter).
  const staging = new LocalDirectoryStaging(config.dataDir);
  const operator = new LevelOperator({
    store: metadata, files: levelFiles, expiry: new FileExpiry(metadata), tables, dataDir: config.dataDir, staging, retryBaseMs: config.retryBaseMs,
    stagingRetentionMs: config.stagingRetentionMs, logger, owner: config.kafkaBrokers ? nodeId : undefined, metrics,
  });
  // What the previous process was mapping when it died (its renderers' slots): read before this
  // process makes slots of its own, parked by the runtime before any sink maps (stopped-mappings.ts).
  const leftMarks = readLeftMarks(config.dataDir);
  // Records whose mapping stopped a process are tried again only in a child process (render/sandbox.ts).
  const heapLimitMb = Math.ceil(config.renderHeapLimitBytes / 2 ** 20);
  const sandbox = new RenderSandbox({ heapLimitMb, limits });
  // Sinks' mapping and CSV encoding run on worker threads, beside ingestion (actors/render).
  const renderer = config.renderThread
    ? new WorkerRenderer({ slotPath: (thread) => slotPath(config.dataDir, thread), heapLimitMb, limits, prober: sandbox, logger: logger.child({ component: 'render' }) })
    : new InThreadRenderer(templates, new InflightSlot(slotPath(config.dataDir, 'event-loop')));
  const backlogGate = new BacklogGate(config.maxSinkBacklog, logger.child({ component: 'backlog' }));
  const runtime = new StreamRuntime({
    store: metadata, files: levelFiles, positions, failures, renderer, dataDir: config.dataDir, staging, logger, eventLog, operator, tables, metrics,
    handOver,
    orders: handOver && new ClusterOrders(metadata, nodeId, (node) => handOver.isAlive(node)),
    publishStatistics: clusterStatistics && ((sinks, now, force) => clusterStatistics.publish(statistics, sinks, now, force)),
    projectId: config.projectId, branchId: config.defaultBranchId, checkIntervalMs: config.checkIntervalMs,
    limits: { uploadMinIntervalMs: config.uploadMinIntervalMs, importMinIntervalMs: config.importMinIntervalMs, maxSlices: 100 },
    retention: { maxAgeMs: config.logRetentionMs, maxBytesPerTopic: config.logMaxBytesPerTopic },
    sinkRetry: { attempts: SINK_WRITE_ATTEMPTS, baseMs: config.sinkRetryBaseMs },
    renderBudgetMs: config.renderBudgetMs > 0 ? config.renderBudgetMs : undefined,
    backlogGate,
    prober: sandbox,
    leftMarks,
  });
  const ingestSources = new MetadataIngestSources(metadata, config.defaultBranchId);
  const quotas = new QuotaBuckets({
    defaults: { recordsPerSecond: config.sourceMaxRecordsPerSecond, bytesPerSecond: config.sourceMaxBytesPerSecond },
    counters: throttleCounters(metrics),
  });
  const queue = createJobQueue({ config, metadata, tables, secrets, tokens, logger, ids, metrics });
  // `#` values saved before they were encrypted are encrypted at the first start with a key (a pass over the configurations and jobs).
  if (secrets.keyId !== undefined && !plainSecretsSealed(metadata)) {
    const sealed = resealStoredSecrets(queue, secrets, 'plain');
    markPlainSecretsSealed(metadata);
    if (sealed.encrypted > 0) logger.info({ values: sealed.encrypted, entries: sealed.entries }, '# values saved in plain text before encryption were encrypted');
    if (sealed.unreadable.length > 0) {
      logger.warn({ values: sealed.unreadable.length, first: sealed.unreadable.slice(0, 5) }, '# values that this node\'s key cannot decrypt: jobs that need them fail');
    }
  }
  // A finished management task may have changed definitions: ingestion and actors follow at once.
  tasks.onFinished(() => {
    ingestSources.invalidate();
    void runtime.reconcile();
  });
  // Cluster mode: definitions changed on another node are followed the same way.
  metadata.onRemoteChange(() => {
    ingestSources.invalidate();
    void runtime.reconcile();
  });
  // The sinks' totals every 30 s of the last hours, for the console's charts (GET .../statistics/history).
  const statisticsHistory = new StatisticsHistory(function* () {
    const branchId = config.defaultBranchId;
    for (const source of sources.list(branchId, false)) {
      for (const sink of sinks.list(branchId, source.sourceId, false)) {
        const key = { branchId, sourceId: source.sourceId, sinkId: sink.sinkId };
        const total = statistics.sinkTotal(branchId, source.sourceId, sink.sinkId);
        yield [historyKey(branchId, source.sourceId, sink.sinkId), {
          received: total.total?.recordsCount ?? 0, imported: total.levels.target?.recordsCount ?? 0, failed: failures.count(key),
        }] as const;
      }
    }
  }, { intervalMs: config.statisticsHistoryIntervalMs, onError: (err) => logger.warn({ err }, 'a sample of the statistics history failed; the next one is taken as usual') });
  let shuttingDown = false;
  const services: Services = {
    config, logger, metadata, project, tokens, tables, tasks, sources, sinks, statistics, statisticsHistory, templates, mappings,
    eventLog, backlogGate, ingestSources, quotas, runtime, failures, isShuttingDown: () => shuttingDown,
    // One budget for OTLP/HTTP and OTLP/gRPC: memory does not double with a second transport.
    otlpInflight: new InflightBudget(defaultInflightBytes(config.otlpMaxBodyBytes)),
    configurations: queue.configurations, events: queue.events, jobs: queue.jobs,
    exports, storageJobs, files, sql, metrics,
  };
  metrics.onScrape(() => refreshGauges(metrics, {
    store: metadata,
    eventLog,
    writers: () => (runtime.started ? runtime.writerPartitions() : []),
    committedOffset: (key) => positions.consumerOffset(key),
    ownedPartitions: handOver ? () => runtime.ownedPartitionCount() : undefined,
  }));
  // Exported files are deleted when they expire (checked at start and every 10 minutes).
  const purgeFiles = () => void files.purgeExpired().catch((err: unknown) => logger.warn({ err }, 'could not delete expired files'));
  purgeFiles();
  const filePurge = setInterval(purgeFiles, 600_000);
  filePurge.unref();
  // Roles (docs/cluster.md, "Cluster mode"); a node without --kafka has them all.
  if (config.roles.has('sink')) runtime.start();
  if (config.roles.has('jobs')) queue.pool.start();
  if (config.roles.has('api')) statisticsHistory.start();
  // Both listeners with the same timeouts, and one connection cap for the two (they share the descriptors).
  const servers = new HttpServers(httpLimits(config), logger);
  const app = await buildApp(services, servers);
  let metricsListener: Awaited<ReturnType<typeof startMetricsListener>> | undefined;
  let otlpGrpc: OtlpGrpcListener | undefined;
  let closing: Promise<void> | undefined;
  const address = await app.listen({ host: config.host, port: config.port }).catch((err: unknown) => {
    throw listenFailure(err, 'the API', config.host, config.port, '--port (SLUICE_PORT)');
  });
  const close = (): Promise<void> => {
    closing ??= (async () => {
      shuttingDown = true;
      clearInterval(filePurge);
      statisticsHistory.stop();
      // Both ingestion listeners drain their running requests and calls at once.
      await Promise.all([app.close(), otlpGrpc?.close()]);
      await exports.drain();
      await tasks.drain();
      await queue.pool.stop();
      await runtime.stop();
      await renderer.close();
      await eventLog.close();
      await target.close();
      await metadata.close();
      await metricsListener?.close();
      releaseDataDir();
      logger.info({ address }, 'sluice stopped');
    })();
    return closing;
  };
  try {
    // OTLP over gRPC on a port of its own (--otlp-grpc-port; a port in use ends the start).
    otlpGrpc = await startOtlpGrpcListener(services, servers);
    // GET /metrics on a port of its own too (--metrics-port), e.g. one not exposed to clients.
    metricsListener = config.metricsPort === undefined
      ? undefined
      : await startMetricsListener(metrics, config.host, config.metricsPort, config.metricsToken, (listener) => servers.createServer(listener)).catch((err: unknown) => {
        throw listenFailure(err, 'the metrics listener', config.host, config.metricsPort!, '--metrics-port (SLUICE_METRICS_PORT)');
      });
  } catch (err) {
    await close();
    throw err;
  }
  const masterTokenFile = config.masterToken ? 'SLUICE_MASTER_TOKEN' : join(config.dataDir, MASTER_TOKEN_FILE);
  if (master.generated) {
    // Printed once, on the first start that succeeds; afterwards it is only in <dataDir>/master-token.
    process.stdout.write(`\nMaster token (saved to ${masterTokenFile}): ${master.secret}\n\n`);
    rmSync(join(config.dataDir, MASTER_TOKEN_UNSHOWN), { force: true });
  }
  const api = config.publicApiUrl;
  logger.info({
    address, api, console: `${api}/console/`, apiDocs: `${api}/v1/documentation/`, masterToken: masterTokenFile,
    otlpGrpcAddress: otlpGrpc?.address, metricsAddress: metricsListener?.address, maxConnections: servers.limits.maxConnections, version: VERSION,
    target: target.description, dataDir: config.dataDir, projectId: config.projectId, startupMs: Date.now() - started,
  }, `sluice is ready: the API at ${api}, the console at ${api}/console/, the API docs at ${api}/v1/documentation/; the master token is in ${masterTokenFile}`);

  return {
    app,
    services,
    address,
    otlpGrpcAddress: otlpGrpc?.address,
    metricsAddress: metricsListener?.address,
    close,
  };
}
