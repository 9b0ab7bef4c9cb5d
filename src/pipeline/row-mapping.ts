/**
 * What a sink makes of a record: its filter (record-filter.ts), then its columns
 * (columns/mapping.ts). A sink without a filter is its compiled columns as they are (no wrapper,
 * no cost per record); with one, the filter decides first and only the records it keeps are
 * rendered.
 */
import type { Column } from '../model/definition.js';
import type { CompiledMapping, MappedRow } from './columns/mapping.js';
import type { MappingError } from './columns/errors.js';
import type { CompiledFilter } from './record-filter.js';
import type { RecordContext } from './template-engine.js';

/** A record the sink's filter skipped: not a row, not a failure. */
export const FILTERED = Symbol('filtered');
export type Filtered = typeof FILTERED;

/** A sink's columns, maybe behind its filter: each record's row, FILTERED, or why it failed. */
export interface RowMapping {
  readonly columns: readonly Column[];
  readonly columnNames: readonly string[];
  /** Which columns write an empty string as `""` (typed ones: an unquoted empty field is NULL); undefined: none. */
  readonly quotedEmpty: readonly boolean[] | undefined;
  /** Nothing to await (no template column, no filter): cheap enough to map a whole batch at once. */
  readonly isSync: boolean;
  /** One record: its row or FILTERED; rejects with a MappingError (a FilterError when the filter failed). */
  render(ctx: RecordContext): Promise<MappedRow | Filtered>;
  /** A batch, one answer per record, in order. */
  renderMany(ctxs: readonly RecordContext[]): Promise<Array<MappedRow | Filtered | MappingError>>;
}

/** The columns behind the filter (none: the columns themselves). */
export function withFilter(mapping: CompiledMapping, filter: CompiledFilter | undefined): RowMapping {
  return filter ? new FilteredMapping(mapping, filter) : mapping;
}

class FilteredMapping implements RowMapping {
  readonly isSync = false;

  constructor(
    private readonly mapping: CompiledMapping,
    private readonly filter: CompiledFilter,
  ) {}

  get columns(): readonly Column[] {
    return this.mapping.columns;
  }

  get columnNames(): readonly string[] {
    return this.mapping.columnNames;
  }

  get quotedEmpty(): readonly boolean[] | undefined {
    return this.mapping.quotedEmpty;
  }

  async render(ctx: RecordContext): Promise<MappedRow | Filtered> {
    const [kept] = await this.filter.testMany([ctx]);
    if (kept === false) return FILTERED;
    if (kept !== true) throw kept;
    return this.mapping.render(ctx);
  }

  async renderMany(ctxs: readonly RecordContext[]): Promise<Array<MappedRow | Filtered | MappingError>> {
    const verdicts = await this.filter.testMany(ctxs);
    const kept = ctxs.filter((_, i) => verdicts[i] === true);
    const rows = kept.length > 0 ? await this.mapping.renderMany(kept) : [];
    let k = 0;
    return verdicts.map((v) => (v === true ? rows[k++] : v === false ? FILTERED : v));
  }
}
