/**
 * The acknowledgement point of every ingestion path (the fastify routes of HTTP records and
 * connector batches, the fast path, and OTLP): a request's records appended to the source's
 * topic as one batch, and what to answer: 200 once durable or 202 at once (by sync.wait), 503
 * with Retry-After when the log refuses them (size budget, free disk, the cluster's broker) or
 * the durable write fails. Nothing is acknowledged that is not kept.
 */
import type { IncomingMessage } from 'node:http';
import type { BacklogGate } from '../../actors/backlog-gate.js';
import { EventLogFullError, sourceTopic, type AppendResult, type EventLog } from '../../ports/event-log.js';
import { normalizeIp } from '../../pipeline/columns/ip.js';
import { bodyFormat } from '../../pipeline/columns/record-context.js';
import { headersFromRaw } from '../../pipeline/headers.js';
import type { IngestRecord } from '../../model/record.js';
import { needsSyncWait } from './admission.js';
import type { IngestTarget } from './sources.js';

/** What the append step logs through (a fastify request's logger, or the service's). */
export interface AppendLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** What an ingestion path logs when the log refuses or loses its records (constants: no allocation per request). */
export interface AppendMessages {
  /** The log refused the records at once (none when the path's error handler logs the refusal). */
  full?: string;
  /** Records answered before the write was durable (sync.wait=false) whose write then failed. */
  notDurable: string;
  /** The durable write the answer waited for failed. */
  failed: string;
}

/** The messages of HTTP records and connector batches. */
export const RECORD_MESSAGES: AppendMessages = {
  full: 'event log full, records refused',
  notDurable: 'records acknowledged with 202 were not made durable',
  failed: 'durable write of the records failed, records refused',
};

/** One HTTP record: the body as received, the canonical headers, the client address. */
export function httpRecord(req: IncomingMessage, receivedAt: Date, body: Buffer, omitHeaders?: ReadonlySet<string>): IngestRecord {
  return { receivedAt, ip: normalizeIp(req.socket.remoteAddress) ?? '', headers: headersFromRaw(req.rawHeaders, omitHeaders), body, signal: '' };
}

/**
 * The records of a connector batch (POST .../batch), one per value `values` holds. The batch was
 * cut into JSON values (sources/kafka-connect/split.ts rejects a value that is not JSON), so each
 * record's body is JSON whatever the request's Content-Type says: the connectors send
 * application/json (Aiven), no Content-Type or text/plain (Confluent's is configurable, often
 * unset), and curl -d sends form encoding. Each record then says application/json, unless the
 * request's type already was a JSON type (kept as sent, parameters included): its columns parse
 * the body (Body(path), path columns) as those of a single JSON record, and its `headers` column
 * shows the type the body is read as. The request's other headers are every record's.
 */
export function batchRecords(req: IncomingMessage, receivedAt: Date, values: readonly Buffer[], omitHeaders?: ReadonlySet<string>): IngestRecord[] {
  const headers = headersFromRaw(req.rawHeaders, omitHeaders);
  if (bodyFormat(headers['Content-Type']) !== 'json') headers['Content-Type'] = 'application/json';
  const ip = normalizeIp(req.socket.remoteAddress) ?? '';
  return values.map((body) => ({ receivedAt, ip, headers, body, signal: '' }));
}

/** Where every ingestion path appends: the log, the project, and the sinks' back-pressure. */
export interface LogAppend {
  eventLog: EventLog;
  projectId: number;
  /** Refuses a source's records while its sinks are too far behind (none: never). */
  backlog?: BacklogGate;
}

/**
 * Whether the source's sinks are too far behind to take its records now: checked by
 * appendToLog, and before decoding by the paths whose decoding costs (OTLP, connector
 * batches), so that a refused request costs little of what the sinks need to catch up.
 */
export function sinksTooFarBehind(to: LogAppend, target: IngestTarget): boolean {
  return to.backlog !== undefined && to.backlog.refuses(sourceTopic(to.projectId, target.source.branchId, target.source.sourceId));
}

/**
 * 202 at once when nobody waits for durability (sync.wait=false), 429 at once when the
 * source's sinks are too far behind (backlog-gate.ts), 503 at once when the log refuses the
 * records (nothing is acknowledged either way), else a promise of 200 (durable) or 503. The
 * answer that needs no wait comes synchronously: at full load every promise hop per request
 * counts.
 */
export function appendToLog(
  to: LogAppend,
  target: IngestTarget,
  records: IngestRecord[],
  log: AppendLog,
  messages: AppendMessages = RECORD_MESSAGES,
): 202 | 429 | 503 | Promise<200 | 503> {
  const { sourceId, branchId } = target.source;
  const topic = sourceTopic(to.projectId, branchId, sourceId);
  if (to.backlog?.refuses(topic)) return 429;
  let appended: AppendResult;
  try {
    appended = to.eventLog.append(topic, records);
  } catch (err) {
    if (err instanceof EventLogFullError) {
      if (messages.full !== undefined) log.warn({ sourceId, records: records.length }, messages.full);
      return 503;
    }
    throw err;
  }
  if (!needsSyncWait(target)) {
    // Answered before the write is durable (sync.wait=false): a later failure is only logged.
    appended.durable.catch((err: unknown) => log.error({ err, sourceId, offset: appended.firstOffset }, messages.notDurable));
    return 202;
  }
  return appended.durable.then(
    () => 200 as const,
    (err: unknown) => {
      log.warn({ err, sourceId }, messages.failed);
      return 503 as const;
    },
  );
}
