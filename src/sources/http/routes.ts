/**
 * POST /stream/<projectId>/<sourceId>/<secret>: authenticate by the source
 * secret, cut the request into one record, append it to the source's topic of the event log
 * (the acknowledgement point, docs/architecture.md "The record's path") and answer 200 once it is durable
 * (sync.wait) or 202 at once. Everything after the log (fan-out to sinks, mapping) happens in
 * the actors; this route does nothing more, except with `?verbose=true`: then it also maps the
 * record through each enabled sink's mapping, to say in the answer which sinks will not be able
 * to map it, and why.
 */
import type { BacklogGate } from '../../actors/backlog-gate.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { EventLog } from '../../ports/event-log.js';
import type { IngestRecord } from '../../model/record.js';
import { createRecordContext, MappingError } from '../../pipeline/columns/index.js';
import type { MappingCache } from '../../pipeline/mapping-cache.js';
import { acceptsSignal } from '../../model/definition.js';
import { appendToLog, httpRecord } from '../ingest/append.js';
import { RETRY_AFTER } from '../../http/errors.js';
import { ApiError } from '../../http/errors.js';
import { answerErrorsWith, renderError } from '../../http/error-handler.js';
import type { IngestSources, IngestTarget } from '../ingest/sources.js';
import { CORS_PREFLIGHT, httpSourceTarget, type IngestParams, INGEST_SERVER, OWN_CORS, PROJECT_ID } from '../ingest/admission.js';
import { refusalResult, withQuota, ingestErrors, noSourceFound, ROUTE_NOT_FOUND, SHUTTING_DOWN, successResult, type IngestResult } from '../ingest/envelope.js';
import { batchRoute } from '../kafka-connect/batch-route.js';
import { ingestRoute, type IngestAnswered } from '../../observability/ingest-requests.js';
import { NO_QUOTAS, type SourceQuotas } from '../ingest/quota.js';
import { contentEncodingOf, decodeBody, ENCODING_HEADERS, type DecodedBody } from '../ingest/content-encoding.js';

export interface IngestApiOptions {
  eventLog: EventLog;
  /** Refuses a source's records (429) while its sinks are too far behind (actors/backlog-gate.ts). */
  backlog?: BacklogGate;
  sources: IngestSources;
  config: {
    /** The project this node serves; any other id in the path is "not found". */
    projectId: number;
    /** Largest accepted request body (reference default 1 MB, configurable 100 B – 4 MB). */
    maxBodyBytes: number;
    /** Largest accepted body of a connector batch request (default 16 MB). */
    maxBatchBodyBytes: number;
  };
  /** True once the node stops: new records are refused with 503 shutdown. */
  isShuttingDown: () => boolean;
  /** Called once per answer of these routes (the metrics: observability/ingest-requests.ts). */
  answered?: IngestAnswered;
  /**
   * Compiled sink mappings (the OTLP route's, sources/otlp/routes.ts): `?verbose=true` maps the
   * record with them to name the sinks that will not map it. Without them the verbose answer
   * does not check.
   */
  mappings?: Pick<MappingCache, 'get'>;
  /** Per-source quotas (sources/ingest/source-quotas.ts); none: no quota. */
  quotas?: SourceQuotas;
}

/** Go's strconv.ParseBool true values. */
const TRUE = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);

function isVerbose(req: FastifyRequest): boolean {
  const v = (req.query as Record<string, unknown> | undefined)?.verbose;
  return typeof v === 'string' ? TRUE.has(v) : Array.isArray(v) && TRUE.has(String(v[v.length - 1]));
}

/** The ingestion routes; registered under the prefix /stream by `ingestApi`. */
export const ingestRoutes: FastifyPluginAsync<IngestApiOptions> = async (app, opts) => {
  const { eventLog, backlog, sources, mappings, isShuttingDown } = opts;
  const quotas = opts.quotas ?? NO_QUOTAS;
  const { projectId, maxBodyBytes, maxBatchBodyBytes } = opts.config;

  // Any content type is one record's raw bytes; nothing is parsed here.
  app.removeAllContentTypeParsers();
  // The limit is each route's own bodyLimit (single records and connector batches differ).
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  const { answered } = opts;
  if (answered) {
    app.addHook('onResponse', (req, reply, done) => {
      if (req.method !== 'OPTIONS') answered(ingestRoute(req.url), reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }

  app.addHook('onRequest', (_req, reply, done) => {
    reply.header('server', INGEST_SERVER);
    reply.header('access-control-allow-origin', '*');
    done();
  });
  const errors = ingestErrors(maxBodyBytes);
  answerErrorsWith(app, errors);
  const routeNotFound = (req: FastifyRequest, reply: FastifyReply) =>
    renderError(errors, new ApiError(404, 'routeNotFound', ROUTE_NOT_FOUND), req, reply);
  app.setNotFoundHandler(routeNotFound);

  const answer = (reply: FastifyReply, result: IngestResult, verbose: boolean): FastifyReply => {
    // A quota refusal set its own Retry-After (when the request fits again).
    if ((result.statusCode >= 500 || result.statusCode === 429) && !reply.hasHeader('retry-after')) reply.header('retry-after', RETRY_AFTER);
    if (verbose || result.statusCode >= 400) return reply.code(result.statusCode).type('application/json; charset=utf-8').send(result);
    return reply.code(result.statusCode).type('text/plain; charset=utf-8').send('OK');
  };

  /** Authenticates the request by the path's source secret; only enabled HTTP sources take records. */
  const resolveTarget = (req: FastifyRequest<{ Params: IngestParams }>): IngestTarget => {
    if (isShuttingDown()) throw new ApiError(503, 'shutdown', SHUTTING_DOWN);
    const { sourceId, secret } = req.params;
    if (!PROJECT_ID.test(req.params.projectId)) throw new ApiError(400, 'badRequest', `Invalid project ID "${req.params.projectId}".`);
    if (Number(req.params.projectId) !== projectId) throw noSourceFound();
    const target = httpSourceTarget(sources, sourceId, secret);
    if (!target) throw noSourceFound();
    if (target.source.disabled) throw new ApiError(404, 'disabledSource', `The source "${sourceId}" is disabled.`);
    return target;
  };

  const logAppend = { eventLog, projectId, backlog };
  const appendRecords = (req: FastifyRequest, target: IngestTarget, records: IngestRecord[]) => appendToLog(logAppend, target, records, req.log);

  /**
   * The request's body as stored, inflated when the request says it is encoded (415 for an
   * unknown encoding, 413 past `maxBytes` after decompression), and the headers its records
   * leave out (a decoded body's Content-Encoding).
   */
  const bodyOf = async (req: FastifyRequest, maxBytes: number): Promise<DecodedBody> => {
    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const encoding = contentEncodingOf(req.headers['content-encoding']);
    if (encoding === 'identity') return { body: raw };
    return { body: await decodeBody(raw, encoding, maxBytes), omitHeaders: ENCODING_HEADERS };
  };

  /**
   * The sinks that will not be able to map the record, with the reason: the record through the
   * current mapping of each enabled sink that takes it, as its writer maps it a moment later
   * (exact unless the mapping changes meanwhile; the sink's failures list is authoritative).
   * Never fails the request: the record is in the log whatever this finds.
   */
  const notMappedBy = async (req: FastifyRequest, target: IngestTarget, record: IngestRecord): Promise<Map<string, string>> => {
    const reasons = new Map<string, string>();
    if (!mappings) return reasons;
    const ctx = createRecordContext(record);
    await Promise.all(target.enabledSinks.filter((sink) => acceptsSignal(sink, record.signal)).map(async (sink) => {
      const mapping = await mappings.get(sink).catch((err: unknown) => {
        // Left to the sink's writer, which reports it.
        req.log.warn({ err, sinkId: sink.sinkId }, 'sink mapping does not compile; the verbose answer does not check the record against it');
      });
      if (!mapping) return;
      try {
        await mapping.render(ctx);
      } catch (err) {
        if (err instanceof MappingError) reasons.set(sink.sinkId, err.message);
        else req.log.error({ err, sinkId: sink.sinkId }, 'checking the record against the sink mapping failed');
      }
    }));
    return reasons;
  };

  app.post<{ Params: IngestParams }>('/:projectId/:sourceId/:secret', { config: OWN_CORS, bodyLimit: maxBodyBytes, logLevel: 'warn' }, async (req, reply) => {
    const target = resolveTarget(req);
    const { body, omitHeaders } = await bodyOf(req, maxBodyBytes);
    const record = httpRecord(req.raw, new Date(), body, omitHeaders);
    const verbose = isVerbose(req);
    // The quota is asked before the append (quota.ts); a record the log then refuses (503) has
    // used its share of it: rare, and on the quota's side.
    const quota = withQuota(reply, quotas.take(target, 1, body.length));
    if (quota) return answer(reply, refusalResult(429, req.id, projectId, target, quota), verbose);
    const appended = appendRecords(req, target, [record]);
    // Verbose only (the plain answer never maps): checked while the write becomes durable.
    const notMapped = verbose && appended !== 503 && appended !== 429 ? notMappedBy(req, target, record) : undefined;
    const status = await appended;
    if (status === 503 || status === 429) return answer(reply, refusalResult(status, req.id, projectId, target), verbose);
    return answer(reply, successResult(projectId, target, status, notMapped && (await notMapped)), verbose);
  });

  // The Kafka Connect HTTP sink's batch endpoint shares this plugin: its prefix, parser, CORS and errors.
  batchRoute(app, { resolveTarget, bodyOf, answer, appendRecords, logAppend, projectId, maxBatchBodyBytes, quotas });

  // CORS preflight of the ingestion URL; no authentication (browsers send no secret-bearing headers).
  app.options('/:projectId/:sourceId/:secret', { config: OWN_CORS, logLevel: 'warn' }, async (_req, reply) => reply.code(200).headers(CORS_PREFLIGHT).send());
  // Other OPTIONS under /stream would otherwise reach @fastify/cors's global `OPTIONS *`.
  app.options('/*', { config: OWN_CORS }, routeNotFound);
  app.options('/', { config: OWN_CORS, prefixTrailingSlash: 'no-slash' }, routeNotFound);
};
