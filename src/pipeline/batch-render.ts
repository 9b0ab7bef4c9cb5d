/**
 * A micro-batch of records through the mappings of every sink that reads it, at once: one
 * RecordContext per record (the body parsed at most once, shared by all sinks), one CSV text
 * per sink. Pure and thread-agnostic: the render worker runs it off the event loop, tests and
 * replays may run it in place (actors/render).
 */
import { acceptsSignal, type Column, type Signal } from '../model/definition.js';
import { createRecordContext, MappingError, type CompiledMapping, type MappingErrorKind } from './columns/index.js';
import { csvRows } from './csv-rows.js';
import { MappingCache } from './mapping-cache.js';
import type { IngestRecord } from './record.js';
import type { RecordContext, TemplateEngine } from './template-engine.js';

/** What one sink asks of a batch. */
export interface RenderJob {
  /** The columns of the sink's open file. */
  columns: readonly Column[];
  /** Only records with a greater offset are rendered (the sink committed the others). */
  after: number;
  /** The sink's signal filter (none: every signal). */
  allowedSignals?: readonly Signal[];
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
  /** Set when the columns do not compile (a template the engine refuses): nothing was rendered. */
  error?: string;
}

/** A record the mapping could not render. */
export interface RenderFailure {
  index: number;
  /** The message a user reads, naming the column: `Invalid value for column "x": path "a.b" not found in the body.` */
  reason: string;
  /** The column that failed, when the mapping knows it (for logs, which show it apart). */
  column?: string;
  /** What kind of failure it is (columns/errors.ts): for the metrics' bounded reason label. */
  kind?: MappingErrorKind;
}

export interface BatchRecord {
  offset: number;
  record: IngestRecord;
}

const encoder = new TextEncoder();
/** Compiled mappings kept (by their columns): a sink's mapping changes rarely. */
const CACHED_MAPPINGS = 100;

export class BatchRenderer {
  private readonly mappings: MappingCache;

  constructor(engine: TemplateEngine) {
    this.mappings = new MappingCache(engine, CACHED_MAPPINGS);
  }

  async render(records: readonly BatchRecord[], jobs: readonly RenderJob[]): Promise<RenderedRows[]> {
    // Built lazily: a record no job takes is never decoded or parsed.
    const contexts = new Array<RecordContext | undefined>(records.length);
    const contextOf = (i: number): RecordContext => (contexts[i] ??= createRecordContext(records[i].record));
    const out: RenderedRows[] = [];
    for (const job of jobs) out.push(await this.renderJob(records, job, contextOf));
    return out;
  }

  private async renderJob(records: readonly BatchRecord[], job: RenderJob, contextOf: (i: number) => RecordContext): Promise<RenderedRows> {
    const result: RenderedRows = { csv: new Uint8Array(0), count: 0, firstIndex: -1, lastIndex: -1, failures: [] };
    let mapping: CompiledMapping;
    try {
      mapping = await this.mappings.forColumns(job.columns);
    } catch (err) {
      return { ...result, error: err instanceof Error ? err.message : String(err) };
    }
    const chosen: number[] = [];
    for (let i = 0; i < records.length; i++) {
      if (records[i].offset <= job.after) continue;
      if (job.allowedSignals && !acceptsSignal(job, records[i].record.signal)) continue;
      chosen.push(i);
    }
    if (chosen.length === 0) return result;
    const rendered = await mapping.renderMany(chosen.map(contextOf));
    const rows: string[][] = [];
    rendered.forEach((row, k) => {
      const index = chosen[k];
      if (row instanceof MappingError) {
        result.failures.push({ index, reason: row.message, ...(row.column ? { column: row.column } : {}), kind: row.kind });
        return;
      }
      rows.push(row);
      if (result.firstIndex < 0) result.firstIndex = index;
      result.lastIndex = index;
    });
    result.count = rows.length;
    result.csv = encoder.encode(csvRows(rows));
    return result;
  }
}
