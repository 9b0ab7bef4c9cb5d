/**
 * How many records each sink instance's filter skipped (pipeline/record-filter.ts): the count
 * the sink's statistics answer shows. It is added to in the metadata transaction that commits
 * the batch (or the replay) that skipped them, so a batch redone after a crash counts once,
 * and it counts from the sink's last statistics reset: a count started before the reset
 * marker reads as 0 and starts again (like the statistics archive, statistics-archive.ts).
 */
import type { KeySpace, MetadataReader, MetadataTx } from '../ports/metadata-store.js';
import type { SinkKey } from '../model/levels.js';
import { sinkInstances } from './instances.js';
import { resetMarker } from './statistics-archive.js';

const PREFIX = 'storage/filtered/';

/** A sink instance's count stays on its node, as its files do (cluster mode: each node publishes its part, cluster-statistics.ts). */
export const FILTERED_COUNT_KEY_SPACES: readonly KeySpace[] = [{ prefix: PREFIX, shared: false }];

/** The value of an instance's key. */
interface FilteredCount {
  count: number;
  /** The sink's statistics reset marker when the count started (absent: never reset). */
  reset?: string;
}

const keyOf = (instance: SinkKey) => `${PREFIX}${instance.branchId}/${instance.sourceId}/${instance.sinkId}`;

/** Adds `count` skipped records to the instance's count, inside the caller's transaction. */
export function addFilteredIn(tx: MetadataTx, instance: SinkKey, count: number): void {
  if (count <= 0) return;
  const key = keyOf(instance);
  const reset = resetMarker(tx, instance);
  const previous = tx.get<FilteredCount>(key);
  const total = previous && (previous.reset ?? '') === reset ? previous.count : 0;
  tx.put(key, reset === '' ? { count: total + count } : { count: total + count, reset });
}

/** The records a sink's filter skipped since its statistics were last reset, on this node (all its instances here). */
export function filteredCount(store: MetadataReader, sink: SinkKey): number {
  const reset = resetMarker(store, sink);
  let total = 0;
  for (const instance of sinkInstances(store, sink)) {
    const stored = store.get<FilteredCount>(keyOf(instance));
    if (stored && (stored.reset ?? '') === reset) total += stored.count;
  }
  return total;
}

/** Forgets a sink instance's count, inside the caller's transaction (the sink is purged). */
export function forgetFilteredIn(tx: MetadataTx, instance: SinkKey): void {
  tx.delete(keyOf(instance));
}
