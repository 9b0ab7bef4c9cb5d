import type { MetadataReader } from '../ports/metadata-store.js';
import type { Sink, Source } from '../model/definition.js';
import { readSinks, readSources } from '../definition/repository.js';
import { instanceId } from '../levels/instances.js';
import { sinkPath, type SinkKey } from '../model/levels.js';
import type { FilesRepository } from '../levels/files-repository.js';
import type { SinkPositions } from '../levels/positions.js';
import { failingKey } from './sink-health.js';

/** One writer to run: a sink on one partition of its source's topic. */
export interface WantedWriter {
  source: Source;
  sink: Sink;
  partitionId: string;
  partition: number;
}

/** What the definitions ask of this node. */
export interface DesiredWriters {
  /** The writers to run, by their sink instance's path. */
  wanted: Map<string, WantedWriter>;
  /** The paths of every sink still defined (deleted ones not yet purged for good included). */
  defined: Set<string>;
  /** Every source still defined. */
  sourceIds: Set<string>;
}

/**
 * Reconciliation: which sinks run where. A writer per enabled sink of an enabled source and
 * partition this node works on (`partitionsToWork`: its topic on a node of its own, the partitions
 * the log gave this node in cluster mode).
 */
export function desiredWriters(
  store: MetadataReader,
  branchId: number,
  partitionsToWork: (sourceId: string) => Array<{ partitionId: string; partition: number }>,
): DesiredWriters {
  const wanted = new Map<string, WantedWriter>();
  const defined = new Set<string>();
  const sourceIds = new Set<string>();
  for (const source of readSources(store, branchId)) {
    sourceIds.add(source.sourceId);
    for (const sink of readSinks(store, branchId, source.sourceId)) {
      defined.add(sinkPath(sink));
      if (!source.deleted && !sink.deleted && !sink.disabled) {
        for (const { partitionId, partition } of partitionsToWork(source.sourceId)) {
          wanted.set(sinkPath({ ...sink, sinkId: instanceId(sink.sinkId, partition) }), { source, sink, partitionId, partition });
        }
      }
    }
  }
  return { wanted, defined, sourceIds };
}

/**
 * Where a sink starts reading its source. A sink that stopped with a writing file (the process
 * stopped) resumes after its committed offset. A sink that starts anew, or again after being
 * disabled, takes what arrives from now on, like the other enabled sinks of its source
 * (`peerOffsets`: the committed offsets of the writers running on its partition); if no sink of
 * the source was enabled, it takes everything the log kept meanwhile. A sink that was failing
 * when it stopped (disabled, or the process stopped) resumes after its committed offset in any
 * case: what it missed while failing was acknowledged and is written now. The position is
 * the sink's positions' (positions.ts startAnewAt).
 */
export function startOffset(store: MetadataReader, levels: { files: FilesRepository; positions: SinkPositions }, sink: Sink, partition: number, peerOffsets: readonly number[]): number {
  const key: SinkKey = { branchId: sink.branchId, sourceId: sink.sourceId, sinkId: instanceId(sink.sinkId, partition) };
  const { files, positions } = levels;
  const committed = positions.consumerOffset(key);
  if (committed !== undefined && (files.writingFile(key) || store.get(failingKey(key)) !== undefined)) return committed;
  const start = peerOffsets.length > 0
    ? Math.min(...peerOffsets)
    : Math.max(0, ...readSinks(store, sink.branchId, sink.sourceId).map((s) => positions.consumerOffset({ ...key, sinkId: instanceId(s.sinkId, partition) }) ?? 0));
  positions.startAnewAt(key, start);
  return start;
}
