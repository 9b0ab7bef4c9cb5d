/**
 * A sink writer's replay: records mapped again with the sink's current mapping, out of the
 * log's order (kept failures, or a replay from the log). What maps is written to the open
 * slice, what fails is kept as a failure again, in one metadata transaction; the sink's
 * consumer offset stays where it is (replayed rows carry old offsets).
 */
import type { LoggedRecord } from '../../ports/event-log.js';
import type { MetadataStore } from '../../ports/metadata-store.js';
import type { FilesRepository } from '../../levels/files-repository.js';
import type { SinkKey } from '../../model/levels.js';
import type { SinkPositions } from '../../levels/positions.js';
import type { Column, MappingFilter } from '../../model/definition.js';
import { addFilteredIn } from '../../levels/filtered-counts.js';
import type { RenderFailure } from '../../pipeline/batch-render.js';
import type { MappingFailure, MappingFailures } from '../../levels/mapping-failures.js';
import { isStoppedReason } from '../render/inflight.js';
import type { RecordProber, RecordRenderer, RenderJob } from '../render/renderer.js';
import type { SinkWriterEvents } from './events.js';
import { failuresOf, receivedAtIso } from './rendered-batch.js';
import type { WritingFile } from './writing-file.js';

/** What a replay works with: the writer's stores, its open file, and the sink as it is now. */
export interface ReplayContext {
  store: MetadataStore;
  files: FilesRepository;
  positions: SinkPositions;
  failures: MappingFailures;
  renderer: RecordRenderer;
  prober?: RecordProber;
  writing: WritingFile;
  /** The writer's instance. */
  key: SinkKey;
  /** The sink's mapping now (the open file may have been opened with an older one). */
  columns: Column[];
  filter?: MappingFilter;
  committedOffset: number;
  events: SinkWriterEvents;
}

/** What a replay wrote and kept, for the writer's report and its caller's answer. */
export interface ReplayWritten {
  written: number;
  /** The failures kept; `renderFailures[i]` is the renderer's failure of `failed[i]`. */
  failed: MappingFailure[];
  renderFailures: RenderFailure[];
  /** Records the sink's filter skipped (handled: no longer failures, counted as filtered). */
  filtered: number;
}

/**
 * `markSeen` records, in the same transaction, that the sink has now handled that range of
 * offsets it had never consumed, so a second replay does not write them twice.
 */
export async function writeReplayed(ctx: ReplayContext, records: readonly LoggedRecord[], markSeenRange?: [number, number]): Promise<ReplayWritten> {
  const { writing } = ctx;
  await writing.open();
  // The mapping of the sink as it is now (the file may have been opened with an older one).
  const mappingOf = (m: { columns: Column[]; filter?: MappingFilter }) => JSON.stringify([m.columns, m.filter]);
  if (mappingOf(writing.file!) !== mappingOf(ctx)) await writing.rotateFile();
  // Every record given is rendered: the caller chose them (old offsets, any signal it accepts).
  // Apart from the sinks that keep up; marked as a replay (a death keeps them as stopped failures).
  const file = writing.file!;
  const job: RenderJob = { columns: file.columns, ...(file.filter ? { filter: file.filter } : {}), after: -Infinity, owner: { ...ctx.key, mode: 'replay' } };
  const parked = await stillStopping(ctx, records, job);
  const [rendered] = await ctx.renderer.render(records, [parked.length > 0 ? { ...job, parked } : job], 'apart');
  const failed = failuresOf(records, rendered);
  const notWritten = new Set(rendered.failures.map((f) => f.index));
  const filtered = rendered.filtered?.map((i) => records[i].offset) ?? [];
  for (const i of rendered.filtered ?? []) notWritten.add(i);
  const written = records.filter((_, i) => !notWritten.has(i));
  const length = rendered.count > 0 ? await writing.append(rendered.csv) : writing.slice!.uncompressedSize;
  const { store, files, positions, failures } = ctx;
  const sliceKey = writing.sliceKey;
  writing.committed(store.transact((tx) => {
    const slice = written.length === 0 ? writing.slice! : files.commitBatch(sliceKey, {
      uncompressedSize: length,
      recordsCount: written.length,
      firstRecordAt: receivedAtIso(written[0]),
      lastRecordAt: receivedAtIso(written[written.length - 1]),
      consumerOffset: ctx.committedOffset,
    });
    failures.remove(tx, ctx.key, written.map((w) => w.offset));
    // A kept failure the filter now skips is handled: no longer a failure, counted as filtered.
    if (filtered.length > 0) {
      failures.remove(tx, ctx.key, filtered);
      addFilteredIn(tx, ctx.key, filtered.length);
    }
    failures.add(tx, ctx.key, failed);
    if (markSeenRange) positions.markSeenIn(tx, ctx.key, markSeenRange);
    return slice;
  }));
  return { written: written.length, failed, renderFailures: rendered.failures, filtered: filtered.length };
}

/**
 * Of the records given, those kept as failures because their mapping stopped the process (or
 * a render worker), tried in the sandbox first: those that end it again are answered as
 * failures again, parked, so that a reprocess never maps in this process a record that would
 * stop it (without a sandbox, none of them is mapped).
 */
async function stillStopping(ctx: ReplayContext, records: readonly LoggedRecord[], job: RenderJob): Promise<Array<{ offset: number; reason: string }>> {
  const stopped = records.flatMap((r) => {
    const reason = ctx.failures.kept(ctx.key, r.offset)?.reason;
    return isStoppedReason(reason) ? [{ record: r, reason: reason! }] : [];
  });
  if (stopped.length === 0) return [];
  if (!ctx.prober) return stopped.map((s) => ({ offset: s.record.offset, reason: s.reason }));
  const parked = await ctx.prober.probe(stopped.map((s) => s.record), job);
  ctx.events.triedApart(stopped.length, parked.length);
  return parked;
}
