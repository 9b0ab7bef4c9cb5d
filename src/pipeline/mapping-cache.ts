import type { Column, Sink } from '../model/definition.js';
import { compileMapping, type CompiledMapping } from './columns/index.js';
import type { TemplateEngine } from './template-engine.js';

/**
 * Compiled mappings per sink version (or per list of columns): a sink's columns are compiled
 * once and reused for every record until the sink changes (a new version has a new key).
 * Bounded, oldest evicted first.
 */
export class MappingCache {
  private readonly cache = new Map<string, Promise<CompiledMapping>>();

  constructor(
    private readonly engine: TemplateEngine,
    private readonly capacity = 1000,
  ) {}

  get(sink: Sink): Promise<CompiledMapping> {
    const key = `${sink.branchId}/${sink.sourceId}/${sink.sinkId}@${sink.version.number}/${sink.version.hash}`;
    return this.cached(key, sink.table.mapping.columns);
  }

  /** The columns themselves as the key: for callers that know no sink version (a file's columns). */
  forColumns(columns: readonly Column[]): Promise<CompiledMapping> {
    return this.cached(JSON.stringify(columns), columns);
  }

  private cached(key: string, columns: readonly Column[]): Promise<CompiledMapping> {
    let hit = this.cache.get(key);
    if (!hit) {
      hit = compileMapping(columns, this.engine);
      // A failed compile is not kept: the next call tries again.
      hit.catch(() => this.cache.delete(key));
      this.cache.set(key, hit);
      if (this.cache.size > this.capacity) this.cache.delete(this.cache.keys().next().value!);
    }
    return hit;
  }
}
