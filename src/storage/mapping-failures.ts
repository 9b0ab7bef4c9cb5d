import type { MetadataStore, MetadataTx } from '../connectors/metadata/store.js';
import type { IngestRecord } from '../pipeline/record.js';

export interface SinkKey {
  branchId: number;
  sourceId: string;
  sinkId: string;
}

/** A record a sink could not map, kept with its reason so it can be inspected and replayed. */
export interface MappingFailure {
  /** Offset of the record in the source topic (unique per sink: a replayed batch rewrites the same entry). */
  offset: number;
  failedAt: string;
  reason: string;
  record: {
    receivedAt: string;
    ip: string;
    headers: Record<string, string>;
    body: string;
    bodyEncoding: 'utf8' | 'base64';
    /** The OTLP signal of the record; absent for HTTP records (and failures kept before it was stored). */
    signal?: IngestRecord['signal'];
  };
}

const prefix = (k: SinkKey) => `storage/mappingFailure/${k.branchId}/${k.sourceId}/${k.sinkId}/`;
const countKey = (k: SinkKey) => `storage/mappingFailureCount/${k.branchId}/${k.sourceId}/${k.sinkId}`;
/**
 * Offsets of every record the sink failed to map and that has not been written since, beyond
 * the KEPT_FAILURES kept with their raw record: a replay of "failed" records reads them from
 * the log. Entries below the log's tail are pruned (the record is gone anyway).
 */
const failedPrefix = (k: SinkKey) => `storage/mappingFailed/${k.branchId}/${k.sourceId}/${k.sinkId}/`;
const pad = (offset: number) => String(offset).padStart(16, '0');

/** How many failures of one sink are kept with their raw record; the count covers all. */
export const KEPT_FAILURES = 1000;

export function toFailureRecord(record: IngestRecord): MappingFailure['record'] {
  const utf8 = record.body.toString('utf8');
  const isText = Buffer.from(utf8, 'utf8').equals(record.body);
  return {
    receivedAt: record.receivedAt.toISOString(),
    ip: record.ip,
    headers: record.headers,
    body: isText ? utf8 : record.body.toString('base64'),
    bodyEncoding: isText ? 'utf8' : 'base64',
    ...(record.signal ? { signal: record.signal } : {}),
  };
}

/** The record of a kept failure; `signal` is used when the failure did not store its own. */
export function fromFailureRecord(r: MappingFailure['record'], signal: IngestRecord['signal']): IngestRecord {
  return { receivedAt: new Date(r.receivedAt), ip: r.ip, headers: r.headers, body: Buffer.from(r.body, r.bodyEncoding), signal: r.signal ?? signal };
}

/**
 * Mapping failures per sink: the total count and the most recent KEPT_FAILURES records with
 * their reason. Written in the same transaction as the sink's batch commit, keyed by offset,
 * so a batch replayed after a crash neither loses nor double-counts a failure.
 */
export class MappingFailures {
  constructor(private readonly store: MetadataStore) {}

  /** Adds failures inside the caller's transaction. */
  add(tx: MetadataTx, sink: SinkKey, failures: MappingFailure[]): void {
    if (failures.length === 0) return;
    let added = 0;
    for (const f of failures) {
      const key = prefix(sink) + pad(f.offset);
      const failedKey = failedPrefix(sink) + pad(f.offset);
      if (tx.get(failedKey) === undefined) added++;
      tx.put(key, f);
      tx.put(failedKey, 1);
    }
    tx.put(countKey(sink), (tx.get<number>(countKey(sink)) ?? 0) + added);
    const kept = tx.count(prefix(sink));
    if (kept > KEPT_FAILURES) {
      for (const old of tx.list(prefix(sink), { limit: kept - KEPT_FAILURES })) tx.delete(old.key);
    }
  }

  count(sink: SinkKey): number {
    return this.store.get<number>(countKey(sink)) ?? 0;
  }

  /** The most recent failures first. */
  recent(sink: SinkKey, limit: number): MappingFailure[] {
    return this.store.list<MappingFailure>(prefix(sink)).map((e) => e.value).reverse().slice(0, limit);
  }

  all(sink: SinkKey): MappingFailure[] {
    return this.store.list<MappingFailure>(prefix(sink)).map((e) => e.value);
  }

  /** Removes failures that were reprocessed successfully (the count keeps its history). */
  remove(tx: MetadataTx, sink: SinkKey, offsets: number[]): void {
    for (const o of offsets) {
      tx.delete(prefix(sink) + pad(o));
      tx.delete(failedPrefix(sink) + pad(o));
    }
  }

  /** Whether the record at this offset failed to map and was not written since. */
  hasFailed(sink: SinkKey, offset: number): boolean {
    return this.store.get(failedPrefix(sink) + pad(offset)) !== undefined;
  }

  /** Offsets of failed records in [from, to], ascending, at most `limit`. */
  failedOffsets(sink: SinkKey, from: number, to: number, limit: number): number[] {
    const p = failedPrefix(sink);
    const offsets = this.store.list(p, { after: pad(Math.max(0, from - 1)), limit }).map((e) => Number(e.key.slice(p.length)));
    return offsets.filter((o) => o <= to);
  }

  /** Forgets failed offsets below the log's tail: their records were removed by retention. */
  pruneBelow(sink: SinkKey, tailOffset: number): void {
    const old = this.failedOffsets(sink, 0, tailOffset - 1, 10_000);
    if (old.length > 0) this.store.transact((tx) => old.forEach((o) => tx.delete(failedPrefix(sink) + pad(o))));
  }

  /** Forgets everything about a sink (hard delete). */
  purge(sink: SinkKey): void {
    this.store.transact((tx) => {
      for (const e of tx.list(prefix(sink))) tx.delete(e.key);
      for (const e of tx.list(failedPrefix(sink))) tx.delete(e.key);
      tx.delete(countKey(sink));
    });
  }
}
