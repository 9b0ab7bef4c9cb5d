/**
 * The ingestion route's common case, served before fastify sees the request: a POST of one
 * record to `/stream/<projectId>/<sourceId>/<secret>` of an enabled HTTP source, with a
 * Content-Length within the limit and no query. It does what the fastify route does for such
 * a request (routes.ts: the same lookup, secret check, record, append and answer) without the
 * framework's per-request work: routing, hooks, a child logger, the reply object. That work
 * is about a fifth of an event's cost at full load on two cores, where every event is a
 * request.
 *
 * Everything else goes to fastify untouched, before a byte of the body is read: other methods
 * and paths, a query (`?verbose=true`), unknown sources, wrong secrets, disabled sources, bodies
 * without a Content-Length or over the limit, compressed bodies, percent-encoded paths, a node
 * shutting down. So every error keeps the route's envelope, and the answers of both paths are
 * the same. A source over its quota is answered here (429 with the quota's headers, as the
 * route answers it).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { BacklogGate } from '../../actors/backlog-gate.js';
import type { EventLog } from '../../ports/event-log.js';
import { httpSourceTarget, INGEST_SERVER as SERVER, PROJECT_ID } from '../ingest/admission.js';
import { isEncoded } from '../ingest/content-encoding.js';
import { appendToLog, httpRecord, type AppendLog } from '../ingest/append.js';
import { RETRY_AFTER } from '../../http/errors.js';
import { applicationErrorMessage, exceptionId, QUOTA_CORS, refusalResult } from '../ingest/envelope.js';
import type { IngestSources, IngestTarget } from '../ingest/sources.js';
import { NO_QUOTAS, type QuotaHeaders, type SourceQuotas } from '../ingest/quota.js';

export interface IngestFastPathOptions {
  eventLog: EventLog;
  /** Refuses a source's records (429) while its sinks are too far behind (actors/backlog-gate.ts). */
  backlog?: BacklogGate;
  sources: IngestSources;
  projectId: number;
  maxBodyBytes: number;
  isShuttingDown: () => boolean;
  log: AppendLog;
  /** Called with the status and the seconds to the answer of every request the fast path answers (the metrics). */
  answered?: (status: number, seconds: number) => void;
  /** Per-source quotas (sources/ingest/source-quotas.ts); none: no quota. */
  quotas?: SourceQuotas;
}

/** Handles the request and returns true, or returns false having touched nothing. */
export type IngestFastPath = (req: IncomingMessage, res: ServerResponse) => boolean;

const PREFIX = '/stream/';
const OK = Buffer.from('OK');
const ignore = (): void => undefined;

export function createIngestFastPath(options: IngestFastPathOptions): IngestFastPath {
  const { eventLog, backlog, sources, projectId, maxBodyBytes, isShuttingDown, log, answered } = options;
  const quotas = options.quotas ?? NO_QUOTAS;
  const logAppend = { eventLog, projectId, backlog };
  let requests = 0;

  /** The target of a plain ingestion URL, or undefined for anything fastify should answer. */
  const targetOf = (req: IncomingMessage): IngestTarget | undefined => {
    const url = req.url;
    if (req.method !== 'POST' || url === undefined || !url.startsWith(PREFIX)) return undefined;
    if (url.includes('?') || url.includes('%')) return undefined;
    const parts = url.split('/');
    if (parts.length !== 5) return undefined;
    const [, , project, sourceId, secret] = parts;
    if (!PROJECT_ID.test(project) || Number(project) !== projectId || isShuttingDown()) return undefined;
    const target = httpSourceTarget(sources, sourceId, secret);
    if (!target || target.source.disabled) return undefined;
    // A compressed body is inflated by the route (content-encoding.ts), within its limit.
    if (isEncoded(req.headers['content-encoding'])) return undefined;
    const length = req.headers['content-length'];
    if (length === undefined || !(Number(length) <= maxBodyBytes)) return undefined;
    return target;
  };

  /**
   * `quota`: the source's RateLimit headers (a source with a quota), with Retry-After and the
   * quota's sentence when the quota refused the request.
   */
  const answer = (res: ServerResponse, status: 200 | 202 | 429 | 503, target: IngestTarget, requestId: string, started: number, quota?: { headers?: QuotaHeaders; message?: string }): void => {
    if (res.destroyed) return;
    if (status === 503 || status === 429) {
      const body = JSON.stringify(refusalResult(status, requestId, projectId, target, quota?.message));
      res.writeHead(status, {
        server: SERVER,
        'access-control-allow-origin': '*',
        'retry-after': RETRY_AFTER,
        ...(quota?.headers && { ...quota.headers, ...QUOTA_CORS }),
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
      });
      res.end(body);
    } else if (quota?.headers) {
      res.writeHead(status, { server: SERVER, 'access-control-allow-origin': '*', ...quota.headers, ...QUOTA_CORS, 'content-type': 'text/plain; charset=utf-8', 'content-length': 2 });
      res.end(OK);
    } else {
      res.writeHead(status, { server: SERVER, 'access-control-allow-origin': '*', 'content-type': 'text/plain; charset=utf-8', 'content-length': 2 });
      res.end(OK);
    }
    // Counted once the answer is on its way.
    answered?.(status, (performance.now() - started) / 1000);
  };

  /** As the route's error handler answers an unexpected failure. */
  const failed = (res: ServerResponse, err: unknown, requestId: string, started: number): void => {
    const id = exceptionId(requestId);
    log.error({ err, exceptionId: id }, 'ingestion failed');
    if (res.destroyed) return;
    const body = JSON.stringify({ statusCode: 500, error: 'stream.in.genericError', message: applicationErrorMessage(id), exceptionId: id });
    res.writeHead(500, { server: SERVER, 'access-control-allow-origin': '*', 'content-type': 'application/json; charset=utf-8', 'content-length': Buffer.byteLength(body) });
    res.end(body);
    answered?.(500, (performance.now() - started) / 1000);
  };

  return (req, res) => {
    const target = targetOf(req);
    if (!target) return false;
    const requestId = `fast-${++requests}`;
    const started = answered ? performance.now() : 0;
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      chunks.push(chunk);
      size += chunk.length;
    });
    req.on('end', () => {
      // The client sent what Content-Length announced (the HTTP parser holds it to that).
      const body = chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size);
      let status: ReturnType<typeof appendToLog>;
      const verdict = quotas.take(target, 1, body.length);
      if (!verdict.ok) return answer(res, 429, target, requestId, started, verdict);
      try {
        status = appendToLog(logAppend, target, [httpRecord(req, new Date(), body)], log);
      } catch (err) {
        return failed(res, err, requestId, started);
      }
      const quota = verdict.headers && verdict;
      if (typeof status === 'number') answer(res, status, target, requestId, started, quota);
      else status.then((s) => answer(res, s, target, requestId, started, quota), (err: unknown) => failed(res, err, requestId, started));
    });
    // An aborted request (the client went away mid-body) is never appended: 'end' does not
    // come, and its 'error' (ECONNRESET) concerns nobody else.
    req.on('error', ignore);
    return true;
  };
}
