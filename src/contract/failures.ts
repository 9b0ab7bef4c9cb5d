/**
 * The API contract (see stream-sources.ts for why the types are the source): records as the
 * Stream API shows them (a source's recent records, a sink's mapping failures), the replay and
 * reprocessing of a sink's records, and the test endpoint. Sluice's own endpoints.
 */
import type { Signal } from '../model/definition.js';

/** A raw record as kept and shown: the body as UTF-8 text, or base64 when it is not valid UTF-8. */
export interface RawRecord {
  receivedAt: string;
  ip: string;
  /** The senders' credential headers masked in answers. */
  headers: Record<string, string>;
  body: string;
  bodyEncoding: 'utf8' | 'base64';
  /** The OTLP signal of the record; absent for HTTP records (and failures kept before it was stored). */
  signal?: Signal | '';
}

/** A record a sink could not map, kept with its reason so it can be inspected and replayed. */
export interface MappingFailure {
  /** Offset of the record in the source topic (unique per sink: a replayed batch rewrites the same entry). */
  offset: number;
  failedAt: string;
  reason: string;
  record: RawRecord;
}

/** GET .../sinks/{sinkId}/failures: how many records are failed now, and the newest ones. */
export interface MappingFailuresAnswer {
  count: number;
  failures: MappingFailure[];
}

/** POST .../sinks/{sinkId}/failures/reprocess. */
export interface ReprocessResult {
  reprocessed: number;
  failed: number;
  /** Records the sink's filter now skips (they are handled, no longer failures); only when there are any. */
  filtered?: number;
}

/** POST .../sinks/{sinkId}/replay: the body. */
export interface ReplayBody {
  /** RFC 3339 time: records received since. */
  since: string;
  records?: 'all' | 'failed';
  fullRemap?: boolean;
}

/** The outputs of a replay task: its progress. */
export interface ReplayProgress {
  /** The offsets replayed: [fromOffset, toOffset] of the source topic (0/0 when none). */
  fromOffset: number;
  toOffset: number;
  /** Offsets of the range read so far. */
  scanned: number;
  /** Offsets of the range in all (toOffset - fromOffset + 1). */
  total: number;
  /** Written to the sink. */
  written: number;
  /** Mapped again and failed again (kept as failures). */
  failed: number;
  /** Records already handled by the sink (or filtered by its allowedSignals). */
  skipped: number;
  /** Mapped again and skipped by the sink's filter (counted as filtered); only when there are any. */
  filtered?: number;
}

/** A record of GET .../sources/{sourceId}/records, newest first. */
export interface RecentRecord extends RawRecord {
  offset: number;
  /** Only with more than one partition. */
  partition?: number;
}

/** GET .../sources/{sourceId}/records. */
export interface RecentRecordsAnswer {
  projectId: number;
  branchId: number;
  sourceId: string;
  records: RecentRecord[];
}

/** POST .../sources/{sourceId}/test: what every sink would write of the request. */
export interface TestAnswer {
  projectId: number;
  branchId: number;
  sourceId: string;
  tables: TestTable[];
}

/** One sink's part of a test answer: its row, or none and `filtered` when its filter skips the record (a Sluice addition, only then). */
export interface TestTable {
  sinkId: string;
  tableId: string;
  /** A column's value is its CSV text; null is NULL (a typed column without a value). */
  rows: { columns: { name: string; value: string | null }[] }[];
  filtered?: true;
}
