import type { BacklogGate } from '../actors/backlog-gate.js';
import Fastify, { LogController, type FastifyBaseLogger, type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import { createIngestFastPath, type IngestFastPath } from '../sources/http/fast-path.js';
import formbody from '@fastify/formbody';
import { formBodyParser } from '../http/form-body.js';
import { boundedJsonParser } from '../http/json-depth.js';
import type { Config } from '../config.js';
import type { Logger } from '../logger.js';
import type { MetadataStore } from '../ports/metadata-store.js';
import type { EventLog } from '../ports/event-log.js';
import type { MappingCache } from '../pipeline/mapping-cache.js';
import type { Metrics } from '../observability/metrics.js';
import type { IngestSources } from '../sources/http/index.js';
import type { InflightBudget } from '../sources/otlp/inflight.js';
import type { SourceQuotas } from '../sources/ingest/quota.js';
import type { StreamApiOptions } from '../api/stream/index.js';
import type { StorageApiOptions } from '../api/storage/index.js';
import type { QueueApiOptions } from '../api/queue/index.js';
import { streamApi } from '../api/stream/index.js';
import { storageApi } from '../api/storage/index.js';
import { fileDownloadRoutes, type FileDownloadRoutesOptions } from '../api/storage/file-download.js';
import { documentation } from '../api/documentation.js';
import { ingestApi } from '../sources/http/index.js';
import { queueApi } from '../api/queue/index.js';
import { otlpApi } from '../sources/otlp/index.js';
import { streamErrors, streamNotFound } from '../api/stream/envelope.js';
import { answerErrorsWith } from '../http/error-handler.js';
import { answerWritesWhenSettled } from '../api/settled-writes.js';
import { observabilityRoutes } from '../api/observability.js';
import { consoleRoutes } from '../api/console.js';
import { ingestAnswerCounter, type IngestAnswered } from '../observability/ingest-requests.js';
import { HttpServers, httpLimits } from '../http/http-server.js';
import type { QuotaStatus } from '../sources/ingest/source-quotas.js';

/**
 * What the application reads of the node's services (server.ts passes its `Services`): each
 * API plugin gets its own part of it, as its options declare.
 */
export type AppServices = StreamApiOptions &
  StorageApiOptions &
  QueueApiOptions &
  FileDownloadRoutesOptions & {
    config: Config;
    logger: Logger;
    metadata: MetadataStore;
    eventLog: EventLog;
    /** Back-pressure: ingestion refuses a source's records (429) while its sinks are too far behind. */
    backlogGate?: BacklogGate;
    ingestSources: IngestSources;
    /** OTLP request bytes processed at once, over OTLP/HTTP and OTLP/gRPC together. */
    otlpInflight: InflightBudget;
    /** Per-source quotas: every ingestion path takes from them, the Stream API shows them (none: no quota). */
    quotas?: SourceQuotas & QuotaStatus;
    mappings: MappingCache;
    metrics: Metrics;
    /** True from the moment a graceful shutdown starts: ingestion answers 503. */
    isShuttingDown: () => boolean;
  };

/**
 * The HTTP application of one node: every API family is a fastify plugin with its own
 * schemas, hooks and error envelope. Unknown routes answer in the Stream API envelope.
 * `servers` makes its listener (with the node's timeouts and connection cap, shared with the
 * node's other listeners); by default one of its own, from the configuration.
 */
export async function buildApp(services: AppServices, servers = new HttpServers(httpLimits(services.config), services.logger)): Promise<FastifyInstance> {
  const answered = ingestAnswerCounter(services.metrics, services.isShuttingDown);
  const fastPath = services.config.roles.has('ingest') ? ingestFastPath(services, answered) : undefined;
  const app = Fastify({
    loggerInstance: services.logger as FastifyBaseLogger,
    // The common ingestion request is answered before fastify routes it (ingest/fast-path.ts).
    serverFactory: (handler) => servers.createServer((req, res) => (fastPath?.(req, res) ? undefined : handler(req, res))),
    // The server answers client errors (timeouts, malformed requests) itself (http-server.ts).
    clientErrorHandler: () => undefined,
    bodyLimit: 4 * 1024 * 1024,
    // Request lines at debug (RequestsAtDebug).
    logController: new RequestsAtDebug(),
    // Path params may be percent-encoded ids; task ids contain slashes (wildcard route).
    routerOptions: { maxParamLength: 1000 },
    ajv: {
      customOptions: {
        // Report every problem with its offending value; never strip or coerce body fields.
        allErrors: false,
        verbose: true,
        removeAdditional: false,
        coerceTypes: false,
        useDefaults: false,
      },
    },
  });
  await app.register(formbody);
  const { maxJsonDepth } = services.config;
  formBodyParser(app, maxJsonDepth);
  // Cluster mode only: a node of its own has nothing to wait for (and ingestion pays no hook).
  if (services.config.kafkaBrokers) answerWritesWhenSettled(app, services.metadata);
  // An empty body with Content-Type: application/json is "no body" (clients send the header
  // on PUT/DELETE without one), not a syntax error.
  const json = boundedJsonParser(app, maxJsonDepth);
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (req, body, done) => {
    if (body === '' || (typeof body === 'string' && body.trim() === '')) return done(null, undefined);
    json(req, body as string, done);
  });
  const { roles } = services.config;
  await app.register(observabilityRoutes, {
    metrics: services.metrics,
    metricsToken: services.config.metricsToken,
    readiness: {
      metadata: services.metadata,
      eventLog: services.eventLog,
      pingTarget: () => services.tables.ping(),
      targetDescription: services.tables.targetDescription,
      isShuttingDown: services.isShuttingDown,
    },
  });
  if (roles.has('api')) {
    const { config, tokens, project, files } = services;
    await app.register(documentation, { config });
    await app.register(streamApi, {
      config,
      tokens,
      project,
      sources: services.sources,
      sinks: services.sinks,
      ingestSources: services.ingestSources,
      metadata: services.metadata,
      tasks: services.tasks,
      statistics: services.statistics,
      statisticsHistory: services.statisticsHistory,
      failures: services.failures,
      runtime: services.runtime,
      mappings: services.mappings,
      eventLog: services.eventLog,
      quotas: services.quotas,
    });
    await app.register(storageApi, {
      prefix: '/v2/storage',
      config,
      tokens,
      project,
      files,
      tables: services.tables,
      exports: services.exports,
      storageJobs: services.storageJobs,
      sql: services.sql,
      configurations: services.configurations,
      events: services.events,
      jobs: services.jobs,
    });
    // Signed file downloads: no token (the URL is the permission), in the Storage envelope.
    await app.register(fileDownloadRoutes, { files, prefix: '/v2/storage' });
    // The job queue (/jobs, /search/jobs) on the same listener; its public URL is SLUICE_PUBLIC_QUEUE_URL.
    await app.register(queueApi, { config, tokens, jobs: services.jobs });
    // The web console's static files (dist/console): it calls the APIs above like any client.
    await app.register(consoleRoutes);
  } else {
    // Load balancers probe every node; the Stream API serves this route where it runs.
    app.get('/health-check', async (_req, reply) => reply.type('text/plain').send('OK\n'));
  }
  if (roles.has('ingest')) await registerIngestion(app, services, answered);
  app.setNotFoundHandler((req, reply) => streamNotFound(req, reply));
  answerErrorsWith(app, streamErrors);
  return app;
}

/**
 * fastify's request log lines at debug (with the console open they were two info lines for every
 * request, hundreds a minute); a request that failed on the server's side (an error, a 5xx)
 * keeps the level fastify gives it. `--log-level debug` shows them all.
 */
class RequestsAtDebug extends LogController {
  override incomingRequest(request: FastifyRequest): void {
    request.log.debug({ req: request }, 'incoming request');
  }

  override requestCompleted(error: Error | null | undefined, request: FastifyRequest, reply: FastifyReply): void {
    if (!error && reply.statusCode < 500) reply.log.debug({ res: reply, responseTime: reply.elapsedTime }, 'request completed');
    else super.requestCompleted(error, request, reply);
  }
}

function ingestFastPath(services: AppServices, answered: IngestAnswered): IngestFastPath | undefined {
  if (services.config.ingestFastPath === false) return undefined;
  return createIngestFastPath({
    eventLog: services.eventLog,
    backlog: services.backlogGate,
    sources: services.ingestSources,
    projectId: services.config.projectId,
    maxBodyBytes: services.config.maxBodyBytes,
    isShuttingDown: services.isShuttingDown,
    log: services.logger,
    answered: (status, seconds) => answered('record', status, seconds),
    quotas: services.quotas,
  });
}

/** The ingestion endpoints: HTTP records and connector batches, and OTLP. */
async function registerIngestion(app: FastifyInstance, services: AppServices, answered: IngestAnswered): Promise<void> {
  await app.register(ingestApi, {
    eventLog: services.eventLog,
    backlog: services.backlogGate,
    sources: services.ingestSources,
    config: { projectId: services.config.projectId, maxBodyBytes: services.config.maxBodyBytes, maxBatchBodyBytes: services.config.maxBatchBodyBytes },
    isShuttingDown: services.isShuttingDown,
    mappings: services.mappings,
    answered,
    quotas: services.quotas,
  });
  await app.register(otlpApi, {
    eventLog: services.eventLog,
    backlog: services.backlogGate,
    sources: services.ingestSources,
    mappings: services.mappings,
    config: { projectId: services.config.projectId, maxBodyBytes: services.config.otlpMaxBodyBytes },
    inflight: services.otlpInflight,
    quotas: services.quotas,
    isShuttingDown: services.isShuttingDown,
    answered,
  });
}
