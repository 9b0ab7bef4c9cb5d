/**
 * Records whose mapping stopped the process: what the renderers' slots (render/inflight.ts) say
 * was being mapped when the previous process died. A template that crashes the process (a V8
 * fatal error, a heap that outgrows the machine and is killed) would otherwise be mapped again
 * by every restart, which replays the acknowledged record from the log, and die again: a crash
 * loop. Instead, at the start, before any sink maps a record:
 *
 * - records a sink was mapping in order (`stream`) are *parked*: the sink does not map them when
 *   it reaches them again, its next batch keeps each as a mapping failure (reason: the mapping
 *   stopped the process; listed, counted, reprocessable like any failure) in the transaction that
 *   moves its position past them, so the other records of the batch are written exactly once;
 * - records mapped again out of order (a reprocess or a replay) are kept as failures with that
 *   reason at once (a kept failure takes the new reason; another record is read from the log).
 *
 * A second death on the same record is impossible by construction: the record is marked before
 * its template runs, the mark is parked before anything is mapped, and a parked record is never
 * mapped by the stream. What is parked is the chunk that was being mapped (batch-render.ts): a
 * record whose template is slow is mapped about alone, one that kills at once shares its chunk
 * only with records mapped quickly just before it in its batch (at most 63); a process killed
 * for another reason (SIGKILL by an operator) parks the chunk it cut short too. Every parked
 * record can be reprocessed: it is tried in a sandbox process first (render/sandbox.ts), so
 * that a reprocess maps here only those that do not stop a process.
 *
 * Cluster mode: the slots are the node's own (node-local files); parked records and failures
 * are shared, so the node that works on the partition next, this one or another, skips them.
 */
import type { EventLog } from '../ports/event-log.js';
import type { MetadataStore } from '../ports/metadata-store.js';
import { partitionIdOf } from '../ports/event-log.js';
import { parseInstanceId } from '../levels/instances.js';
import type { SinkKey } from '../model/levels.js';
import type { SinkPositions } from '../levels/positions.js';
import type { Logger } from '../logger.js';
import { toFailureRecord, type MappingFailure, type MappingFailures } from '../levels/mapping-failures.js';
import { forget, STOPPED_PROCESS_REASON, type LeftMark } from './render/inflight.js';

export interface StoppedMappingsDeps {
  store: MetadataStore;
  positions: SinkPositions;
  failures: MappingFailures;
  eventLog: EventLog;
  logger: Logger;
  /** The topic of a source. */
  topicOf(sourceId: string): string;
}

/** How long the start waits for a record of a replay that stopped the process to be read from the log (a remote log may be away). */
const LOG_READ_TIMEOUT_MS = 30_000;

/**
 * Keeps what the marks say (see the module comment), each slot file removed once what it says is
 * kept (one that could not be is logged and stays for the next start). The records sinks were
 * mapping in order are parked before this returns: the runtime starts its writers after it.
 * Those mapped again out of order are kept in the background (the stream does not map them
 * again anyway, and reading them from a remote log can take a while): the promise resolves
 * once they are.
 */
export function parkStoppedMappings(left: { marks: readonly LeftMark[]; files: readonly string[] }, deps: StoppedMappingsDeps): Promise<void> {
  const stays = new Set<string>();
  const replays: LeftMark[] = [];
  for (const mark of left.marks) {
    if (mark.owner.mode === 'replay') {
      replays.push(mark);
      stays.add(mark.file);
    } else if (!keep(mark, () => parkStream(keyOf(mark), mark.offsets, deps), deps)) {
      stays.add(mark.file);
    }
  }
  forget(left.files.filter((f) => !stays.has(f)));
  return (async () => {
    for (const mark of replays) {
      if (keep(mark, await keepReplayed(keyOf(mark), mark.offsets, deps).catch((err: unknown) => (err instanceof Error ? err : new Error(String(err)))), deps)) forget([mark.file]);
    }
  })();
}

const keyOf = (mark: LeftMark): SinkKey => ({ branchId: mark.owner.branchId, sourceId: mark.owner.sourceId, sinkId: mark.owner.sinkId });

/** Logs what a mark's records became (or why they could not be kept); whether they were. */
function keep(mark: LeftMark, outcome: (() => number[]) | number[] | Error, deps: StoppedMappingsDeps): boolean {
  const log = deps.logger.child({ sourceId: mark.owner.sourceId, sinkId: mark.owner.sinkId });
  let kept: number[];
  try {
    if (outcome instanceof Error) throw outcome;
    kept = typeof outcome === 'function' ? outcome() : outcome;
  } catch (err) {
    log.error({ err, offsets: mark.offsets }, 'could not park the records whose mapping stopped the process: tried again at the next start');
    return false;
  }
  if (kept.length > 0) {
    log.error(
      { offsets: kept },
      'the process stopped while this sink mapped these records: they are kept as its mapping failures (reason: the mapping stopped the process) and not mapped again unless reprocessed',
    );
  }
  return true;
}

/** Records the sink was mapping in order: parked, unless the sink is already past them. */
function parkStream(key: SinkKey, offsets: readonly number[], deps: StoppedMappingsDeps): number[] {
  const committed = deps.positions.consumerOffset(key) ?? -1;
  const parked = offsets.filter((o) => o > committed);
  if (parked.length > 0) deps.store.transact((tx) => deps.failures.park(tx, key, parked.map((offset) => ({ offset, reason: STOPPED_PROCESS_REASON }))));
  return parked;
}

/** Records mapped again out of order: kept as failures now, with the reason (read from the log when not kept already). */
async function keepReplayed(key: SinkKey, offsets: readonly number[], deps: StoppedMappingsDeps): Promise<number[]> {
  const failedAt = new Date().toISOString();
  const failures: MappingFailure[] = [];
  const partitionId = partitionIdOf(deps.topicOf(key.sourceId), parseInstanceId(key.sinkId).partition);
  for (const offset of offsets) {
    const kept = deps.failures.kept(key, offset);
    if (kept) {
      failures.push({ ...kept, failedAt, reason: STOPPED_PROCESS_REASON });
      continue;
    }
    const [logged] = await withTimeout(deps.eventLog.fetch(partitionId, offset - 1, 1), LOG_READ_TIMEOUT_MS);
    if (logged?.offset === offset) failures.push({ offset, failedAt, reason: STOPPED_PROCESS_REASON, record: toFailureRecord(logged.record) });
  }
  if (failures.length > 0) deps.store.transact((tx) => deps.failures.add(tx, key, failures));
  return failures.map((f) => f.offset);
}

function withTimeout<T>(work: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`the event log did not answer within ${ms} ms`)), ms);
  });
  return Promise.race([work, timeout]).finally(() => clearTimeout(timer));
}
