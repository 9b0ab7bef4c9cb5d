import type { KeySpace, MetadataReader, MetadataStore, MetadataTx } from '../ports/metadata-store.js';
import type { IngestRecord } from '../model/record.js';
import { sinkInstances } from './instances.js';
import type { MappingFailure } from '../contract/failures.js';

export interface SinkKey {
  branchId: number;
  sourceId: string;
  sinkId: string;
}

/** A record a sink could not map: kept as the API shows it (src/contract/failures.ts). */
export type { MappingFailure };

const prefix = (k: SinkKey) => `storage/mappingFailure/${k.branchId}/${k.sourceId}/${k.sinkId}/`;
/**
 * Offsets of every record the sink failed to map and that has not been written since, beyond
 * the KEPT_FAILURES kept with their raw record: a replay of "failed" records reads them from
 * the log, and `count` counts them. Entries below the log's tail are pruned (the record is gone
 * anyway), except those of kept failures (their raw record is kept: they can be reprocessed).
 */
const failedPrefix = (k: SinkKey) => `storage/mappingFailed/${k.branchId}/${k.sourceId}/${k.sinkId}/`;
/**
 * A running total older versions stored, which kept its history (records written since stayed
 * counted). No longer written: only deleted with the sink's failures (purge), and looked at to
 * find instances that have nothing else left.
 */
const legacyCountKey = (k: SinkKey) => `storage/mappingFailureCount/${k.branchId}/${k.sourceId}/${k.sinkId}`;
/**
 * Records the sink is not to map when it reaches them (their mapping stopped the process:
 * actors/stopped-mappings.ts), with the reason they are kept as failures with; removed by the
 * batch commit that keeps them, or that passes them.
 */
const parkedPrefix = (k: SinkKey) => `storage/mappingParked/${k.branchId}/${k.sourceId}/${k.sinkId}/`;
const pad = (offset: number) => String(offset).padStart(16, '0');
/** The key prefixes above without the sink part, for finding a sink's partition instances. */
const SOURCE_PREFIXES = ['storage/mappingFailure/', 'storage/mappingFailureCount/', 'storage/mappingFailed/', 'storage/mappingParked/'];
/**
 * Kept failures, failed offsets, parked records, and the running counts older versions stored
 * (no longer written, still deleted with their sink). Shared, by sink instance (one partition):
 * whichever node owns the partition next reprocesses or replays them, or goes past the parked
 * ones, and every node lists them all. Written in the background (by the sink writers and the
 * start of the runtime, not by API calls).
 */
export const MAPPING_FAILURE_KEY_SPACES: readonly KeySpace[] = SOURCE_PREFIXES.map((prefix) => ({ prefix, shared: true, background: true }));

/**
 * How many failures of one sink instance are kept with their raw record (the newest, by
 * offset); `count` covers all failed records, also those beyond.
 */
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
 * Mapping failures per sink: how many records are failed now, and the most recent KEPT_FAILURES
 * records with their reason. Written in the same transaction as the sink's batch commit, keyed
 * by offset, so a batch redone after a crash, a reprocessed or a replayed record that fails
 * again updates its entry: it neither loses nor double-counts a failure. In cluster mode
 * the keys are shared (adapters/metadata/replicated-store.ts): every node lists every
 * partition's failures, and the next owner of a partition reprocesses or replays them.
 *
 * A sink of a multi-partition topic has one writer per partition, each with its own instance id
 * (levels/instances.ts) and offsets: the writer's methods (add, remove, hasFailed,
 * failedOffsets, pruneBelow, all) take the instance's key; what is reported or purged for a
 * sink (count, recent, purge) covers all its instances.
 */
export class MappingFailures {
  constructor(private readonly store: MetadataStore) {}

  /**
   * Adds failures inside the caller's transaction. A record that failed before (same offset)
   * has its entry replaced: its newest reason and time, counted once.
   */
  add(tx: MetadataTx, sink: SinkKey, failures: MappingFailure[]): void {
    if (failures.length === 0) return;
    for (const f of failures) {
      tx.put(prefix(sink) + pad(f.offset), f);
      tx.put(failedPrefix(sink) + pad(f.offset), 1);
    }
    const kept = tx.count(prefix(sink));
    if (kept > KEPT_FAILURES) {
      for (const old of tx.list(prefix(sink), { limit: kept - KEPT_FAILURES })) tx.delete(old.key);
    }
  }

  /**
   * How many records of the sink (all its instances) are failed now: distinct records (by
   * offset) that failed their mapping and were not written since (a reprocess or replay that
   * writes a record removes it; one that fails again leaves it counted once). It covers every
   * such record that can still be written (its raw record kept here, or still in the log), also
   * beyond the KEPT_FAILURES per instance kept for `recent`: with more failed records than the
   * API lists (1000), the count is all of them and the list shows the newest 1000. With fewer,
   * every failed record is listed and the count equals the list's length.
   */
  count(sink: SinkKey): number {
    return this.instances(this.store, sink).reduce((n, i) => n + this.store.count(failedPrefix(i)), 0);
  }

  /**
   * The most recent failures of the sink (all its instances) first: each instance's newest
   * first (by offset), merged by failedAt.
   */
  recent(sink: SinkKey, limit: number): MappingFailure[] {
    const lists = this.instances(this.store, sink).map((i) => this.store.list<MappingFailure>(prefix(i)).map((e) => e.value).reverse());
    if (lists.length === 1) return lists[0].slice(0, limit);
    // A merge rather than a sort: with one instance the order is exactly the offset order above.
    const heads = lists.map(() => 0);
    const out: MappingFailure[] = [];
    while (out.length < limit) {
      let best = -1;
      for (let i = 0; i < lists.length; i++) {
        const f = lists[i][heads[i]];
        if (f !== undefined && (best < 0 || f.failedAt > lists[best][heads[best]].failedAt)) best = i;
      }
      if (best < 0) break;
      out.push(lists[best][heads[best]++]);
    }
    return out;
  }

  all(sink: SinkKey): MappingFailure[] {
    return this.store.list<MappingFailure>(prefix(sink)).map((e) => e.value);
  }

  /**
   * Removes failures that were reprocessed successfully (they are no longer counted). Only
   * what is there is deleted: in cluster mode every deletion is a change the other nodes read,
   * and a replay writes many records that never failed.
   */
  remove(tx: MetadataTx, sink: SinkKey, offsets: number[]): void {
    for (const o of offsets) {
      // Either can be gone alone: kept failures are trimmed to the newest, failed offsets pruned below the log's tail.
      for (const key of [prefix(sink) + pad(o), failedPrefix(sink) + pad(o)]) if (tx.get(key) !== undefined) tx.delete(key);
    }
  }

  /**
   * Records the sink instance is not to map when it reaches them: its batch that covers them
   * answers each as a failure with the reason given, and removes them (`unpark`) in its transaction.
   */
  park(tx: MetadataTx, sink: SinkKey, records: ReadonlyArray<{ offset: number; reason: string }>): void {
    for (const r of records) tx.put(parkedPrefix(sink) + pad(r.offset), { reason: r.reason });
  }

  /** The kept failure of the record at this offset, if any. */
  kept(sink: SinkKey, offset: number): MappingFailure | undefined {
    return this.store.get<MappingFailure>(prefix(sink) + pad(offset));
  }

  /** The parked records of the instance after `offset` (those before it are done with). */
  parked(sink: SinkKey, after: number): Array<{ offset: number; reason: string }> {
    const p = parkedPrefix(sink);
    return this.store.list<{ reason: string }>(p, after >= 0 ? { after: pad(after) } : {}).map((e) => ({ offset: Number(e.key.slice(p.length)), reason: e.value.reason }));
  }

  /** Forgets the parked records up to `through` (inclusive): the batch that covers them keeps them as failures. */
  unpark(tx: MetadataTx, sink: SinkKey, through: number): void {
    const p = parkedPrefix(sink);
    for (const e of tx.list(p)) {
      if (Number(e.key.slice(p.length)) > through) break;
      tx.delete(e.key);
    }
  }

  /** Whether the record at this offset failed to map and was not written since. */
  hasFailed(sink: SinkKey, offset: number): boolean {
    return this.store.get(failedPrefix(sink) + pad(offset)) !== undefined;
  }

  /** Offsets of failed records in [from, to], ascending, at most `limit`. */
  failedOffsets(sink: SinkKey, from: number, to: number, limit: number): number[] {
    const p = failedPrefix(sink);
    // Keys strictly after `from - 1`: from 0, no bound (offset 0 is a record too).
    const offsets = this.store.list(p, from > 0 ? { after: pad(from - 1), limit } : { limit }).map((e) => Number(e.key.slice(p.length)));
    return offsets.filter((o) => o <= to);
  }

  /**
   * Forgets failed offsets below the log's tail: their records were removed by retention. Those
   * of kept failures stay: the raw record is kept with them (they can still be reprocessed, and
   * are listed), so they stay counted too.
   */
  pruneBelow(sink: SinkKey, tailOffset: number): void {
    const old = this.failedOffsets(sink, 0, tailOffset - 1, 10_000).filter((o) => this.store.get(prefix(sink) + pad(o)) === undefined);
    if (old.length > 0) this.store.transact((tx) => old.forEach((o) => tx.delete(failedPrefix(sink) + pad(o))));
  }

  /** Forgets everything about a sink and all its instances (hard delete); given an instance id, that instance. */
  purge(sink: SinkKey): void {
    this.store.transact((tx) => {
      for (const i of this.instances(tx, sink)) {
        for (const e of tx.list(prefix(i))) tx.delete(e.key);
        for (const e of tx.list(failedPrefix(i))) tx.delete(e.key);
        for (const e of tx.list(parkedPrefix(i))) tx.delete(e.key);
        if (tx.get(legacyCountKey(i)) !== undefined) tx.delete(legacyCountKey(i));
      }
    });
  }

  /** The sink and its partition instances with level state or failures. */
  private instances(reader: MetadataReader, sink: SinkKey): SinkKey[] {
    return sinkInstances(reader, sink, SOURCE_PREFIXES);
  }
}
