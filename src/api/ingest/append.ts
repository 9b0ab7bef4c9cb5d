/**
 * The acknowledgement point of every HTTP ingestion path (the fastify routes and the fast path):
 * a request's records appended to the source's topic as one batch, and what to answer.
 */
import type { IncomingMessage } from 'node:http';
import { EventLogFullError, sourceTopic, type AppendResult, type EventLog } from '../../connectors/event-log/event-log.js';
import { normalizeIp } from '../../pipeline/columns/ip.js';
import { headersFromRaw } from '../../pipeline/headers.js';
import type { IngestRecord } from '../../pipeline/record.js';
import { needsSyncWait } from './admission.js';
import type { IngestTarget } from './sources.js';

/** What the append step logs through (a fastify request's logger, or the service's). */
export interface AppendLog {
  warn(obj: object, msg: string): void;
  error(obj: object, msg: string): void;
}

/** One HTTP record: the body as received, the canonical headers, the client address. */
export function httpRecord(req: IncomingMessage, receivedAt: Date, body: Buffer): IngestRecord {
  return { receivedAt, ip: normalizeIp(req.socket.remoteAddress) ?? '', headers: headersFromRaw(req.rawHeaders), body, signal: '' };
}

/**
 * 202 at once when nobody waits for durability (sync.wait=false), 503 at once when the log
 * refuses the records (nothing is acknowledged), else a promise of 200 (durable) or 503. The
 * answer that needs no wait comes synchronously: at full load every promise hop per request
 * counts.
 */
export function appendToLog(eventLog: EventLog, projectId: number, target: IngestTarget, records: IngestRecord[], log: AppendLog): 202 | 503 | Promise<200 | 503> {
  const { sourceId, branchId } = target.source;
  let appended: AppendResult;
  try {
    appended = eventLog.append(sourceTopic(projectId, branchId, sourceId), records);
  } catch (err) {
    if (err instanceof EventLogFullError) {
      log.warn({ sourceId, records: records.length }, 'event log full, records refused');
      return 503;
    }
    throw err;
  }
  if (!needsSyncWait(target)) {
    // Answered before the write is durable (sync.wait=false): a later failure is only logged.
    appended.durable.catch((err: unknown) => log.error({ err, sourceId, offset: appended.firstOffset }, 'records acknowledged with 202 were not made durable'));
    return 202;
  }
  return appended.durable.then(
    () => 200 as const,
    (err: unknown) => {
      log.warn({ err, sourceId }, 'durable write of the records failed, records refused');
      return 503 as const;
    },
  );
}
