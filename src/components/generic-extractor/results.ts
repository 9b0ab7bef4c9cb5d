/**
 * Where analysed pages go: a data type with a `config.mappings` entry is mapped (mapper.ts),
 * every other type is flattened automatically (json-parser.ts), as the reference's JsonMap
 * parser does. Collects the tables of one output bucket.
 */
import { JsonParser, type ParserLogger } from './json-parser.js';
import { Mapper } from './mapper.js';
import { isObject, type Json, type JsonObject } from './php.js';

export interface ResultTable {
  name: string;
  header: string[];
  rows: unknown[][];
  primaryKey: string[];
}

export class ResultCollector {
  readonly parser: JsonParser;
  private readonly mappers = new Map<string, Mapper>();

  constructor(logger: ParserLogger, mappings: JsonObject | null) {
    this.parser = new JsonParser(logger);
    for (const [type, mapping] of Object.entries(mappings ?? {})) {
      if (isObject(mapping)) this.mappers.set(type, new Mapper(mapping, type));
    }
  }

  /** Returns false when the page held no data (nothing stored). */
  process(data: Json[], type: string, parentCols: JsonObject | null): boolean {
    const mapper = this.mappers.get(type);
    if (mapper) {
      mapper.parse(data, parentCols ?? {});
      return data.length > 0;
    }
    return this.parser.process(data, type, parentCols);
  }

  /** All tables; call once, at the end (the JSON parser writes its rows then). */
  tables(): ResultTable[] {
    const out: ResultTable[] = [];
    for (const m of this.mappers.values()) out.push(...m.tables());
    for (const t of this.parser.getTables()) out.push({ ...t, primaryKey: [] });
    return out;
  }
}
