/**
 * OTLP/HTTP ingestion:
 *
 *   POST /otlp/<projectId>/<sourceId>/<secret>/v1/{logs|metrics|traces}
 *   POST /otlp/<projectId>/<sourceId>/v1/{logs|metrics|traces}   (Authorization: Bearer <secret>)
 *
 * In order: authenticate (before anything is decoded), pick the encoding from Content-Type
 * (415 otherwise), then the export itself (ingest.ts, shared with OTLP/gRPC: inflate within
 * the size limit (413), decode (400), flatten, quota, append as ONE batch, partial_success)
 * and answer the Export*ServiceResponse in the request's encoding.
 * Backpressure: 503 + Retry-After when the log cannot keep more or the node stops, 429 +
 * Retry-After when too many request bytes are being processed at once, the sinks are too far
 * behind or the source is over its quota.
 */
import type { BacklogGate } from '../../actors/backlog-gate.js';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import type { EventLog } from '../../ports/event-log.js';
import { encodingOf } from './decode.js';
import { encodeExportResponse } from './encode.js';
import { SIGNALS, type Signal } from '../../model/definition.js';
import { normalizeIp } from '../../pipeline/columns/ip.js';
import { headersFromRaw } from '../../pipeline/headers.js';
import type { MappingCache } from '../../pipeline/mapping-cache.js';
import { ApiError } from '../../http/errors.js';
import { answerErrorsWith, renderError } from '../../http/error-handler.js';
import type { IngestSources, IngestTarget } from '../http/index.js';
import { CORS_PREFLIGHT, OWN_CORS, PROJECT_ID, secretMatches } from '../ingest/admission.js';
import { noSourceFound } from '../ingest/envelope.js';
import type { SourceQuotas } from '../ingest/quota.js';
import { otlpErrors } from './answers.js';
import { InflightBudget } from './inflight.js';
import { defaultInflightBytes, OtlpIngest } from './ingest.js';
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
  /** The in-flight budget shared with OTLP/gRPC; default: one of its own of `maxInflightBytes`. */
  inflight?: InflightBudget;
  /** Records and bytes per second per source (429 beyond); default: none. */
  quotas?: SourceQuotas;
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
/** Headers the mappings never see: the secret, and the encoding of a body stored inflated (content-encoding.ts). */
const OMITTED_HEADERS: ReadonlySet<string> = new Set(['Authorization', 'Content-Encoding']);
export const ROUTE_NOT_FOUND = 'Not found, please send OTLP data using POST /otlp/<projectID>/<sourceID>/<secret>/v1/{logs|metrics|traces}';

export const otlpRoutes: FastifyPluginAsync<OtlpApiOptions> = async (app, opts) => {
  const { sources, isShuttingDown } = opts;
  const { projectId, maxBodyBytes } = opts.config;
  const { answered } = opts;
  if (answered) {
    app.addHook('onResponse', (req, reply, done) => {
      if (req.method !== 'OPTIONS') answered('otlp', reply.statusCode, reply.elapsedTime / 1000);
      done();
    });
  }
  const inflight = opts.inflight ?? new InflightBudget(opts.config.maxInflightBytes ?? defaultInflightBytes(maxBodyBytes));
  const ingest = new OtlpIngest({ eventLog: opts.eventLog, backlog: opts.backlog, mappings: opts.mappings, projectId, maxBodyBytes, inflight, quotas: opts.quotas });

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

  async function handle(req: FastifyRequest<{ Params: Params }>, reply: FastifyReply): Promise<FastifyReply> {
    if (isShuttingDown()) throw new ApiError(503, 'shutdown', 'The node is shutting down, please retry later.');
    const signal = req.params.signal as Signal;
    if (!SIGNALS.includes(signal)) throw new ApiError(404, 'routeNotFound', ROUTE_NOT_FOUND);
    const target = authenticate(req);
    ingest.admit(target);
    const encoding = encodingOf(req.headers['content-type']);
    if (!encoding) {
      throw new ApiError(415, 'unsupportedMediaType', `Unsupported Content-Type "${req.headers['content-type'] ?? ''}": use application/x-protobuf or application/json.`);
    }
    const contentEncoding = req.headers['content-encoding'];

    const result = await ingest.export({
      target,
      signal,
      encoding,
      body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
      contentEncoding,
      ip: normalizeIp(req.socket.remoteAddress) ?? '',
      headers: headersFromRaw(req.raw.rawHeaders, OMITTED_HEADERS),
      log: req.log,
    });
    if (result.quotaHeaders) reply.headers(result.quotaHeaders);
    return send(reply, encodeExportResponse(signal, encoding, result.partial), encoding);
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
