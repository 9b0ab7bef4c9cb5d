/**
 * Replay: re-processes a sink's records from its source's event log, from a point in time,
 * through the sink's current mapping (docs/architecture.md, "Sink writers": a record a sink
 * cannot map is kept and can be reprocessed or replayed after the mapping is fixed). Works on any EventLog adapter: it reads with `fetch`,
 * which does not move the sinks' own reading position.
 *
 * Without `fullRemap`, nothing is written twice:
 * - a record the sink consumed and wrote is skipped (it is in the table, or on its way);
 * - a record the sink consumed but failed to map is mapped again (`records: "all"` or "failed");
 * - a record the sink never consumed (it arrived before the sink existed, or while it was
 *   disabled) is mapped (`records: "all"` only), and its offset is marked as consumed in the
 *   same transaction as its rows, so a second replay skips it.
 * With `fullRemap`, every record of the range (or every failed one) is mapped and written again,
 * also those already in the table: the caller asked for duplicates.
 *
 * The range ends at the sink's consumer offset when the replay starts; later records reach the
 * sink through the normal path.
 */
import type { EventLog, LoggedRecord } from '../ports/event-log.js';
import { isSeen, type SeenOffsets } from '../pipeline/seen-offsets.js';
import type { ReprocessResult } from './sink-writer/index.js';
import type { ReplayProgress } from '../contract/failures.js';

export interface ReplayRequest {
  /** First receive time replayed. */
  since: Date;
  /** "all": the failed records and those the sink never consumed; "failed": only failed ones. */
  records: 'all' | 'failed';
  /** Write the records again even when they are already in the table. */
  fullRemap: boolean;
}

/** The replay task's outputs: the API contract's (src/contract/failures.ts). */
export type { ReplayProgress };

interface ReplayTarget {
  committedOffset: number;
  accepts(signal: string): boolean;
  replay(records: readonly LoggedRecord[], markSeen?: [number, number]): Promise<ReprocessResult>;
}

export interface ReplayDeps {
  log: EventLog;
  topic: string;
  writer: ReplayTarget;
  seen: () => SeenOffsets;
  hasFailed: (offset: number) => boolean;
  request: ReplayRequest;
  progress: (p: ReplayProgress) => void;
}

const CHUNK = 1000;

/** The first offset in [tail, upTo] whose record was received at or after `since` (upTo + 1 if none). */
async function firstOffsetSince(log: EventLog, topic: string, since: Date, tail: number, upTo: number): Promise<number> {
  let lo = tail;
  let hi = upTo + 1;
  while (lo < hi) {
    const mid = Math.floor((lo + hi) / 2);
    const [next] = await log.fetch(topic, mid - 1, 1);
    if (!next || next.offset > upTo || next.record.receivedAt >= since) hi = mid;
    else lo = next.offset + 1;
  }
  return lo;
}

export async function replaySink(deps: ReplayDeps): Promise<ReplayProgress> {
  const { log, topic, writer, request } = deps;
  const upTo = writer.committedOffset;
  const tail = await log.tailOffset(topic);
  const from = await firstOffsetSince(log, topic, request.since, tail, upTo);
  const progress: ReplayProgress = { fromOffset: 0, toOffset: 0, scanned: 0, total: 0, written: 0, failed: 0, skipped: 0 };
  if (from > upTo) return progress;
  Object.assign(progress, { fromOffset: from, toOffset: upTo, total: upTo - from + 1 });
  const seen = deps.seen();

  let after = from - 1;
  while (after < upTo) {
    const batch = (await log.fetch(topic, after, CHUNK)).filter((r) => r.offset <= upTo);
    if (batch.length === 0) break;
    after = batch[batch.length - 1].offset;
    const chosen: LoggedRecord[] = [];
    let unseenFrom = Infinity;
    let unseenTo = -Infinity;
    for (const logged of batch) {
      const { offset, record } = logged;
      const failed = deps.hasFailed(offset);
      const unseen = !isSeen(seen, offset, upTo);
      const wanted = writer.accepts(record.signal) && (request.records === 'failed'
        ? failed
        : request.fullRemap || failed || unseen);
      if (!wanted) continue;
      chosen.push(logged);
      if (unseen) {
        unseenFrom = Math.min(unseenFrom, offset);
        unseenTo = Math.max(unseenTo, offset);
      }
    }
    const result = chosen.length > 0 || unseenTo >= unseenFrom
      ? await writer.replay(chosen, unseenTo >= unseenFrom ? [unseenFrom, unseenTo] : undefined)
      : { reprocessed: 0, failed: 0 };
    // Offsets, not records: gaps (failed appends) count as scanned, so progress ends at total.
    progress.scanned = after - from + 1;
    progress.written += result.reprocessed;
    progress.failed += result.failed;
    if (result.filtered) progress.filtered = (progress.filtered ?? 0) + result.filtered;
    progress.skipped += batch.length - chosen.length;
    deps.progress({ ...progress });
  }
  return progress;
}
