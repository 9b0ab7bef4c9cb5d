/**
 * The statistics a sink keeps after retention deleted its imported files (the `statsArchive`
 * keys), and the statistics reset markers (`statsReset`) that hide what came before a reset.
 * Retention (expiry.ts) adds a deleted file's target statistics to the archive in the
 * transaction that deletes the file, so a sink's totals stay; storage/statistics.ts reads both.
 */
import type { KeySpace, MetadataTx } from '../ports/metadata-store.js';
import { parseInstanceId } from './instances.js';
import { levelKeys, type ArchivedStatistics, type SinkKey, type SliceEntry } from '../model/levels.js';
import { compact, maxIso, minIso } from './stored-values.js';

/**
 * A sink instance's archive stays on its node (each node archives what it imported); the reset
 * markers are shared (a reset on one node counts on every node).
 */
export const STATISTICS_ARCHIVE_KEY_SPACES: readonly KeySpace[] = [
  { prefix: 'storage/statsArchive/', shared: false },
  { prefix: 'storage/statsReset/', shared: true },
];

/** The sink's effective statistics reset time ('' when never reset). */
export function resetMarker(reader: { get<T>(key: string): T | undefined }, sink: SinkKey): string {
  const source = reader.get<string>(levelKeys.statsReset(sink.branchId, sink.sourceId)) ?? '';
  // A sink's marker applies to all its partition instances (`sink` may be one: retention's files).
  const own = reader.get<string>(levelKeys.statsReset(sink.branchId, sink.sourceId, parseInstanceId(sink.sinkId).sinkId)) ?? '';
  return source > own ? source : own;
}

/** Adds the slices of an imported file that retention deletes to the sink's archive, inside the caller's transaction. */
export function archiveIn(tx: MetadataTx, sink: SinkKey, slices: SliceEntry[]): void {
  const key = levelKeys.statsArchive(sink);
  // An archive from before the sink's last statistics reset is hidden (another node may have
  // cleared it): it starts again. Files opened before the reset are hidden too.
  const reset = resetMarker(tx, sink);
  const previous = tx.get<ArchivedStatistics>(key);
  const sum: ArchivedStatistics = previous && (previous.reset ?? '') === reset ? previous : { recordsCount: 0, compressedSize: 0, uncompressedSize: 0 };
  if (reset !== '') sum.reset = reset;
  for (const s of slices) {
    if (s.recordsCount === 0 || s.fileOpenedAt <= reset) continue;
    sum.recordsCount += s.recordsCount;
    sum.compressedSize += s.compressedSize;
    sum.uncompressedSize += s.uncompressedSize;
    sum.firstRecordAt = minIso(sum.firstRecordAt, s.firstRecordAt);
    sum.lastRecordAt = maxIso(sum.lastRecordAt, s.lastRecordAt);
  }
  tx.put(key, compact(sum));
}

/** Forgets a sink instance's archive, inside the caller's transaction (the sink is purged). */
export function forgetArchiveIn(tx: MetadataTx, instance: SinkKey): void {
  tx.delete(levelKeys.statsArchive(instance));
}

/** Forgets a sink's own reset marker (kept per sink, not per instance), inside the caller's transaction. */
export function forgetResetMarkerIn(tx: MetadataTx, sink: SinkKey): void {
  tx.delete(levelKeys.statsReset(sink.branchId, sink.sourceId, sink.sinkId));
}
