/**
 * OTLP/HTTP ingestion:
 *
 *   POST /otlp/<projectId>/<sourceId>/<secret>/v1/{logs|metrics|traces}
 *   POST /otlp/<projectId>/<sourceId>/v1/{logs|metrics|traces}   (Authorization: Bearer <secret>)
 *
 * In order: authenticate (before anything is decoded), pick the encoding from Content-Type
 * (415 otherwise), inflate gzip within the size limit (413), decode (400), flatten into one
 * record per log record / data point / span, append all records of the request to the
 * source's topic as ONE batch (the acknowledgement point), find meanwhile the records a sink
 * will not be able to map (partial_success; see rejections.ts) and answer the
 * Export*ServiceResponse in the request's encoding.
 * Backpressure: 503 + Retry-After when the log cannot keep more or the node stops, 429 +
 * Retry-After when too many request bytes are being processed at once.
 */
import type { BacklogGate } from '../../actors/backlog-gate.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { EventLog } from '../../ports/event-log.js';
import { decodeExportRequest, encodingOf } from './decode.js';
import { encodeExportResponse } from './encode.js';
import { acceptsSignal, SIGNALS, type Signal } from '../../model/definition.js';
import { createRecordContext } from '../../pipeline/columns/index.js';
import { normalizeIp } from '../../pipeline/columns/ip.js';
import { headersFromRaw } from '../../pipeline/headers.js';
import type { MappingCache } from '../../pipeline/mapping-cache.js';
import { flatten } from './flatten.js';
import { findRejections, mappingCanFail, rejectionMessage, type Rejections, type SinkMapping } from './rejections.js';
import { templateCanFail } from './template-can-fail.js';
import type { IngestRecord } from '../../model/record.js';
import { ApiError, LoggedRefusal } from '../../http/errors.js';
import { answerErrorsWith, renderError } from '../../http/error-handler.js';
import type { IngestSources, IngestTarget } from '../http/index.js';
import { appendToLog, sinksTooFarBehind, type AppendMessages } from '../ingest/append.js';
import { CORS_PREFLIGHT, OWN_CORS, PROJECT_ID, secretMatches } from '../ingest/admission.js';
import { noSourceFound, SINKS_BEHIND } from '../ingest/envelope.js';
import { inflate } from './body.js';
import { LOG_FULL, otlpErrors } from './answers.js';
import { InflightBudget } from './inflight.js';
import type { IngestAnswered } from '../../observability/ingest-requests.js';

export interface OtlpApiOptions {
  eventLog: EventLog;
  /** Refuses a source's records (429) while its sinks are too far behind (actors/backlog-gate.ts). */
  backlog?: BacklogGate;
  sources: IngestSources;
  /** Compiled sink mappings, to tell the client which records a sink will reject. */
  mappings: Pick<MappingCache, 'get'>;
  config: {
    projectId: number;
    /** Largest request body, compressed and after decompression (413 above). */
    maxBodyBytes: number;
    /** Request bytes (inflated) processed at once, over all requests; 429 above. Default 4 × maxBodyBytes, at least 64 MiB. */
    maxInflightBytes?: number;
  };
  isShuttingDown: () => boolean;
  /** Called once per answer of these routes (the metrics: observability/ingest-requests.ts). */
  answered?: IngestAnswered;
}

interface Params {
  projectId: string;
  sourceId: string;
  secret?: string;
  signal: string;
}

const SERVER = 'Sluice/Stream/OTLPSource';
const BEARER = /^bearer\s+(\S+)\s*$/i;
/** Headers the mappings never see: the secret. */
const OMITTED_HEADERS: ReadonlySet<string> = new Set(['Authorization']);
export const ROUTE_NOT_FOUND = 'Not found, please send OTLP data using POST /otlp/<projectID>/<sourceID>/<secret>/v1/{logs|metrics|traces}';

export const otlpRoutes: FastifyPluginAsync<OtlpApiOptions> = async (app, opts) => {
  const { eventLog, backlog, sources, mappings, isShuttingDown } = opts;
  const { projectId, maxBodyBytes } = opts.config;
  const logAppend = { eventLog, projectId, backlog };
  const { answered } = opts;
  if (answered) {
    app.addHook('onResponse', (req, reply, done) => {
      if (req.method !== 'OPTIONS') answered('otlp', reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }
  const budget = new InflightBudget(opts.config.maxInflightBytes ?? Math.max(64 * 1024 * 1024, 4 * maxBodyBytes));
  // Flattening copies resource and scope into every record: bound the growth (413 beyond).
  const maxFlattenedBytes = Math.max(64 * 1024 * 1024, 8 * maxBodyBytes);

  // The body stays bytes until the source is authenticated; decoding happens in the handler.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: maxBodyBytes }, (_req, body, done) => done(null, body));
  app.addHook('onRequest', (_req, reply, done) => {
    reply.header('server', SERVER);
    reply.header('access-control-allow-origin', '*');
    done();
  });
  const errors = otlpErrors(maxBodyBytes);
  answerErrorsWith(app, errors);
  const routeNotFound = (req: FastifyRequest, reply: FastifyReply) => renderError(errors, new ApiError(404, 'routeNotFound', ROUTE_NOT_FOUND), req, reply);
  app.setNotFoundHandler(routeNotFound);

  /** The authenticated, enabled OTLP source of the request; 404 otherwise (before any decoding). */
  function authenticate(req: FastifyRequest<{ Params: Params }>): IngestTarget {
    const { sourceId } = req.params;
    if (!PROJECT_ID.test(req.params.projectId)) throw new ApiError(400, 'badRequest', `Invalid project ID "${req.params.projectId}".`);
    let secret = req.params.secret;
    if (secret === undefined) {
      const m = BEARER.exec(req.headers.authorization ?? '');
      if (!m) throw noSourceFound();
      secret = m[1];
    }
    if (Number(req.params.projectId) !== projectId) throw noSourceFound();
    const target = sources.lookup(sourceId);
    // Secrets are namespaced by transport: an HTTP source's secret is not valid here.
    if (!target || target.source.type !== 'otlp' || !secretMatches(secret, target.source.secret)) throw noSourceFound();
    if (target.source.disabled) throw new ApiError(404, 'disabledSource', `The source "${sourceId}" is disabled.`);
    return target;
  }

  /**
   * The mappings to check: of the enabled sinks that take the signal and can fail at all (a
   * filter can: its error, or an answer that is not a boolean). A sink whose mapping does not
   * compile is left to its writer (which reports it).
   */
  async function sinkMappings(target: IngestTarget, signal: Signal, req: FastifyRequest): Promise<SinkMapping[]> {
    const out: SinkMapping[] = [];
    for (const sink of target.enabledSinks) {
      if (!acceptsSignal(sink, signal)) continue;
      if (!sink.table.mapping.filter && !mappingCanFail(sink.table.mapping.columns, signal, templateCanFail)) continue;
      try {
        out.push({ sinkId: sink.sinkId, mapping: await mappings.get(sink) });
      } catch (err) {
        req.log.warn({ err, sinkId: sink.sinkId }, 'sink mapping does not compile; OTLP records are not checked against it');
      }
    }
    return out;
  }

  /**
   * Appends the records of one request as one batch to the source's topic (the acknowledgement
   * point, ingest/append.ts); throws a 503 at once when the log cannot keep them. The promise
   * is settled once the answer may go: with undefined (acknowledged: durable, or sync.wait
   * false), or with the 503 to answer when the durable write failed.
   */
  function appendRecords(target: IngestTarget, records: IngestRecord[], req: FastifyRequest): Promise<ApiError | undefined> {
    const status = appendToLog(logAppend, target, records, req.log, OTLP_MESSAGES);
    // The refusal is logged by the error handler (otlpErrors' refusals).
    if (status === 503) throw logFull();
    if (status === 429) throw sinksBehind();
    if (status === 202) return ACKNOWLEDGED;
    return status.then((s) => (s === 503 ? logFull() : undefined));
  }

  async function handle(req: FastifyRequest<{ Params: Params }>, reply: FastifyReply): Promise<FastifyReply> {
    if (isShuttingDown()) throw new ApiError(503, 'shutdown', 'The node is shutting down, please retry later.');
    const signal = req.params.signal as Signal;
    if (!SIGNALS.includes(signal)) throw new ApiError(404, 'routeNotFound', ROUTE_NOT_FOUND);
    const target = authenticate(req);
    if (sinksTooFarBehind(logAppend, target)) throw sinksBehind();
    const encoding = encodingOf(req.headers['content-type']);
    if (!encoding) {
      throw new ApiError(415, 'unsupportedMediaType', `Unsupported Content-Type "${req.headers['content-type'] ?? ''}": use application/x-protobuf or application/json.`);
    }
    const contentEncoding = req.headers['content-encoding'];

    const raw = Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0);
    // The request's share of the in-flight budget grows with what it holds: raw, inflated, flattened.
    let reserved = 0;
    const holdAtLeast = (bytes: number): void => {
      if (bytes <= reserved) return;
      if (!budget.tryReserve(bytes - reserved, reserved)) throw tooManyRequests();
      reserved = bytes;
    };
    try {
      holdAtLeast(raw.length);
      const body = await inflate(raw, contentEncoding, maxBodyBytes);
      holdAtLeast(body.length);
      const flattened = flatten(signal, decodeExportRequest(signal, encoding, body), maxFlattenedBytes);
      if (flattened.length === 0) return send(reply, encodeExportResponse(signal, encoding), encoding);
      // From here on the records are what the request holds (resource and scope are copied into each).
      holdAtLeast(flattened.reduce((n, r) => n + r.length, 0));

      const receivedAt = new Date();
      const ip = normalizeIp(req.socket.remoteAddress) ?? '';
      const headers = headersFromRaw(req.raw.rawHeaders, OMITTED_HEADERS);
      const records: IngestRecord[] = flattened.map((json) => ({ receivedAt, ip, headers, body: Buffer.from(json), signal }));
      // The records are appended first (the acknowledgement point); the rejection check runs
      // while the write becomes durable, and gives up after CHECK_DEADLINE_MS so that slow
      // templates cannot push the answer past the exporter's timeout (a retry would duplicate).
      const durable = appendRecords(target, records, req);
      // The records are acknowledged whatever the check finds: it must never fail the request.
      const check = findRejections(records.map(createRecordContext), await sinkMappings(target, signal, req)).catch((err: unknown) => {
        req.log.error({ err }, 'OTLP rejection check failed; answered without partial_success');
        return { rejected: 0 };
      });
      const rejections = await withDeadline(check, CHECK_DEADLINE_MS, () => req.log.warn({ sourceId: target.source.sourceId }, 'OTLP rejection check took too long; answered without partial_success'));
      const failed = await durable;
      if (failed !== undefined) throw failed;
      const partial = rejections.rejected > 0 ? { rejected: rejections.rejected, errorMessage: rejectionMessage(rejections, records.length) } : undefined;
      return send(reply, encodeExportResponse(signal, encoding, partial), encoding);
    } finally {
      budget.release(reserved);
    }
  }

  function send(reply: FastifyReply, body: Buffer, encoding: 'protobuf' | 'json'): FastifyReply {
    return reply.code(200).type(encoding === 'json' ? 'application/json' : 'application/x-protobuf').send(body);
  }

  const route = { config: OWN_CORS, bodyLimit: maxBodyBytes, logLevel: 'warn' as const };
  app.post<{ Params: Params }>('/:projectId/:sourceId/:secret/v1/:signal', route, handle);
  app.post<{ Params: Params }>('/:projectId/:sourceId/v1/:signal', route, handle);
  const preflight = async (_req: FastifyRequest, reply: FastifyReply) => reply.code(200).headers(CORS_PREFLIGHT).send();
  app.options('/:projectId/:sourceId/:secret/v1/:signal', { config: OWN_CORS, logLevel: 'warn' }, preflight);
  app.options('/:projectId/:sourceId/v1/:signal', { config: OWN_CORS, logLevel: 'warn' }, preflight);
  // Other OPTIONS under /otlp would otherwise reach @fastify/cors's global `OPTIONS *`.
  app.options('/*', { config: OWN_CORS }, routeNotFound);
};

/** What the acknowledgement point logs for OTLP requests (a refusal is logged by the error handler). */
const OTLP_MESSAGES: AppendMessages = {
  notDurable: 'OTLP records acknowledged before sync were not made durable',
  failed: 'durable write of OTLP records failed, request refused',
};

const ACKNOWLEDGED = Promise.resolve(undefined);

function logFull(): ApiError {
  return new ApiError(503, 'logFull', LOG_FULL);
}

/** How long the answer waits for the rejection check at most. */
const CHECK_DEADLINE_MS = 2000;

/** The check's result, or "none rejected" (unknown) once the deadline passed. */
async function withDeadline(check: Promise<Rejections>, ms: number, onLate: () => void): Promise<Rejections> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<Rejections>((resolve) => {
    timer = setTimeout(() => {
      onLate();
      resolve({ rejected: 0 });
    }, ms);
  });
  try {
    return await Promise.race([check, late]);
  } finally {
    clearTimeout(timer);
  }
}

function sinksBehind(): ApiError {
  return new LoggedRefusal(429, 'tooManyRequests', SINKS_BEHIND);
}

function tooManyRequests(): ApiError {
  return new ApiError(429, 'tooManyRequests', 'Too many OTLP request bytes are being processed at the moment, please retry later.');
}
