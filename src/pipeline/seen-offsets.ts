/**
 * Which offsets of its source topic a sink has consumed, so that a replay can tell records the
 * sink already handled (written, or kept as mapping failures) from records it never saw (they
 * arrived before it was created, or while it was disabled). Pure values; stored per sink.
 *
 * A sink consumes from `openFrom` up to its committed consumer offset (the open range). When it
 * starts anew at a later offset, the open range is closed at the old consumer offset and a new
 * one begins. Replayed records that the sink never saw are marked as seen, so a second replay
 * does not write them twice.
 */
export interface SeenOffsets {
  /** Closed ranges [from, to], inclusive, sorted, not overlapping nor adjacent. */
  closed: Array<[number, number]>;
  /** First offset of the open range; it ends at the committed consumer offset. */
  openFrom: number;
}

/** What a sink that predates this bookkeeping has seen: everything up to its consumer offset. */
export const SEEN_EVERYTHING: SeenOffsets = { closed: [], openFrom: 1 };

export function isSeen(seen: SeenOffsets, offset: number, committed: number): boolean {
  if (offset >= seen.openFrom && offset <= committed) return true;
  for (const [from, to] of seen.closed) {
    if (offset < from) return false;
    if (offset <= to) return true;
  }
  return false;
}

/** Adds [from, to] to the closed ranges, merging overlapping and adjacent ones. */
export function markSeen(seen: SeenOffsets, from: number, to: number): SeenOffsets {
  if (to < from) return seen;
  const ranges = [...seen.closed, [from, to] as [number, number]].sort((a, b) => a[0] - b[0]);
  const merged: Array<[number, number]> = [];
  for (const [a, b] of ranges) {
    const last = merged[merged.length - 1];
    if (last && a <= last[1] + 1) last[1] = Math.max(last[1], b);
    else merged.push([a, b]);
  }
  return { closed: merged, openFrom: seen.openFrom };
}

/**
 * The sink starts consuming anew after `start` (created, or enabled again): what it consumed
 * so far (`openFrom`..`committed`) becomes a closed range.
 */
export function restartAt(seen: SeenOffsets | undefined, committed: number | undefined, start: number): SeenOffsets {
  if (!seen) return { closed: [], openFrom: start + 1 };
  const closed = committed !== undefined && committed >= seen.openFrom ? markSeen(seen, seen.openFrom, committed).closed : seen.closed;
  return { closed, openFrom: start + 1 };
}

/**
 * Cluster mode: the sink starts on this node after `start`, having consumed up to `previous`
 * here before (or never). Everything up to `start` counts as seen: what lies between was
 * consumed on another node.
 */
export function adoptedAt(seen: SeenOffsets | undefined, previous: number | undefined, start: number): SeenOffsets {
  const restarted = restartAt(seen ?? (previous !== undefined ? SEEN_EVERYTHING : undefined), previous, start);
  return start > (previous ?? 0) ? markSeen(restarted, (previous ?? 0) + 1, start) : restarted;
}
