/**
 * A micro-batch of records through the mappings of every sink that reads it, at once: one
 * RecordContext per record (the body parsed at most once, shared by all sinks), one CSV text
 * per sink. Pure and thread-agnostic: the render worker runs it off the event loop, tests and
 * replays may run it in place (actors/render).
 */
import { acceptsSignal, type Column, type MappingFilter, type Signal } from '../model/definition.js';
import { createRecordContext, MappingError, type MappingErrorKind, type MappedRow } from './columns/index.js';
import { csvRows } from './csv-rows.js';
import { MappingCache } from './mapping-cache.js';
import { FilterError } from './record-filter.js';
import { FILTERED, type Filtered, type RowMapping } from './row-mapping.js';
import type { IngestRecord } from '../model/record.js';
import type { RecordContext, TemplateEngine } from './template-engine.js';

/** What one sink asks of a batch. */
export interface RenderJob {
  /** The columns of the sink's open file. */
  columns: readonly Column[];
  /** The filter of the sink's open file (record-filter.ts): records it returns false for are skipped. */
  filter?: MappingFilter;
  /** Only records with a greater offset are rendered (the sink committed the others). */
  after: number;
  /** The sink's signal filter (none: every signal). */
  allowedSignals?: readonly Signal[];
  /** Whose rows these are: named in the in-flight mark while its templates run (RenderGuard). */
  owner?: RenderOwner;
  /**
   * Records not to map at all (their mapping stopped the process or the render worker before):
   * each is answered as a failure with its reason, so that it is kept as one and the sink goes past it.
   */
  parked?: readonly ParkedRecord[];
  /**
   * How long (ms) this job may map each BUDGET_RECORDS records of the batch in one call (a
   * batch of 5 000 records has five times the budget): after the part that crosses it, the rest
   * of the batch is left (`RenderedRows.cutAt`) for a later call, so that one slow mapping cannot
   * hold the other sinks rendered with it. None: the whole batch.
   */
  budgetMs?: number;
}

/** The sink instance a job renders for (the in-flight mark names it). */
export interface RenderOwner {
  branchId: number;
  sourceId: string;
  /** The sink's instance id (levels/instances.ts: `<sinkId>#<partition>` beyond partition 0, so it names the partition too). */
  sinkId: string;
  /** `stream`: records after the sink's position; `replay`: records mapped again out of order (reprocess, replay). */
  mode: 'stream' | 'replay';
}

/** A record a job does not map, and the failure it is reported with. */
export interface ParkedRecord {
  offset: number;
  reason: string;
}

/**
 * Where the renderer says which records it is mapping right now, so that a death while they
 * map (a crash, an OOM kill, a V8 fatal error) is known to the next start, which does not map
 * them again (actors/render/inflight.ts). Called only around template columns (the built-in
 * columns do bounded work per record), once per chunk of records, not per record.
 */
export interface RenderGuard {
  /** The records about to be mapped for `owner` (written where a process death does not erase it). */
  enter(owner: RenderOwner, offsets: readonly number[]): void;
  /** They were mapped: nothing is in flight. */
  leave(): void;
}

/** What one sink gets back. */
export interface RenderedRows {
  /** The rows of the records written, as CSV in UTF-8 (csv-rows.ts). */
  csv: Uint8Array;
  /** How many records were written, and the batch indexes of the first and the last. */
  count: number;
  firstIndex: number;
  lastIndex: number;
  /** Records the mapping could not render, by batch index, with the reason. */
  failures: RenderFailure[];
  /** Records the job's filter skipped, by batch index (set only for a job with a filter). */
  filtered?: number[];
  /** Set when the columns do not compile (a template the engine refuses): nothing was rendered. */
  error?: string;
  /**
   * Set when the job's budget ran out: the batch index of the first record not rendered; it and
   * the records after it are left for a later call (the rows and failures cover those before it).
   */
  cutAt?: number;
}

/** A record the mapping could not render. */
export interface RenderFailure {
  index: number;
  /** The message a user reads, naming the column: `Invalid value for column "x": path "a.b" not found in the body.` */
  reason: string;
  /** The column that failed, when the mapping knows it (for logs, which show it apart). */
  column?: string;
  /**
   * What kind of failure it is (columns/errors.ts; `stopped`: a parked record; `filter`: the
   * sink's filter failed or did not answer a boolean): for the metrics' bounded reason label.
   */
  kind?: MappingErrorKind | 'stopped' | 'filter';
}

export interface BatchRecord {
  offset: number;
  record: IngestRecord;
}

const encoder = new TextEncoder();
/** Compiled mappings kept (by their columns): a sink's mapping changes rarely. */
const CACHED_MAPPINGS = 100;
/**
 * Records are mapped in chunks, each one mark of the guard and one look at the budget: a job's
 * first chunk is one record, and a chunk grows fourfold while chunks take less than
 * CHUNK_FAST_MS, up to MAX_CHUNK records, and halves otherwise. A slow template maps about one
 * record per chunk (a death parks it nearly alone, the budget is checked after each); a quick
 * one pays for its marks about once per MAX_CHUNK records; a record that kills at once shares
 * its chunk only with records mapped quickly just before it in the same batch.
 */
const MAX_CHUNK = 64;
const CHUNK_GROWTH = 4;
const CHUNK_FAST_MS = 2;
/** The records a job's `budgetMs` is for: a larger batch gets a budget in proportion. */
export const BUDGET_RECORDS = 1000;
/**
 * A batch is mapped a slice of this many records at a time, every job on one slice before the
 * next: the records' contexts (bodies, parsed values) then die young, in the scavenger, instead
 * of living through the whole batch into the old generation. Measured on the e2e bench's
 * records (five path columns and a template): 6.4 µs a record in slices of 250, 10.1 in one
 * slice of 4 000 with the whole trees parsed, most of the difference garbage collection.
 */
const SLICE_RECORDS = 256;

/** One job's progress through a batch. */
interface JobRun {
  readonly job: RenderJob;
  readonly mapping?: RowMapping;
  readonly parked?: ReadonlyMap<number, string>;
  readonly result: RenderedRows;
  /** The rows' CSV, a part per slice. */
  readonly csvParts: Uint8Array[];
  /** The job's time budget for the whole batch (ms), and what it has spent of it. */
  readonly budgetMs?: number;
  spentMs: number;
  /** The next guard chunk's size (see MAX_CHUNK). */
  chunkSize: number;
  /** Cut short by its budget, or its mapping does not compile: nothing more to render. */
  finished: boolean;
}

export class BatchRenderer {
  private readonly mappings: MappingCache;

  constructor(
    engine: TemplateEngine,
    private readonly guard?: RenderGuard,
  ) {
    this.mappings = new MappingCache(engine, CACHED_MAPPINGS);
  }

  async render(records: readonly BatchRecord[], jobs: readonly RenderJob[]): Promise<RenderedRows[]> {
    const runs: JobRun[] = [];
    for (const job of jobs) runs.push(await this.start(records, job));
    for (let from = 0; from < records.length; from += SLICE_RECORDS) {
      const to = Math.min(records.length, from + SLICE_RECORDS);
      // Built lazily: a record no job takes is never decoded or parsed.
      const contexts = new Array<RecordContext | undefined>(to - from);
      const contextOf = (i: number): RecordContext => (contexts[i - from] ??= createRecordContext(records[i].record));
      for (const run of runs) if (!run.finished) await this.renderSlice(records, from, to, run, contextOf);
    }
    return runs.map(finish);
  }

  private async start(records: readonly BatchRecord[], job: RenderJob): Promise<JobRun> {
    const result: RenderedRows = { csv: new Uint8Array(0), count: 0, firstIndex: -1, lastIndex: -1, failures: [], ...(job.filter ? { filtered: [] } : {}) };
    const run = { job, result, csvParts: [], spentMs: 0, chunkSize: 1, finished: false };
    let mapping: RowMapping;
    try {
      mapping = await this.mappings.forColumns(job.columns, job.filter);
    } catch (err) {
      return { ...run, result: { ...result, error: err instanceof Error ? err.message : String(err) }, finished: true };
    }
    const parked = job.parked && job.parked.length > 0 ? new Map(job.parked.map((p) => [p.offset, p.reason])) : undefined;
    let budgetMs: number | undefined;
    if (job.budgetMs !== undefined) {
      let taken = 0;
      for (const r of records) if (takes(job, r)) taken++;
      budgetMs = job.budgetMs * Math.max(1, taken / BUDGET_RECORDS);
    }
    return { ...run, mapping, parked, budgetMs };
  }

  /** The job's records among records[from, to): its rows, its failures, or its cut. */
  private async renderSlice(
    records: readonly BatchRecord[],
    from: number,
    to: number,
    run: JobRun,
    contextOf: (i: number) => RecordContext,
  ): Promise<void> {
    const { job, result, parked } = run;
    const chosen: number[] = [];
    for (let i = from; i < to; i++) {
      if (!takes(job, records[i])) continue;
      const reason = parked?.get(records[i].offset);
      if (reason !== undefined) {
        result.failures.push({ index: i, reason, kind: 'stopped' });
        continue;
      }
      chosen.push(i);
    }
    if (chosen.length === 0) return;
    const rendered = await this.renderChunks(records, chosen, run, contextOf);
    if (rendered.length < chosen.length) {
      // Cut short: what comes from the cut on (parked records too) is answered by a later call.
      const cutAt = chosen[rendered.length];
      result.cutAt = cutAt;
      run.finished = true;
      if (parked) result.failures = result.failures.filter((f) => f.index < cutAt);
    }
    const rows: MappedRow[] = [];
    rendered.forEach((row, k) => {
      const index = chosen[k];
      if (row === FILTERED) {
        result.filtered!.push(index);
        return;
      }
      if (row instanceof MappingError) {
        const kind = row instanceof FilterError ? 'filter' : row.kind;
        result.failures.push({ index, reason: row.message, ...(row.column ? { column: row.column } : {}), kind });
        return;
      }
      rows.push(row);
      if (result.firstIndex < 0) result.firstIndex = index;
      result.lastIndex = index;
    });
    result.count += rows.length;
    if (rows.length > 0) run.csvParts.push(encoder.encode(csvRows(rows, run.mapping!.quotedEmpty)));
  }

  /**
   * The chosen records through the mapping, chunk by chunk (see MAX_CHUNK): template columns
   * and filters (both run Jsonnet) under the guard's mark when the job names its owner, and
   * until the job's budget is spent (fewer rows than `chosen` then: the rest is left). A
   * mapping of built-in columns only does bounded work per record, and maps the whole batch at once.
   */
  private async renderChunks(
    records: readonly BatchRecord[],
    chosen: readonly number[],
    run: JobRun,
    contextOf: (i: number) => RecordContext,
  ): Promise<Array<MappedRow | Filtered | MappingError>> {
    const mapping = run.mapping!;
    if (mapping.isSync) return mapping.renderMany(chosen.map(contextOf));
    const owner = run.job.owner;
    const guard = owner && this.guard;
    const started = performance.now();
    const out: Array<MappedRow | Filtered | MappingError> = [];
    try {
      while (out.length < chosen.length) {
        const part = chosen.slice(out.length, out.length + run.chunkSize);
        const t0 = performance.now();
        // The engine evaluates within the call (TemplateEngine): the mark covers that work. It
        // stays until the next chunk's mark replaces it or the job ends (one write a chunk, not
        // two): in between only promise continuations run, and a death there is rare enough.
        if (guard) guard.enter(owner, part.map((i) => records[i].offset));
        for (const row of await mapping.renderMany(part.map(contextOf))) out.push(row);
        const now = performance.now();
        run.chunkSize = now - t0 < CHUNK_FAST_MS ? Math.min(run.chunkSize * CHUNK_GROWTH, MAX_CHUNK) : Math.max(1, run.chunkSize >> 1);
        if (run.budgetMs !== undefined && run.spentMs + (now - started) >= run.budgetMs) break;
      }
    } finally {
      if (guard) guard.leave();
      run.spentMs += performance.now() - started;
    }
    return out;
  }
}

/** Whether the job maps (or answers as parked) the record: after its position, of its signals. */
function takes(job: RenderJob, r: BatchRecord): boolean {
  return r.offset > job.after && (!job.allowedSignals || acceptsSignal(job, r.record.signal));
}

/** The job's answer for the whole batch. */
function finish(run: JobRun): RenderedRows {
  const { result, csvParts } = run;
  // Parked records first, then the mapping's: by batch index.
  if (run.parked) result.failures.sort((a, b) => a.index - b.index);
  result.csv = csvParts.length === 1 ? csvParts[0] : concat(csvParts);
  return result;
}

/** The parts in one array with a buffer of its own (the render thread transfers it; Buffer.concat may answer a slice of a shared pool). */
function concat(parts: readonly Uint8Array[]): Uint8Array {
  let length = 0;
  for (const p of parts) length += p.length;
  const out = new Uint8Array(length);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
