/**
 * POST /stream/<projectId>/<sourceId>/<secret> (reference §14): authenticate by the source
 * secret, cut the request into one record, append it to the source's topic of the event log
 * (the acknowledgement point, DESIGN.md "The record's path") and answer 200 once it is durable
 * (sync.wait) or 202 at once. Everything after the log (fan-out to sinks, mapping) happens in
 * the actors; this route does nothing more.
 */
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { EventLog } from '../../connectors/event-log/event-log.js';
import type { IngestRecord } from '../../pipeline/record.js';
import { appendToLog, httpRecord } from './append.js';
import { ApiError } from '../errors.js';
import type { IngestSources, IngestTarget } from './sources.js';
import { CORS_PREFLIGHT, httpSourceTarget, INGEST_SERVER, OWN_CORS, PROJECT_ID } from './admission.js';
import { batchResult, logFullResult, noSourceFound, renderIngestError, ROUTE_NOT_FOUND, SHUTTING_DOWN, successResult, type IngestResult } from './envelope.js';
import { splitBatch } from '../../connectors/http-batch/split.js';

export interface IngestApiOptions {
  eventLog: EventLog;
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
}

interface IngestParams {
  projectId: string;
  sourceId: string;
  secret: string;
}

/** Go's strconv.ParseBool true values. */
const TRUE = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);

function isVerbose(req: FastifyRequest): boolean {
  const v = (req.query as Record<string, unknown> | undefined)?.verbose;
  return typeof v === 'string' ? TRUE.has(v) : Array.isArray(v) && TRUE.has(String(v[v.length - 1]));
}

/** The ingestion routes; registered under the prefix /stream by `ingestApi`. */
export const ingestRoutes: FastifyPluginAsync<IngestApiOptions> = async (app, opts) => {
  const { eventLog, sources, isShuttingDown } = opts;
  const { projectId, maxBodyBytes, maxBatchBodyBytes } = opts.config;

  // Any content type is one record's raw bytes; nothing is parsed here.
  app.removeAllContentTypeParsers();
  // The limit is each route's own bodyLimit (single records and connector batches differ).
  app.addContentTypeParser('*', { parseAs: 'buffer' }, (_req, body, done) => done(null, body));

  app.addHook('onRequest', (_req, reply, done) => {
    reply.header('server', INGEST_SERVER);
    reply.header('access-control-allow-origin', '*');
    done();
  });
  app.setErrorHandler((err, req, reply) => renderIngestError(err, req, reply, req.routeOptions.bodyLimit ?? maxBodyBytes));
  const routeNotFound = (req: FastifyRequest, reply: FastifyReply) =>
    renderIngestError(new ApiError(404, 'routeNotFound', ROUTE_NOT_FOUND), req, reply, maxBodyBytes);
  app.setNotFoundHandler(routeNotFound);

  const answer = (reply: FastifyReply, result: IngestResult, verbose: boolean): FastifyReply => {
    if (result.statusCode >= 500) reply.header('retry-after', '1');
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

  const appendRecords = (req: FastifyRequest, target: IngestTarget, records: IngestRecord[]) => appendToLog(eventLog, projectId, target, records, req.log);

  const recordOf = (req: FastifyRequest, receivedAt: Date, body: Buffer): IngestRecord => httpRecord(req.raw, receivedAt, body);

  app.post<{ Params: IngestParams }>('/:projectId/:sourceId/:secret', { config: OWN_CORS, bodyLimit: maxBodyBytes, logLevel: 'warn' }, async (req, reply) => {
    const target = resolveTarget(req);
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const status = await appendRecords(req, target, [recordOf(req, new Date(), body)]);
    const verbose = isVerbose(req);
    if (status === 503) return answer(reply, logFullResult(req.id, projectId, target), verbose);
    return answer(reply, successResult(projectId, target, status), verbose);
  });

  // The Kafka Connect HTTP sink variant: one request carries many records (JSON array, NDJSON,
  // comma-joined objects). Bad records are rejected one by one and counted in a 2xx answer;
  // only a request without a single good record is a 400 (connectors retry any 4xx).
  app.post<{ Params: IngestParams }>('/:projectId/:sourceId/:secret/batch', { config: OWN_CORS, bodyLimit: maxBatchBodyBytes, logLevel: 'warn' }, async (req, reply) => {
    const target = resolveTarget(req);
    const body = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    const batch = splitBatch(body);
    if (batch.records.length === 0) {
      if (batch.rejected.length === 0) throw new ApiError(400, 'emptyBatch', 'The request body holds no records.');
      throw new ApiError(400, 'invalidBatch', `No valid record in the batch (${batch.rejected.length} rejected). First error: record ${batch.rejected[0].index}: ${batch.rejected[0].message}`);
    }
    if (batch.rejected.length > 0) {
      req.log.warn({ sourceId: target.source.sourceId, rejected: batch.rejected.length, first: batch.rejected[0] }, 'batch records rejected');
    }
    const receivedAt = new Date();
    const status = await appendRecords(req, target, batch.records.map((r) => recordOf(req, receivedAt, r.body)));
    if (status === 503) {
      reply.header('retry-after', '1');
      return reply.code(503).type('application/json; charset=utf-8').send(logFullResult(req.id, projectId, target));
    }
    return reply.code(status).type('application/json; charset=utf-8').send(batchResult(status, batch));
  });

  // CORS preflight of the ingestion URL; no authentication (browsers send no secret-bearing headers).
  app.options('/:projectId/:sourceId/:secret', { config: OWN_CORS, logLevel: 'warn' }, async (_req, reply) => reply.code(200).headers(CORS_PREFLIGHT).send());
  // Other OPTIONS under /stream would otherwise reach @fastify/cors's global `OPTIONS *`.
  app.options('/*', { config: OWN_CORS }, routeNotFound);
  app.options('/', { config: OWN_CORS, prefixTrailingSlash: 'no-slash' }, routeNotFound);
};
