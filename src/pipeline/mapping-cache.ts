import type { Column, MappingFilter, Sink } from '../model/definition.js';
import { compileMapping } from './columns/index.js';
import { compileFilter } from './record-filter.js';
import { withFilter, type RowMapping } from './row-mapping.js';
import type { TemplateEngine } from './template-engine.js';

/**
 * Compiled mappings per sink version (or per list of columns and filter): a sink's columns and
 * filter are compiled once and reused for every record until the sink changes (a new version
 * has a new key). Bounded, oldest evicted first.
 */
export class MappingCache {
  private readonly cache = new Map<string, Promise<RowMapping>>();

  constructor(
    private readonly engine: TemplateEngine,
    private readonly capacity = 1000,
  ) {}

  get(sink: Sink): Promise<RowMapping> {
    const key = `${sink.branchId}/${sink.sourceId}/${sink.sinkId}@${sink.version.number}/${sink.version.hash}`;
    return this.cached(key, sink.table.mapping.columns, sink.table.mapping.filter);
  }

  /** The columns (and filter) themselves as the key: for callers that know no sink version (a file's columns). */
  forColumns(columns: readonly Column[], filter?: MappingFilter): Promise<RowMapping> {
    return this.cached(JSON.stringify(filter ? [columns, filter] : columns), columns, filter);
  }

  private cached(key: string, columns: readonly Column[], filter: MappingFilter | undefined): Promise<RowMapping> {
    let hit = this.cache.get(key);
    if (!hit) {
      hit = this.compile(columns, filter);
      // A failed compile is not kept: the next call tries again.
      hit.catch(() => this.cache.delete(key));
      this.cache.set(key, hit);
      if (this.cache.size > this.capacity) this.cache.delete(this.cache.keys().next().value!);
    }
    return hit;
  }

  private async compile(columns: readonly Column[], filter: MappingFilter | undefined): Promise<RowMapping> {
    const [mapping, compiledFilter] = await Promise.all([
      compileMapping(columns, this.engine),
      filter ? compileFilter(filter, this.engine) : undefined,
    ]);
    return withFilter(mapping, compiledFilter);
  }
}
