/**
 * POST /stream/<projectId>/<sourceId>/<secret> (reference §14): authenticate by the source
 * secret, cut the request into one record, append it to the source's topic of the event log
 * (the acknowledgement point, DESIGN.md "The record's path") and answer 200 once it is durable
 * (sync.wait) or 202 at once. Everything after the log (fan-out to sinks, mapping) happens in
 * the actors; this route does nothing more.
 */
import { timingSafeEqual } from 'node:crypto';
import type { FastifyPluginAsync, FastifyReply, FastifyRequest } from 'fastify';
import { EventLogFullError, sourceTopic, type AppendResult, type EventLog } from '../../connectors/event-log/event-log.js';
import type { IngestRecord } from '../../pipeline/record.js';
import { headersFromRaw } from '../../pipeline/headers.js';
import { normalizeIp } from '../../pipeline/columns/ip.js';
import { syncWaitOf } from '../../pipeline/triggers.js';
import { ApiError } from '../errors.js';
import type { IngestSources, IngestTarget } from './sources.js';
import { logFullResult, noSourceFound, renderIngestError, ROUTE_NOT_FOUND, SHUTTING_DOWN, successResult, type IngestResult } from './envelope.js';

export interface IngestApiOptions {
  eventLog: EventLog;
  sources: IngestSources;
  config: {
    /** The project this node serves; any other id in the path is "not found". */
    projectId: number;
    /** Largest accepted request body (reference default 1 MB, configurable 100 B – 4 MB). */
    maxBodyBytes: number;
  };
  /** True once the node stops: new records are refused with 503 shutdown. */
  isShuttingDown: () => boolean;
}

interface IngestParams {
  projectId: string;
  sourceId: string;
  secret: string;
}

const SERVER = 'Sluice/Stream/HTTPSource';
const PROJECT_ID = /^-?\d+$/;
/** Go's strconv.ParseBool true values. */
const TRUE = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);

// @fastify/cors (registered globally for the management API) skips routes with `cors: false`;
// these routes answer CORS themselves, with the ingestion policy of §14.1.
const OWN_CORS = { cors: false } as Record<string, unknown>;

const CORS_PREFLIGHT = {
  allow: 'OPTIONS, POST',
  'access-control-allow-methods': 'OPTIONS, POST',
  'access-control-allow-headers': '*',
  'access-control-expose-headers': '*',
  'access-control-allow-origin': '*',
};

/** Compares in time independent of where the strings differ (a length mismatch is not a secret). */
function secretMatches(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  if (a.length !== b.length) {
    timingSafeEqual(b, b);
    return false;
  }
  return timingSafeEqual(a, b);
}

/** Waits for durability if any enabled sink wants it; with no enabled sink the source's own setting decides. */
function needsSyncWait(target: IngestTarget): boolean {
  const own = target.source.config;
  if (target.enabledSinks.length === 0) return syncWaitOf(own);
  for (const sink of target.enabledSinks) if (syncWaitOf(own, sink.config)) return true;
  return false;
}

function isVerbose(req: FastifyRequest): boolean {
  const v = (req.query as Record<string, unknown> | undefined)?.verbose;
  return typeof v === 'string' ? TRUE.has(v) : Array.isArray(v) && TRUE.has(String(v[v.length - 1]));
}

/** The ingestion routes; registered under the prefix /stream by `ingestApi`. */
export const ingestRoutes: FastifyPluginAsync<IngestApiOptions> = async (app, opts) => {
  const { eventLog, sources, isShuttingDown } = opts;
  const { projectId, maxBodyBytes } = opts.config;

  // Any content type is one record's raw bytes; nothing is parsed here.
  app.removeAllContentTypeParsers();
  app.addContentTypeParser('*', { parseAs: 'buffer', bodyLimit: maxBodyBytes }, (_req, body, done) => done(null, body));

  app.addHook('onRequest', (_req, reply, done) => {
    reply.header('server', SERVER);
    reply.header('access-control-allow-origin', '*');
    done();
  });
  app.setErrorHandler((err, req, reply) => renderIngestError(err, req, reply, maxBodyBytes));
  const routeNotFound = (req: FastifyRequest, reply: FastifyReply) =>
    renderIngestError(new ApiError(404, 'routeNotFound', ROUTE_NOT_FOUND), req, reply, maxBodyBytes);
  app.setNotFoundHandler(routeNotFound);

  const answer = (reply: FastifyReply, result: IngestResult, verbose: boolean): FastifyReply => {
    if (result.statusCode >= 500) reply.header('retry-after', '1');
    if (verbose || result.statusCode >= 400) return reply.code(result.statusCode).type('application/json; charset=utf-8').send(result);
    return reply.code(result.statusCode).type('text/plain; charset=utf-8').send('OK');
  };

  app.post<{ Params: IngestParams }>('/:projectId/:sourceId/:secret', { config: OWN_CORS, bodyLimit: maxBodyBytes, logLevel: 'warn' }, async (req, reply) => {
    if (isShuttingDown()) throw new ApiError(503, 'shutdown', SHUTTING_DOWN);
    const { sourceId, secret } = req.params;
    if (!PROJECT_ID.test(req.params.projectId)) throw new ApiError(400, 'badRequest', `Invalid project ID "${req.params.projectId}".`);
    if (Number(req.params.projectId) !== projectId) throw noSourceFound();
    const target = sources.lookup(sourceId);
    if (!target || target.source.type !== 'http' || !secretMatches(secret, target.source.secret)) throw noSourceFound();
    const { source } = target;
    if (source.disabled) throw new ApiError(404, 'disabledSource', `The source "${sourceId}" is disabled.`);

    const record: IngestRecord = {
      receivedAt: new Date(),
      ip: normalizeIp(req.socket.remoteAddress) ?? '',
      headers: headersFromRaw(req.raw.rawHeaders),
      body: Buffer.isBuffer(req.body) ? req.body : Buffer.alloc(0),
      signal: '',
    };
    const verbose = isVerbose(req);
    const syncWait = needsSyncWait(target);

    let appended: AppendResult;
    try {
      appended = eventLog.append(sourceTopic(projectId, source.branchId, sourceId), [record]);
    } catch (err) {
      if (err instanceof EventLogFullError) {
        req.log.warn({ sourceId }, 'event log full, record refused');
        return answer(reply, logFullResult(req, projectId, target), verbose);
      }
      throw err;
    }

    if (!syncWait) {
      // Answered before the write is durable (sync.wait=false): a later failure is only logged.
      appended.durable.catch((err: unknown) => req.log.error({ err, sourceId, offset: appended.firstOffset }, 'record acknowledged with 202 was not made durable'));
      return answer(reply, successResult(projectId, target, 202), verbose);
    }
    try {
      await appended.durable;
    } catch (err) {
      req.log.warn({ err, sourceId }, 'durable write of the record failed, record refused');
      return answer(reply, logFullResult(req, projectId, target), verbose);
    }
    return answer(reply, successResult(projectId, target, 200), verbose);
  });

  // CORS preflight of the ingestion URL; no authentication (browsers send no secret-bearing headers).
  app.options('/:projectId/:sourceId/:secret', { config: OWN_CORS, logLevel: 'warn' }, async (_req, reply) => reply.code(200).headers(CORS_PREFLIGHT).send());
  // Other OPTIONS under /stream would otherwise reach @fastify/cors's global `OPTIONS *`.
  app.options('/*', { config: OWN_CORS }, routeNotFound);
  app.options('/', { config: OWN_CORS, prefixTrailingSlash: 'no-slash' }, routeNotFound);
};
