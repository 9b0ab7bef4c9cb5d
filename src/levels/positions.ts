/**
 * Where each sink instance stands in its source topic on this node: its committed consumer
 * offset (the `offset` keys: the last log offset it has processed) and the offsets it has seen
 * (the `seen` keys: what a replay skips unless it failed). A batch moves the consumer offset in
 * the transaction that commits its slice (files-repository.ts commitBatch, through
 * setConsumerOffsetIn); a replay marks what it wrote as seen in the transaction that writes it
 * (markSeenIn).
 */
import type { KeySpace, MetadataStore, MetadataTx } from '../ports/metadata-store.js';
import { adoptedAt, markSeen, restartAt, SEEN_EVERYTHING, type SeenOffsets } from '../pipeline/seen-offsets.js';
import { levelKeys, type FileEntry, type SinkKey, type SliceEntry } from '../model/levels.js';

/** A sink instance's positions are this node's own (cluster mode: the partition's owner's). */
export const POSITION_KEY_SPACES: readonly KeySpace[] = [
  { prefix: 'storage/offset/', shared: false },
  { prefix: 'storage/seen/', shared: false },
];

export class SinkPositions {
  constructor(private readonly store: MetadataStore) {}

  /** The committed consumer offset of the sink (the last log offset it has processed). */
  consumerOffset(sink: SinkKey): number | undefined {
    return this.store.get<number>(levelKeys.offset(sink));
  }

  /** The offsets of its topic the sink has consumed (replay skips them unless they failed). */
  seenOffsets(sink: SinkKey): SeenOffsets {
    return this.store.get<SeenOffsets>(levelKeys.seen(sink)) ?? SEEN_EVERYTHING;
  }

  /**
   * The last offset through which every record the sink consumed is in the target: before the
   * first record of the oldest file not imported yet, or the consumer offset when all is
   * imported. Cluster mode commits this as the topic's group offset, the point a node taking
   * the sink over reads from.
   */
  importedThrough(sink: SinkKey): number {
    let through = this.consumerOffset(sink) ?? 0;
    const files = this.store.list<FileEntry>(levelKeys.files(sink)).map((e) => e.value);
    const pending = new Set(files.filter((f) => f.state !== 'imported').map((f) => f.openedAt));
    if (pending.size === 0) return through;
    for (const { value: slice } of this.store.list<SliceEntry>(levelKeys.sinkSlices(sink))) {
      if (pending.has(slice.fileOpenedAt) && slice.recordsCount > 0 && slice.firstOffset !== undefined) through = Math.min(through, slice.firstOffset - 1);
    }
    return through;
  }

  /**
   * The sink instances of a branch that have a position on this node (a consumer offset), in
   * key order: what a purge of deleted sinks looks at.
   */
  positionedSinks(branchId: number): SinkKey[] {
    const prefix = levelKeys.branchOffsets(branchId);
    return this.store.list(prefix).map(({ key }) => {
      const [sourceId, sinkId] = key.slice(prefix.length).split('/');
      return { branchId, sourceId, sinkId };
    });
  }

  /**
   * The sink (re)starts consuming after `start` on this node (created, enabled again, or
   * started with its peers): what it consumed so far becomes seen (restartAt). A sink that
   * has an offset but no seen offsets (older than replay) counts everything as seen.
   */
  startAnewAt(sink: SinkKey, start: number): void {
    const committed = this.consumerOffset(sink);
    const seen = this.store.get<SeenOffsets>(levelKeys.seen(sink)) ?? (committed !== undefined ? SEEN_EVERYTHING : undefined);
    this.store.transact((tx) => {
      tx.put(levelKeys.offset(sink), start);
      tx.put(levelKeys.seen(sink), restartAt(seen, committed, start));
    });
  }

  /**
   * Cluster mode: the sink starts on this node after `start`, having consumed up to
   * `previous` here before (or never); everything up to `start` counts as seen (adoptedAt).
   */
  adoptAt(sink: SinkKey, start: number, previous: number | undefined): void {
    const seen = this.store.get<SeenOffsets>(levelKeys.seen(sink));
    this.store.transact((tx) => {
      tx.put(levelKeys.offset(sink), start);
      tx.put(levelKeys.seen(sink), adoptedAt(seen, previous, start));
    });
  }

  /** Sets the consumer offset when the sink has none yet (where a new sink starts); returns the offset in force. */
  seedConsumerOffset(sink: SinkKey, offset: number): number {
    return this.store.transact((tx) => {
      const current = tx.get<number>(levelKeys.offset(sink));
      if (current !== undefined) return current;
      tx.put(levelKeys.offset(sink), offset);
      return offset;
    });
  }

  /**
   * Inside the caller's transaction (a replay's write): the sink has now handled the offsets
   * [from, to] it had never consumed, so that a second replay does not write them twice.
   */
  markSeenIn(tx: MetadataTx, sink: SinkKey, [from, to]: [number, number]): void {
    tx.put(levelKeys.seen(sink), markSeen(this.seenOffsets(sink), from, to));
  }
}

/** The consumer offset as the caller's transaction sees it (a batch's commit checks it). */
export function consumerOffsetIn(tx: MetadataTx, sink: SinkKey): number | undefined {
  return tx.get<number>(levelKeys.offset(sink));
}

/** Moves the consumer offset inside the caller's transaction (the one that commits the batch's slice). */
export function setConsumerOffsetIn(tx: MetadataTx, sink: SinkKey, offset: number): void {
  tx.put(levelKeys.offset(sink), offset);
}

/** Forgets a sink instance's positions inside the caller's transaction (the sink is purged). */
export function forgetPositionsIn(tx: MetadataTx, instance: SinkKey): void {
  tx.delete(levelKeys.offset(instance));
  tx.delete(levelKeys.seen(instance));
}
