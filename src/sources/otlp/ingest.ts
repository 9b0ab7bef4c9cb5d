/**
 * The export of one OTLP request, whatever carried it (OTLP/HTTP: routes.ts; OTLP/gRPC:
 * sources/otlp-grpc/). The transport authenticates the source and hands over the body; here, in
 * order: inflate (gzip, within the size limit), decode, flatten into one record per log record /
 * data point / span, ask the source's quota, append all records as ONE batch to the source's
 * topic (the acknowledgement point), find meanwhile the records a sink will not be able to map
 * (partial_success; rejections.ts). Both transports thus store the same records, route them to
 * the same sinks and report the same partial_success and refusals.
 *
 * Refusals are thrown: ApiError (400, 413, 429, 503, as OTLP/HTTP answers them; the gRPC
 * transport maps the statuses to codes), OtlpDecodeError, FlattenLimitError, QuotaRefusal.
 * One in-flight byte budget is shared by the transports (inflight.ts).
 */
import type { BacklogGate } from '../../actors/backlog-gate.js';
import type { EventLog } from '../../ports/event-log.js';
import type { MappingCache } from '../../pipeline/mapping-cache.js';
import { createRecordContext } from '../../pipeline/columns/index.js';
import { acceptsSignal, type Signal } from '../../model/definition.js';
import type { IngestRecord } from '../../model/record.js';
import { ApiError, LoggedRefusal } from '../../http/errors.js';
import type { IngestTarget } from '../ingest/sources.js';
import { appendToLog, sinksTooFarBehind, type AppendLog, type AppendMessages, type LogAppend } from '../ingest/append.js';
import { SINKS_BEHIND } from '../ingest/envelope.js';
import { NO_QUOTAS, type QuotaHeaders, type SourceQuotas } from '../ingest/quota.js';
import { decodeExportRequest, type OtlpEncoding } from './decode.js';
import type { PartialSuccess } from './encode.js';
import { flatten } from './flatten.js';
import { findRejections, mappingCanFail, rejectionMessage, type Rejections, type SinkMapping } from './rejections.js';
import { templateCanFail } from './template-can-fail.js';
import { contentEncodingOf, decodeBody } from '../ingest/content-encoding.js';
import { LOG_FULL, QuotaRefusal } from './answers.js';
import type { InflightBudget } from './inflight.js';

export interface OtlpIngestOptions {
  eventLog: EventLog;
  /** Refuses a source's records (429) while its sinks are too far behind (actors/backlog-gate.ts). */
  backlog?: BacklogGate;
  /** Compiled sink mappings, to tell the client which records a sink will reject. */
  mappings: Pick<MappingCache, 'get'>;
  projectId: number;
  /** Largest request body, compressed and after decompression (413 above). */
  maxBodyBytes: number;
  /** Request bytes processed at once, over all requests of both transports (429 above). */
  inflight: InflightBudget;
  /** Records and bytes per second per source (default: none). */
  quotas?: SourceQuotas;
}

/** What a request logs through (a fastify request's logger, or a call's child logger). */
export type IngestLog = AppendLog;

/** One export request, handed over by a transport once its source is authenticated. */
export interface OtlpExportRequest {
  target: IngestTarget;
  signal: Signal;
  encoding: OtlpEncoding;
  /** The body as received (still compressed when `contentEncoding` is gzip). */
  body: Buffer;
  /** The body's Content-Encoding (gzip or none; the transport refused the others). */
  contentEncoding?: string;
  /** The client's address and the request's headers (without the secret): every record's. */
  ip: string;
  headers: Record<string, string>;
  log: IngestLog;
}

export interface OtlpExportResult {
  /** Records appended to the log (0: an empty request). */
  records: number;
  /** The records a sink will not be able to map, when there are any. */
  partial?: PartialSuccess;
  /** RateLimit headers of the source's quota, for the HTTP answer (none without a quota). */
  quotaHeaders?: QuotaHeaders;
}

/** The in-flight budget's default: 4 × the body limit, at least 64 MiB. */
export function defaultInflightBytes(maxBodyBytes: number): number {
  return Math.max(64 * 1024 * 1024, 4 * maxBodyBytes);
}

export class OtlpIngest {
  private readonly logAppend: LogAppend;
  private readonly quotas: SourceQuotas;
  // Flattening copies resource and scope into every record: bound the growth (413 beyond).
  private readonly maxFlattenedBytes: number;

  constructor(private readonly opts: OtlpIngestOptions) {
    this.logAppend = { eventLog: opts.eventLog, projectId: opts.projectId, backlog: opts.backlog };
    this.quotas = opts.quotas ?? NO_QUOTAS;
    this.maxFlattenedBytes = Math.max(64 * 1024 * 1024, 8 * opts.maxBodyBytes);
  }

  /** Throws the refusal due before the body is decoded (429: the source's sinks are too far behind). */
  admit(target: IngestTarget): void {
    if (sinksTooFarBehind(this.logAppend, target)) throw sinksBehind();
  }

  async export(req: OtlpExportRequest): Promise<OtlpExportResult> {
    const { target, signal, log } = req;
    const budget = this.opts.inflight;
    // The request's share of the in-flight budget grows with what it holds: raw, inflated, flattened.
    let reserved = 0;
    const holdAtLeast = (bytes: number): void => {
      if (bytes <= reserved) return;
      if (!budget.tryReserve(bytes - reserved, reserved)) throw tooManyRequests();
      reserved = bytes;
    };
    try {
      holdAtLeast(req.body.length);
      const body = await decodeBody(req.body, contentEncodingOf(req.contentEncoding), this.opts.maxBodyBytes);
      holdAtLeast(body.length);
      const flattened = flatten(signal, decodeExportRequest(signal, req.encoding, body), this.maxFlattenedBytes);
      if (flattened.length === 0) return { records: 0 };
      // From here on the records are what the request holds (resource and scope are copied into each).
      const bytes = flattened.reduce((n, r) => n + r.length, 0);
      holdAtLeast(bytes);
      const verdict = this.quotas.take(target, flattened.length, bytes);
      if (!verdict.ok) throw new QuotaRefusal(verdict);

      const receivedAt = new Date();
      const { ip, headers } = req;
      const records: IngestRecord[] = flattened.map((json) => ({ receivedAt, ip, headers, body: Buffer.from(json), signal }));
      // The records are appended first (the acknowledgement point); the rejection check runs
      // while the write becomes durable, and gives up after CHECK_DEADLINE_MS so that slow
      // templates cannot push the answer past the exporter's timeout (a retry would duplicate).
      const durable = this.append(target, records, log);
      // The records are acknowledged whatever the check finds: it must never fail the request.
      const check = this.sinkMappings(target, signal, log).then((sinks) => findRejections(sinks.length > 0 ? records.map(createRecordContext) : [], sinks)).catch((err: unknown) => {
        log.error({ err }, 'OTLP rejection check failed; answered without partial_success');
        return { rejected: 0 };
      });
      const rejections = await withDeadline(check, CHECK_DEADLINE_MS, () => log.warn({ sourceId: target.source.sourceId }, 'OTLP rejection check took too long; answered without partial_success'));
      const failed = await durable;
      if (failed !== undefined) throw failed;
      const partial = rejections.rejected > 0 ? { rejected: rejections.rejected, errorMessage: rejectionMessage(rejections, records.length) } : undefined;
      return { records: records.length, partial, quotaHeaders: verdict.headers };
    } finally {
      budget.release(reserved);
    }
  }

  /**
   * The mappings to check: of the enabled sinks that take the signal and can fail at all (a
   * filter can: its error, or an answer that is not a boolean). A sink whose mapping does not
   * compile is left to its writer (which reports it).
   */
  private async sinkMappings(target: IngestTarget, signal: Signal, log: IngestLog): Promise<SinkMapping[]> {
    const out: SinkMapping[] = [];
    for (const sink of target.enabledSinks) {
      if (!acceptsSignal(sink, signal)) continue;
      if (!sink.table.mapping.filter && !mappingCanFail(sink.table.mapping.columns, signal, templateCanFail)) continue;
      try {
        out.push({ sinkId: sink.sinkId, mapping: await this.opts.mappings.get(sink) });
      } catch (err) {
        log.warn({ err, sinkId: sink.sinkId }, 'sink mapping does not compile; OTLP records are not checked against it');
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
  private append(target: IngestTarget, records: IngestRecord[], log: IngestLog): Promise<ApiError | undefined> {
    const status = appendToLog(this.logAppend, target, records, log, OTLP_MESSAGES);
    // The refusal is logged by the transport (otlpErrors' refusals, the gRPC call's answer).
    if (status === 503) throw logFull();
    if (status === 429) throw sinksBehind();
    if (status === 202) return ACKNOWLEDGED;
    return status.then((s) => (s === 503 ? logFull() : undefined));
  }
}

/** What the acknowledgement point logs for OTLP requests (a refusal is logged by the transport). */
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
