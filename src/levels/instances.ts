/**
 * Sink instances: a sink whose source topic has several partitions has one writer per partition,
 * and each keeps its level state (files, slices, offsets, open pointer, mapping failures,
 * statistics archive) under its own *instance id* in place of the sink id. The instance of
 * partition 0 is the plain sink id, so the data of single-partition sinks (all sinks before
 * partitions) is where it always was; partition p > 0 is `${sinkId}#${p}`. Sink ids never
 * contain `#`, so an instance id is unambiguous and `${sinkId}#` is a key prefix that matches the
 * sink's instances and nothing else (not sink `abc` nor `ab-x` for sink `ab`).
 *
 * What is reported per sink (statistics, failure counts) and purged per sink covers all its
 * instances; the statistics reset marker stays keyed by the plain sink id.
 */
import type { MetadataReader } from '../ports/metadata-store.js';
import type { SinkKey } from '../model/levels.js';

const SEPARATOR = '#';

/**
 * Prefixes (followed by `<branchId>/<sourceId>/<instanceId>`) of the level state an instance can
 * have. An instance with any data has a consumer offset, but the others are looked at too, so
 * that a purge also finds leftovers of an instance whose offset is gone.
 */
const LEVEL_PREFIXES = ['storage/offset/', 'storage/file/', 'storage/slice/', 'storage/seen/', 'storage/open/', 'storage/statsArchive/', 'storage/filtered/'];

/** The instance id of a sink's writer of `partition`: the plain sink id for partition 0. */
export function instanceId(sinkId: string, partition: number): string {
  if (sinkId.includes(SEPARATOR)) throw new Error(`a sink id cannot contain "${SEPARATOR}": ${sinkId}`);
  if (!Number.isSafeInteger(partition) || partition < 0) throw new Error(`invalid partition ${partition} of sink ${sinkId}`);
  return partition === 0 ? sinkId : `${sinkId}${SEPARATOR}${partition}`;
}

/** The sink and partition of an instance id (a plain sink id is partition 0). */
export function parseInstanceId(id: string): { sinkId: string; partition: number } {
  const at = id.indexOf(SEPARATOR);
  if (at < 0) return { sinkId: id, partition: 0 };
  const partition = parsePartition(id.slice(at + 1));
  if (partition === undefined) throw new Error(`invalid sink instance id: ${id}`);
  return { sinkId: id.slice(0, at), partition };
}

/**
 * The sink itself (always first, with or without data) and every `${sinkId}#p` instance with
 * any level state, by partition. `extraPrefixes` are more key prefixes laid out like the level
 * keys (`<prefix><branchId>/<sourceId>/<instanceId>...`), e.g. those of mapping failures.
 * Works inside a transaction too (pass the tx).
 */
export function sinkInstances(store: MetadataReader, sink: SinkKey, extraPrefixes: readonly string[] = []): SinkKey[] {
  const own: SinkKey = { branchId: sink.branchId, sourceId: sink.sourceId, sinkId: sink.sinkId };
  // An instance id (a writer's key) has no instances of its own.
  if (sink.sinkId.includes(SEPARATOR)) return [own];
  const partitions = new Set<number>();
  for (const p of [...LEVEL_PREFIXES, ...extraPrefixes]) {
    collectPartitions(store, `${p}${sink.branchId}/${sink.sourceId}/${sink.sinkId}${SEPARATOR}`, partitions);
  }
  return [own, ...[...partitions].sort((a, b) => a - b).map((p) => ({ ...own, sinkId: instanceId(sink.sinkId, p) }))];
}

/**
 * Adds the partitions of the instance ids right after `prefix` (`<p>` or `<p>/...`). One
 * single-key read per instance: the scan skips over each instance's keys, so a sink with
 * thousands of slices costs no more than one with a few.
 */
function collectPartitions(store: MetadataReader, prefix: string, into: Set<number>): void {
  let after: string | undefined;
  for (;;) {
    const [next] = store.list(prefix, after === undefined ? { limit: 1 } : { after, limit: 1 });
    if (!next) return;
    const rest = next.key.slice(prefix.length);
    const slash = rest.indexOf('/');
    const segment = slash < 0 ? rest : rest.slice(0, slash);
    const partition = parsePartition(segment);
    if (partition !== undefined) into.add(partition);
    // Past "<segment>" and every "<segment>/..." key (keys never contain U+FFFF); "<segment>0..."
    // (another partition, '0' > '/') is not skipped.
    after = `${segment}/\uffff`;
  }
}

/** A partition > 0 in canonical form ("2", not "02" or "0": those are no instance of ours). */
function parsePartition(text: string): number | undefined {
  if (!/^[1-9]\d*$/.test(text)) return undefined;
  const n = Number(text);
  return Number.isSafeInteger(n) ? n : undefined;
}
