/**
 * One typed configuration object, read from command-line flags and SLUICE_* environment
 * variables (flags win). Every other module receives the parts it needs from here.
 */
import { join, resolve } from 'node:path';
import { goDurationString, parseByteSize, parseDuration } from './pipeline/units.js';
import { DEFAULT_LIMITS } from './model/levels.js';
import { DEFAULT_TOPIC_PREFIX, parseTopicBindings } from './model/kafka-topic-names.js';
import { InvalidKeyError, parseEncryptionKey } from './model/value-cipher.js';
import { didYouMean } from './model/did-you-mean.js';
import type { LogFormat } from './logger.js';
import { DEFAULT_LIMITS as JSONNET_LIMITS, V8_MAX_ARRAY_LENGTH, V8_MAX_STRING_LENGTH, type LimitOptions } from '@sluice/jsonnet';
import { TEMPLATE_LIMIT_FLAGS, TEMPLATE_TIMEOUT_MS } from './pipeline/template-engine.js';
import { QUOTA_FLAGS, QUOTA_MAX } from './pipeline/quota-settings.js';

export interface Config {
  host: string;
  port: number;
  dataDir: string;
  /** When undefined, a master token is generated on first start and kept in the data dir. */
  masterToken?: string;
  projectId: number;
  defaultBranchId: number;
  /** Base URL of the management API, written into task and source URLs. */
  publicApiUrl: string;
  /** Base URL of the ingestion endpoint, written into source ingestion URLs. */
  publicIngestUrl: string;
  /** Base URL of the job queue API (`/jobs`), written into job URLs; served on the same listener. */
  publicQueueUrl: string;
  /** How many jobs run at once (each in its own worker process). */
  jobWorkers: number;
  logLevel: string;
  logFormat: LogFormat;
  /** Largest accepted ingestion body (reference default 1 MB). */
  maxBodyBytes: number;
  /** Largest accepted body of a connector batch request (.../batch; default 16 MB). */
  maxBatchBodyBytes: number;
  /** Largest OTLP request body, compressed and after decompression (default 16 MB; OTLP recommends a cap). */
  otlpMaxBodyBytes: number;
  /** OTLP over gRPC listens on this port (default 4317, OTLP's); 0: no gRPC listener. Nodes with the ingest role only. */
  otlpGrpcPort: number;
  /** The gRPC listener's address (default: the HTTP listener's, `host`). */
  otlpGrpcHost: string;
  /** Calls at once on one gRPC connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; 0: no limit). */
  otlpGrpcMaxConcurrentStreams: number;
  /** Open gRPC connections at most (0: only the node's --max-connections); undefined: half of --max-connections. */
  otlpGrpcMaxConnections?: number;
  /** A gRPC connection without a call for this long is closed (GOAWAY; 0: never). */
  otlpGrpcMaxConnectionIdleMs: number;
  /** A gRPC connection is asked to go away after about this long, so that clients rebalance (0: never). */
  otlpGrpcMaxConnectionAgeMs: number;
  /** The calls still running this long after that GOAWAY are cut (0: they may run on). */
  otlpGrpcMaxConnectionAgeGraceMs: number;
  /** Pings closer than this with no call between count against the client (0: no check). */
  otlpGrpcMinPingIntervalMs: number;
  /** Body bytes one mapping proposal (POST .../sinks/infer) reads at most (default 16 MB). */
  inferMaxBytes: number;
  /** The event log keeps records this long (default 7 days) and ... */
  logRetentionMs: number;
  /** ... at most this many bytes per source topic. */
  logMaxBytesPerTopic: number;
  /** Upper bound of the bytes the event log holds (pages in use; the file also has free pages). */
  logMaxBytes: number;
  /** The event log refuses appends (503) while the disk has less free space than this. */
  logMinFreeDiskBytes: number;
  /** How often slices and files are checked against their triggers (reference 1 s). */
  checkIntervalMs: number;
  statisticsHistoryIntervalMs: number;
  /** Sinks render rows on a worker thread (default); false renders on the event loop. */
  renderThread: boolean;
  /** How long a sink's mapping of 1 000 records of a batch may run before the rest waits and the sink renders apart from its source's other sinks. */
  renderBudgetMs: number;
  /** Records a source's sinks may be behind the log before its ingestion answers 429 (0: never). */
  maxSinkBacklog: number;
  /** Records a second a source without a quota of its own may send to this node (0: no quota). */
  sourceMaxRecordsPerSecond: number;
  /** Record bytes a second a source without a quota of its own may send to this node (0: no quota). */
  sourceMaxBytesPerSecond: number;
  /** Heap cap of each render worker thread (V8's maxOldGenerationSizeMb, in bytes here). */
  renderHeapLimitBytes: number;
  /** The common ingestion request is served before fastify routes it (default); false: every request through fastify. */
  ingestFastPath: boolean;
  adoptTarget: boolean;
  /** A slice younger than this is not uploaded (reference 10 s). */
  uploadMinIntervalMs: number;
  /** A file younger than this is not imported (reference 60 s). */
  importMinIntervalMs: number;
  /** First retry delay of a failed upload or import; then ×4 up to 3 h (reference 2 min). */
  retryBaseMs: number;
  sinkRetryBaseMs: number;
  /** Staged data of a file that could not be imported is kept this long (7 days). */
  stagingRetentionMs: number;
  /** Kafka bootstrap servers: the event log is Kafka (docs/kafka.md, "Kafka"); undefined: the embedded LMDB log. */
  kafkaBrokers?: string[];
  /** Partitions of the source topics Sluice creates (each read by its own sink writers). */
  kafkaPartitions: number;
  /** Replicas of each partition of the source topics Sluice creates (-1: the broker's default). */
  kafkaReplication: number;
  /** Prefix of the source topics: `<prefix><projectId>.<branchId>.<sourceId>`. */
  kafkaTopicPrefix: string;
  /** Sources bound to existing topics: source id -> topic. */
  kafkaTopics: Record<string, string>;
  /** What this node does (docs/cluster.md, "Cluster mode"); all of them by default. */
  roles: ReadonlySet<Role>;
  /**
   * The DuckDB file of the tables (default `<dataDir>/tables.duckdb`). With --kafka it is
   * opened per operation, so that the nodes of a cluster can share one file.
   */
  targetPath: string;
  /** A PostgreSQL server for the tables (`postgres://user:pass@host:port/db`); undefined: the DuckDB file. */
  targetUrl?: string;
  /** Connections to the PostgreSQL target at most. */
  targetPoolSize: number;
  /** Exported files are kept this long, then deleted. */
  exportRetentionMs: number;
  /** Upper bound of a read-only SQL query's run time (a request may ask for less). */
  sqlTimeoutMs: number;
  /** Upper bound of the rows a read-only SQL query returns (a request may ask for fewer). */
  sqlMaxRows: number;
  /**
   * Memory of read-only SQL (docs/exports-and-sql.md, "Read-only SQL"): DuckDB's memory_limit and
   * max_temp_directory_size; on PostgreSQL a query's temp_file_limit, a quarter of it its work_mem.
   */
  sqlMemoryLimitBytes: number;
  /** Read-only SQL queries that run at once (each on a connection of its own). */
  sqlConnections: number;
  /** Read-only SQL queries that may wait for a connection; beyond, 503 with Retry-After. */
  sqlQueueSize: number;
  /** Time budget of one template evaluation (a record's template column). */
  templateTimeoutMs: number;
  /** Elements of one array a template may build. */
  templateMaxArrayLength: number;
  /** Characters of one string a template may build. */
  templateMaxStringLength: number;
  /** Estimated bytes one template evaluation may build. */
  templateMaxAllocationBytes: number;
  /** A port of its own for GET /metrics (besides the API listener); undefined: none. */
  metricsPort?: number;
  /** When set, GET /metrics needs `Authorization: Bearer <token>`. */
  metricsToken?: string;
  /**
   * The key of the `#` values (32 bytes); undefined: `<dataDir>/encryption-key`, generated on
   * the first start of a node without --kafka (storage/encryption-key.ts).
   */
  encryptionKey?: Buffer;
  /** The request line and headers must arrive within this (0: no limit). */
  headersTimeoutMs: number;
  /** A request body that brings no byte for this long is dropped (0: no limit). */
  bodyIdleTimeoutMs: number;
  /** After the first bodyIdleTimeoutMs, a request body averages at least this many bytes a second (0: no minimum). */
  bodyMinRate: number;
  /** JSON the APIs take (bodies, JSON text in form fields) nests at most this deep. */
  maxJsonDepth: number;
  /** Open connections of the node's listeners at most, OTLP/gRPC's too (0: no cap); undefined: 3/4 of the open-files limit. */
  maxConnections?: number;
}

/**
 * - api: the management APIs (Stream, Storage, Queue) and their documentation;
 * - ingest: the ingestion endpoints (HTTP, connector batches, OTLP);
 * - sink: the sinks' writers, which read the log and write local slices;
 * - import: uploads and imports of the files this node's sinks wrote;
 * - jobs: runs the queue's jobs.
 */
export const ROLES = ['api', 'ingest', 'sink', 'import', 'jobs'] as const;
export type Role = (typeof ROLES)[number];

export class ConfigError extends Error {}

/**
 * One setting, declared once: its flag, its environment variable, how its text is parsed, what
 * it does and its default. loadConfig() reads the settings from this table and `sluice serve
 * --help` prints it, so the two cannot disagree.
 */
export interface Option<K extends keyof Config = keyof Config> {
  flag: string;
  env: string;
  key: K;
  /** Parses the text of the flag or variable; throws ConfigError. */
  parse: (raw: string) => Config[K];
  /** What the setting does (one line of --help). */
  help: string;
  /**
   * The default: text for `parse`, shown as is by --help (so it reads as one would write it), or
   * a value computed from the settings above it in the table, with the text --help shows.
   */
  default: string | { text: string; value: (config: Partial<Config>) => Config[K] };
}

/** Checks each entry against its key's type, then keeps it in the table of every key. */
const option = <K extends keyof Config>(o: Option<K>): Option => o;

const int = (name: string) => (raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 0) throw new ConfigError(`${name} must be a non-negative integer, got "${raw}".`);
  return n;
};
const port = (raw: string): number => {
  const n = int('port')(raw);
  if (n > 65535) throw new ConfigError(`port must be at most 65535, got "${raw}".`);
  return n;
};
const url = (name: string) => (raw: string): string => {
  try {
    new URL(raw);
  } catch {
    throw new ConfigError(`${name} must be an absolute URL, got "${raw}".`);
  }
  return raw.replace(/\/+$/, '');
};
const str = (raw: string): string => raw;
const atLeast100ms = (name: string) => (raw: string): number => {
  const ms = duration(name)(raw);
  if (ms < 100) throw new ConfigError(`${name} must be at least 100ms, got "${raw}".`);
  return ms;
};
const logFormat = (raw: string): LogFormat => {
  if (raw !== 'pretty' && raw !== 'json') throw new ConfigError(`log format must be pretty or json, got "${raw}".`);
  return raw;
};
const path = (raw: string): string => resolve(raw);
const duration = (name: string) => (raw: string): number => {
  const ms = parseDuration(raw);
  if (ms === undefined || ms < 0) throw new ConfigError(`${name} must be a duration like 30s, 5m or 168h, got "${raw}".`);
  return ms;
};
const brokers = (raw: string): string[] => {
  const list = raw.split(',').map((b) => b.trim()).filter(Boolean);
  if (list.length === 0 || list.some((b) => !/^[^\s:]+:\d{1,5}$/.test(b))) throw new ConfigError(`Kafka brokers must be host:port[,host:port...], got "${raw}".`);
  return list;
};
const partitions = (raw: string): number => {
  const n = int('Kafka partitions')(raw);
  if (n < 1) throw new ConfigError(`Kafka partitions must be at least 1, got "${raw}".`);
  return n;
};
const replication = (raw: string): number => {
  const n = Number(raw);
  if (!Number.isInteger(n) || !(n === -1 || n >= 1)) throw new ConfigError(`Kafka replication must be a positive integer or -1 (broker default), got "${raw}".`);
  return n;
};
const topicBindings = (raw: string): Record<string, string> => {
  try {
    return parseTopicBindings(raw);
  } catch (err) {
    throw new ConfigError(`Kafka topic bindings: ${(err as Error).message}.`);
  }
};
const roles = (raw: string): ReadonlySet<Role> => {
  const names = raw.split(',').map((r) => r.trim()).filter(Boolean);
  const unknown = names.filter((n) => !(ROLES as readonly string[]).includes(n));
  if (names.length === 0 || unknown.length > 0) {
    throw new ConfigError(`Roles: ${unknown.length > 0 ? `unknown role "${unknown[0]}"` : 'none given'}; use a comma-separated list of ${ROLES.join(', ')}.`);
  }
  return new Set(names as Role[]);
};
const targetUrl = (raw: string): string => {
  let parsed: URL;
  try {
    parsed = new URL(raw);
  } catch {
    throw new ConfigError(`The target must be a PostgreSQL URL like postgres://user:password@host:5432/database, got something that is not a URL.`);
  }
  if (parsed.protocol !== 'postgres:' && parsed.protocol !== 'postgresql:') {
    throw new ConfigError(`The target must be a PostgreSQL URL like postgres://user:password@host:5432/database (the DuckDB file is --target-path), got a "${parsed.protocol}" URL.`);
  }
  if (!parsed.hostname || parsed.pathname.length <= 1) {
    throw new ConfigError('The target URL needs a host and a database: postgres://user:password@host:5432/database.');
  }
  return raw;
};
const positive = (name: string) => (raw: string): number => {
  const n = int(name)(raw);
  if (n < 1) throw new ConfigError(`${name} must be at least 1, got "${raw}".`);
  return n;
};
const onOff = (name: string) => (raw: string): boolean => {
  if (/^(on|true|1)$/i.test(raw)) return true;
  if (/^(off|false|0)$/i.test(raw)) return false;
  throw new ConfigError(`${name} must be on or off, got "${raw}".`);
};
const bytes = (name: string) => (raw: string): number => {
  const n = parseByteSize(raw);
  if (n === undefined || n <= 0) throw new ConfigError(`${name} must be a size like 1MB or 512KB, got "${raw}".`);
  return n;
};

const encryptionKey = (raw: string): Buffer => {
  try {
    return parseEncryptionKey(raw);
  } catch (err) {
    if (err instanceof InvalidKeyError) throw new ConfigError(`The encryption key ${err.message}.`);
    throw err;
  }
};

/** A byte size that may be 0 (a rate: bytes a second). */
const rate = (name: string) => (raw: string): number => {
  const n = parseByteSize(raw);
  if (n === undefined) throw new ConfigError(`${name} must be a size like 500B or 1KB (bytes a second), got "${raw}".`);
  return n;
};

const none = (text: string) => ({ text, value: () => undefined });

/** A quota default: the range the source settings take (0: no quota). */
const recordsQuota = (name: string) => (raw: string): number => {
  const n = Number(raw);
  if (!/^\d+$/.test(raw.trim()) || n > QUOTA_MAX.recordsPerSecond) throw new ConfigError(`${name} must be a whole number from 0 to ${QUOTA_MAX.recordsPerSecond} (0: no quota), got "${raw}".`);
  return n;
};
const bytesQuota = (name: string) => (raw: string): number => {
  const n = parseByteSize(raw);
  if (n === undefined || n > QUOTA_MAX.bytesPerSecond) throw new ConfigError(`${name} must be a size from 0 to 10GB like 512KB or 1MB (bytes a second; 0: no quota), got "${raw}".`);
  return n;
};

const positiveDuration = (name: string) => (raw: string): number => {
  const ms = duration(name)(raw);
  if (ms <= 0) throw new ConfigError(`${name} must be longer than 0, got "${raw}".`);
  return ms;
};

/** A positive integer up to `max` (a V8 ceiling past which a limit would not protect anything). */
const upTo = (name: string, max: number, why: string) => (raw: string): number => {
  const n = positive(name)(raw);
  if (n > max) throw new ConfigError(`${name} must be at most ${max} (${why}), got "${raw}".`);
  return n;
};

export const OPTIONS: Option[] = [
  option({ flag: '--host', env: 'SLUICE_HOST', key: 'host', parse: str, help: 'listen address', default: '0.0.0.0' }),
  option({ flag: '--port', env: 'SLUICE_PORT', key: 'port', parse: port, help: 'listen port (0 picks a free port)', default: '8000' }),
  option({ flag: '--data-dir', env: 'SLUICE_DATA_DIR', key: 'dataDir', parse: path, help: 'data directory: metadata, event log, tables, the master token', default: './data' }),
  option({ flag: '--master-token', env: 'SLUICE_MASTER_TOKEN', key: 'masterToken', parse: str, help: "the project's master token; unset: generated on first start and kept in <data-dir>/master-token", default: none('generated on first start') }),
  option({ flag: '--project-id', env: 'SLUICE_PROJECT_ID', key: 'projectId', parse: int('project id'), help: 'project id', default: '1' }),
  option({ flag: '--branch-id', env: 'SLUICE_BRANCH_ID', key: 'defaultBranchId', parse: int('branch id'), help: 'id of the default branch', default: '1' }),
  option({ flag: '--public-api-url', env: 'SLUICE_PUBLIC_API_URL', key: 'publicApiUrl', parse: url('public API URL'), help: 'public base URL of the API, written into task and entity URLs', default: { text: 'http://localhost:<port>', value: (c) => `http://localhost:${c.port}` } }),
  option({ flag: '--public-ingest-url', env: 'SLUICE_PUBLIC_INGEST_URL', key: 'publicIngestUrl', parse: url('public ingest URL'), help: 'public base URL of ingestion, written into ingestion URLs', default: { text: 'the API URL', value: (c) => c.publicApiUrl! } }),
  option({ flag: '--public-queue-url', env: 'SLUICE_PUBLIC_QUEUE_URL', key: 'publicQueueUrl', parse: url('public queue URL'), help: 'public base URL of the job queue API, written into job URLs', default: { text: 'the API URL', value: (c) => c.publicApiUrl! } }),
  option({ flag: '--job-workers', env: 'SLUICE_JOB_WORKERS', key: 'jobWorkers', parse: int('job workers'), help: 'how many jobs run at once, each in its own process (0 counts as 1)', default: '2' }),
  option({ flag: '--log-level', env: 'SLUICE_LOG_LEVEL', key: 'logLevel', parse: str, help: 'pino log level (trace, debug, info, warn, error, fatal)', default: 'info' }),
  option({ flag: '--log-format', env: 'SLUICE_LOG_FORMAT', key: 'logFormat', parse: logFormat, help: 'pretty: one readable line per event; json: one JSON object per line (for log collectors)', default: { text: 'pretty on a terminal, json otherwise', value: () => (process.stdout.isTTY ? 'pretty' : 'json') } }),
  option({ flag: '--max-body-size', env: 'SLUICE_MAX_BODY_SIZE', key: 'maxBodyBytes', parse: bytes('max body size'), help: 'largest ingestion request body, also after decompression', default: '1MB' }),
  option({ flag: '--max-batch-body-size', env: 'SLUICE_MAX_BATCH_BODY_SIZE', key: 'maxBatchBodyBytes', parse: bytes('max batch body size'), help: 'largest connector batch request body, POST .../batch', default: '16MB' }),
  option({ flag: '--otlp-max-body-size', env: 'SLUICE_OTLP_MAX_BODY_SIZE', key: 'otlpMaxBodyBytes', parse: bytes('OTLP max body size'), help: 'largest OTLP request body, also after decompression', default: '16MB' }),
  option({ flag: '--otlp-grpc-port', env: 'SLUICE_OTLP_GRPC_PORT', key: 'otlpGrpcPort', parse: port, help: 'OTLP over gRPC listens on this port (nodes with the ingest role); 0: off', default: '4317' }),
  option({ flag: '--otlp-grpc-host', env: 'SLUICE_OTLP_GRPC_HOST', key: 'otlpGrpcHost', parse: str, help: 'listen address of OTLP over gRPC', default: { text: 'the --host address', value: (c) => c.host! } }),
  option({ flag: '--otlp-grpc-max-concurrent-streams', env: 'SLUICE_OTLP_GRPC_MAX_CONCURRENT_STREAMS', key: 'otlpGrpcMaxConcurrentStreams', parse: int('OTLP gRPC max concurrent streams'), help: 'calls at once on one OTLP/gRPC connection (HTTP/2 SETTINGS_MAX_CONCURRENT_STREAMS; a client waits for a free one, one that does not is refused; 0: no limit)', default: '100' }),
  option({ flag: '--otlp-grpc-max-connections', env: 'SLUICE_OTLP_GRPC_MAX_CONNECTIONS', key: 'otlpGrpcMaxConnections', parse: int('OTLP gRPC max connections'), help: 'open OTLP/gRPC connections at most (they count in --max-connections too); one more is reset at once (0: only --max-connections)', default: none('half of --max-connections') }),
  option({ flag: '--otlp-grpc-max-connection-idle', env: 'SLUICE_OTLP_GRPC_MAX_CONNECTION_IDLE', key: 'otlpGrpcMaxConnectionIdleMs', parse: duration('OTLP gRPC max connection idle'), help: 'an OTLP/gRPC connection without a call for this long is closed (GOAWAY; 0: never)', default: '72s' }),
  option({ flag: '--otlp-grpc-max-connection-age', env: 'SLUICE_OTLP_GRPC_MAX_CONNECTION_AGE', key: 'otlpGrpcMaxConnectionAgeMs', parse: duration('OTLP gRPC max connection age'), help: 'an OTLP/gRPC connection is asked to go away (GOAWAY) after this, ±10 %, so that long-lived clients reconnect and rebalance (0: never)', default: '30m' }),
  option({ flag: '--otlp-grpc-max-connection-age-grace', env: 'SLUICE_OTLP_GRPC_MAX_CONNECTION_AGE_GRACE', key: 'otlpGrpcMaxConnectionAgeGraceMs', parse: duration('OTLP gRPC max connection age grace'), help: 'calls still running this long after the connection\'s age GOAWAY are cut (0: they may run on)', default: '30s' }),
  option({ flag: '--otlp-grpc-min-ping-interval', env: 'SLUICE_OTLP_GRPC_MIN_PING_INTERVAL', key: 'otlpGrpcMinPingIntervalMs', parse: duration('OTLP gRPC min ping interval'), help: 'a client\'s HTTP/2 PING closer than this to its previous one, with no call started or ended between, is a strike; the third closes the connection (GOAWAY ENHANCE_YOUR_CALM "too_many_pings", as grpc-go servers; 0: no check)', default: '5m' }),
  option({ flag: '--infer-max-bytes', env: 'SLUICE_INFER_MAX_BYTES', key: 'inferMaxBytes', parse: bytes('infer max bytes'), help: 'record bodies one mapping proposal (POST .../sinks/infer) reads at most; it samples fewer records past it', default: '16MB' }),
  option({ flag: '--log-retention', env: 'SLUICE_LOG_RETENTION', key: 'logRetentionMs', parse: duration('log retention'), help: 'how long the event log keeps records', default: '168h' }),
  option({ flag: '--log-max-topic-size', env: 'SLUICE_LOG_MAX_TOPIC_SIZE', key: 'logMaxBytesPerTopic', parse: bytes('log max topic size'), help: 'bytes kept per source in the event log', default: '10GB' }),
  option({ flag: '--log-max-size', env: 'SLUICE_LOG_MAX_SIZE', key: 'logMaxBytes', parse: bytes('log max size'), help: 'upper bound of the data the event log holds', default: '64GB' }),
  option({ flag: '--log-min-free-disk', env: 'SLUICE_LOG_MIN_FREE_DISK', key: 'logMinFreeDiskBytes', parse: bytes('log min free disk'), help: 'ingestion answers 503 below this free disk space', default: '256MB' }),
  option({ flag: '--render-thread', env: 'SLUICE_RENDER_THREAD', key: 'renderThread', parse: onOff('render thread'), help: 'on: sinks map records and encode CSV on a worker thread beside ingestion; off: on the event loop', default: 'on' }),
  option({ flag: '--render-budget', env: 'SLUICE_RENDER_BUDGET', key: 'renderBudgetMs', parse: duration('render budget'), help: 'longest a sink may take to map 1 000 records of a batch (a batch of more records has more in proportion): a sink that takes longer writes what it mapped and goes on apart from the other sinks of its source (0: no limit)', default: '250ms' }),
  option({ flag: '--max-sink-backlog', env: 'SLUICE_MAX_SINK_BACKLOG', key: 'maxSinkBacklog', parse: int('max sink backlog'), help: 'records a source\'s sinks may be behind its log before its ingestion answers 429 with Retry-After, until they are within half of it (failing and slow sinks do not count; 0: never)', default: '200000' }),
  option({ flag: QUOTA_FLAGS.recordsPerSecond, env: 'SLUICE_SOURCE_MAX_RECORDS_PER_SECOND', key: 'sourceMaxRecordsPerSecond', parse: recordsQuota('source max records per second'), help: 'records a second each source may send to this node unless its setting source.quota.recordsPerSecond says otherwise; over it, 429 with Retry-After and RateLimit headers (each node enforces it on its own; 0: no quota)', default: '0' }),
  option({ flag: QUOTA_FLAGS.bytesPerSecond, env: 'SLUICE_SOURCE_MAX_BYTES_PER_SECOND', key: 'sourceMaxBytesPerSecond', parse: bytesQuota('source max bytes per second'), help: 'record bytes a second (bodies after decompression) each source may send to this node unless its setting source.quota.bytesPerSecond says otherwise (each node enforces it on its own; 0: no quota)', default: '0' }),
  option({ flag: '--render-heap-limit', env: 'SLUICE_RENDER_HEAP_LIMIT', key: 'renderHeapLimitBytes', parse: bytes('render heap limit'), help: 'heap of each render worker thread: a template that needs more ends the thread, and its record is kept as a mapping failure', default: '1GB' }),
  option({ flag: '--adopt-target', env: 'SLUICE_ADOPT_TARGET', key: 'adoptTarget', parse: onOff('adopt target'), help: 'on: a data directory created for another target moves to this one (its sinks\' tables are created here); off: such a start is refused', default: 'off' }),
  option({ flag: '--ingest-fast-path', env: 'SLUICE_INGEST_FAST_PATH', key: 'ingestFastPath', parse: onOff('ingest fast path'), help: 'on: a plain ingestion POST is answered before fastify routes it; off: every request through fastify', default: 'on' }),
  option({ flag: '--upload-min-interval', env: 'SLUICE_UPLOAD_MIN_INTERVAL', key: 'uploadMinIntervalMs', parse: duration('upload min interval'), help: 'minimum age of a slice before upload (the upload interval setting\'s own minimum; the reference fixes 10s)', default: goDurationString(DEFAULT_LIMITS.uploadMinIntervalMs) }),
  option({ flag: '--import-min-interval', env: 'SLUICE_IMPORT_MIN_INTERVAL', key: 'importMinIntervalMs', parse: duration('import min interval'), help: 'minimum age of a file before import (the import interval setting\'s own minimum; the reference fixes 60s)', default: goDurationString(DEFAULT_LIMITS.importMinIntervalMs) }),
  // After the floors: its default follows a lowered import floor, so that 1s triggers are checked often enough for rows within seconds.
  option({ flag: '--statistics-history-interval', env: 'SLUICE_STATISTICS_HISTORY_INTERVAL', key: 'statisticsHistoryIntervalMs', parse: atLeast100ms('statistics history interval'), help: "how often the sinks' totals are sampled for their 6 hours of history (the console's charts)", default: '30s' }),
  option({ flag: '--check-interval', env: 'SLUICE_CHECK_INTERVAL', key: 'checkIntervalMs', parse: duration('check interval'), help: 'how often upload and import triggers are checked', default: { text: '1s, or a fifth of --import-min-interval below 5s, at least 100ms', value: (c) => Math.max(100, Math.min(1_000, Math.round(c.importMinIntervalMs! / 5))) } }),
  option({ flag: '--retry-base', env: 'SLUICE_RETRY_BASE', key: 'retryBaseMs', parse: duration('retry base'), help: 'first retry delay of failed uploads and imports (then x4, up to 3h)', default: '2m' }),
  option({ flag: '--sink-retry-base', env: 'SLUICE_SINK_RETRY_BASE', key: 'sinkRetryBaseMs', parse: duration('sink retry base'), help: 'first retry delay of a sink\'s failed write (then x2; after 5 attempts, about 15x this, the sink is failing and is tried again after 30x, doubling up to 300x)', default: '2s' }),
  option({ flag: '--staging-retention', env: 'SLUICE_STAGING_RETENTION', key: 'stagingRetentionMs', parse: duration('staging retention'), help: 'how long data that failed to import is kept', default: '168h' }),
  option({ flag: '--kafka', env: 'SLUICE_KAFKA_BROKERS', key: 'kafkaBrokers', parse: brokers, help: 'Kafka bootstrap servers host:port,...: the event log is Kafka; none: the embedded LMDB event log', default: none('none') }),
  option({ flag: '--kafka-partitions', env: 'SLUICE_KAFKA_PARTITIONS', key: 'kafkaPartitions', parse: partitions, help: 'partitions of the source topics Sluice creates (cluster nodes split them)', default: '1' }),
  option({ flag: '--kafka-replication', env: 'SLUICE_KAFKA_REPLICATION', key: 'kafkaReplication', parse: replication, help: "replicas of the source topics Sluice creates (-1: the broker's default)", default: '-1' }),
  option({ flag: '--kafka-topic-prefix', env: 'SLUICE_KAFKA_TOPIC_PREFIX', key: 'kafkaTopicPrefix', parse: str, help: 'prefix of the source topics: <prefix><projectId>.<branchId>.<sourceId>', default: DEFAULT_TOPIC_PREFIX }),
  option({ flag: '--kafka-topics', env: 'SLUICE_KAFKA_TOPICS', key: 'kafkaTopics', parse: topicBindings, help: 'bind sources to existing topics: sourceId=topic,...', default: { text: 'none', value: () => ({}) } }),
  option({ flag: '--roles', env: 'SLUICE_ROLES', key: 'roles', parse: roles, help: `what this node does, of ${ROLES.join(',')} (only some need --kafka)`, default: ROLES.join(',') }),
  option({ flag: '--target-path', env: 'SLUICE_TARGET_PATH', key: 'targetPath', parse: path, help: 'DuckDB file of the tables (cluster nodes on one host share one)', default: { text: '<data-dir>/tables.duckdb', value: (c) => join(c.dataDir!, 'tables.duckdb') } }),
  option({ flag: '--target', env: 'SLUICE_TARGET_URL', key: 'targetUrl', parse: targetUrl, help: 'PostgreSQL server of the tables, postgres://user:password@host:port/db; none: the DuckDB file', default: none('none') }),
  option({ flag: '--target-pool-size', env: 'SLUICE_TARGET_POOL_SIZE', key: 'targetPoolSize', parse: positive('target pool size'), help: 'connections to the PostgreSQL target at most', default: '8' }),
  option({ flag: '--export-retention', env: 'SLUICE_EXPORT_RETENTION', key: 'exportRetentionMs', parse: duration('export retention'), help: 'how long exported files are kept', default: '48h' }),
  option({ flag: '--sql-timeout', env: 'SLUICE_SQL_TIMEOUT', key: 'sqlTimeoutMs', parse: duration('SQL timeout'), help: 'longest run of a read-only SQL query', default: '30s' }),
  option({ flag: '--sql-max-rows', env: 'SLUICE_SQL_MAX_ROWS', key: 'sqlMaxRows', parse: positive('SQL max rows'), help: 'most rows a read-only SQL query returns', default: '10000' }),
  option({ flag: '--sql-memory-limit', env: 'SLUICE_SQL_MEMORY_LIMIT', key: 'sqlMemoryLimitBytes', parse: bytes('SQL memory limit'), help: "memory of read-only SQL: DuckDB's memory_limit and max_temp_directory_size (shared with imports and exports); PostgreSQL: a query's temp_file_limit, a quarter of it its work_mem", default: '512MB' }),
  option({ flag: '--sql-connections', env: 'SLUICE_SQL_CONNECTIONS', key: 'sqlConnections', parse: positive('SQL connections'), help: 'read-only SQL queries that run at once, each on a connection of its own', default: '2' }),
  option({ flag: '--sql-queue-size', env: 'SLUICE_SQL_QUEUE_SIZE', key: 'sqlQueueSize', parse: int('SQL queue size'), help: 'read-only SQL queries that may wait for a connection (the wait counts in their timeout); beyond, 503 with Retry-After', default: '8' }),
  option({ flag: TEMPLATE_LIMIT_FLAGS.timeoutMs, env: 'SLUICE_TEMPLATE_TIMEOUT', key: 'templateTimeoutMs', parse: positiveDuration('template timeout'), help: "time budget of one evaluation of a template column; past it the record fails its sink's mapping", default: `${TEMPLATE_TIMEOUT_MS}ms` }),
  option({ flag: TEMPLATE_LIMIT_FLAGS.maxArrayLength, env: 'SLUICE_TEMPLATE_MAX_ARRAY_LENGTH', key: 'templateMaxArrayLength', parse: upTo('template max array length', V8_MAX_ARRAY_LENGTH, "V8's own array limit"), help: 'elements of one array a template may build', default: String(JSONNET_LIMITS.maxArrayLength) }),
  option({ flag: TEMPLATE_LIMIT_FLAGS.maxStringLength, env: 'SLUICE_TEMPLATE_MAX_STRING_LENGTH', key: 'templateMaxStringLength', parse: upTo('template max string length', V8_MAX_STRING_LENGTH, "V8's own string limit"), help: 'characters of one string a template may build', default: String(JSONNET_LIMITS.maxStringLength) }),
  option({ flag: TEMPLATE_LIMIT_FLAGS.maxAllocationBytes, env: 'SLUICE_TEMPLATE_MAX_ALLOCATION', key: 'templateMaxAllocationBytes', parse: bytes('template max allocation'), help: 'estimated memory one template evaluation may build (arrays, strings, objects)', default: `${JSONNET_LIMITS.maxAllocationBytes / 1024 ** 2}MB` }),
  option({ flag: '--metrics-port', env: 'SLUICE_METRICS_PORT', key: 'metricsPort', parse: port, help: 'also serve GET /metrics on a port of its own; none: only on the API listener', default: none('none') }),
  option({ flag: '--metrics-token', env: 'SLUICE_METRICS_TOKEN', key: 'metricsToken', parse: str, help: 'GET /metrics needs "Authorization: Bearer <token>"; none: no token needed', default: none('none') }),
  option({ flag: '--encryption-key', env: 'SLUICE_ENCRYPTION_KEY', key: 'encryptionKey', parse: encryptionKey, help: 'key of the encrypted # values of configurations and jobs, 32 bytes as base64 or hex (the same on every node of a cluster); unset: <data-dir>/encryption-key, generated on first start without --kafka', default: none('<data-dir>/encryption-key') }),
  option({ flag: '--headers-timeout', env: 'SLUICE_HEADERS_TIMEOUT', key: 'headersTimeoutMs', parse: duration('headers timeout'), help: 'a request\'s line and headers must arrive within this, from the connection or the request\'s first byte (408, closed; 0: no limit)', default: '30s' }),
  option({ flag: '--body-idle-timeout', env: 'SLUICE_BODY_IDLE_TIMEOUT', key: 'bodyIdleTimeoutMs', parse: duration('body idle timeout'), help: 'a request body that brings no byte for this long is dropped (408, closed; a body that keeps flowing has no limit; 0: no limit)', default: '30s' }),
  option({ flag: '--body-min-rate', env: 'SLUICE_BODY_MIN_RATE', key: 'bodyMinRate', parse: rate('body min rate'), help: 'after the first --body-idle-timeout, a request body must average at least this many bytes a second (408, closed; 0: no minimum)', default: '500B' }),
  option({ flag: '--max-connections', env: 'SLUICE_MAX_CONNECTIONS', key: 'maxConnections', parse: int('max connections'), help: 'open connections at most, all listeners together (OTLP/gRPC\'s too); one more HTTP one is answered 503 with Retry-After and closed, a gRPC one reset (0: no cap)', default: none('3/4 of the open-files limit') }),
  option({ flag: '--max-json-depth', env: 'SLUICE_MAX_JSON_DEPTH', key: 'maxJsonDepth', parse: positive('max JSON depth'), help: 'JSON the APIs take (bodies, JSON text in form fields) nests at most this deep; deeper is refused with 400', default: '100' }),
];

/** The limits of template evaluations, wherever the server builds a template engine. */
export function templateLimits(config: Config): LimitOptions {
  return {
    timeoutMs: config.templateTimeoutMs,
    maxArrayLength: config.templateMaxArrayLength,
    maxStringLength: config.templateMaxStringLength,
    maxAllocationBytes: config.templateMaxAllocationBytes,
    limitNames: TEMPLATE_LIMIT_FLAGS,
  };
}

/** The default as `sluice serve --help` shows it. */
export function defaultText(o: Option): string {
  return typeof o.default === 'string' ? o.default : o.default.text;
}

export function loadConfig(argv: string[], env: NodeJS.ProcessEnv = process.env): Config {
  // The text of each setting given: variables first, flags win.
  const given = new Map<keyof Config, string>();
  for (const o of OPTIONS) {
    const v = env[o.env];
    if (v !== undefined && v !== '') given.set(o.key, v);
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    const [flag, inline] = arg.includes('=') ? [arg.slice(0, arg.indexOf('=')), arg.slice(arg.indexOf('=') + 1)] : [arg, undefined];
    const o = OPTIONS.find((x) => x.flag === flag);
    if (!o) throw new ConfigError(`Unknown option "${flag}" (sluice serve --help lists them).${didYouMean(flag, OPTIONS.map((x) => x.flag))}`);
    const value = inline ?? argv[++i];
    if (value === undefined) throw new ConfigError(`Option ${flag} needs a value.`);
    given.set(o.key, value);
  }
  // In table order: a computed default reads the settings above it.
  const c: Partial<Record<keyof Config, unknown>> = {};
  for (const o of OPTIONS) {
    const text = given.get(o.key);
    if (text !== undefined) c[o.key] = o.parse(text);
    else if (typeof o.default === 'string') c[o.key] = o.parse(o.default);
    else c[o.key] = o.default.value(c as Partial<Config>);
  }
  const config = c as unknown as Config;
  config.jobWorkers = Math.max(1, config.jobWorkers);
  config.sqlTimeoutMs = Math.max(1, config.sqlTimeoutMs);
  config.roles = checkRoles(config.roles, given.has('kafkaBrokers'));
  config.targetUrl = checkTarget(config.targetUrl, given.get('targetPath'));
  return config;
}

/** One target: a PostgreSQL URL and a DuckDB file together would leave one of them silently unused. */
function checkTarget(url: string | undefined, path: string | undefined): string | undefined {
  if (url !== undefined && path !== undefined) {
    throw new ConfigError('Choose one target: --target (SLUICE_TARGET_URL, a PostgreSQL server) or --target-path (SLUICE_TARGET_PATH, a DuckDB file), not both.');
  }
  return url;
}

/**
 * Role combinations that work: a node of its own must do everything (nobody else reads its
 * log), and the files a node's sinks write are imported by that node (its slices and their
 * state are its own, not shared with the cluster).
 */
function checkRoles(roles: ReadonlySet<Role>, kafka: boolean): ReadonlySet<Role> {
  if (!kafka && roles.size < ROLES.length) {
    throw new ConfigError(`Roles: a node without --kafka must have every role (${ROLES.join(',')}): no other node reads its event log.`);
  }
  if (roles.has('sink') !== roles.has('import')) {
    throw new ConfigError('Roles: "sink" and "import" go together: a node imports the files its own sinks wrote.');
  }
  return roles;
}

/**
 * The options of `sluice serve` for --help, from OPTIONS: a line with the flag, its variable
 * and its default, then what it does.
 */
export function optionsHelp(): string {
  const flagWidth = Math.max(...OPTIONS.map((o) => o.flag.length));
  const envWidth = Math.max(...OPTIONS.map((o) => o.env.length));
  return OPTIONS.map((o) => `  ${o.flag.padEnd(flagWidth)}  ${o.env.padEnd(envWidth)}  default: ${defaultText(o)}\n      ${o.help}`).join('\n');
}
