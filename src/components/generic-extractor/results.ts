/**
 * Where analysed pages go: a data type with a `config.mappings` entry is mapped (mapper.ts),
 * every other type is flattened automatically (json-parser.ts), as the reference's JsonMap
 * parser does. Collects the tables of one output bucket.
 */
import { JsonParser, type ParsedTable, type ParserLogger } from './json-parser.js';
import { LegacyJsonParser } from './legacy-json-parser.js';
import { Mapper } from './mapper.js';
import { isObject, type Json, type JsonObject } from './php.js';
import type { StoredStructure } from './state.js';

/** What both JSON parsers offer (json-parser.ts: php-jsonparser 3; legacy-json-parser.ts: 2.x). */
export interface FlatteningParser {
  process(data: Json[], type: string, parentId: JsonObject | null): boolean;
  getTables(): ParsedTable[];
  load(struct: unknown): void;
  dump(): JsonObject;
}

/**
 * The parser the reference's juicer `Json` picks (reference §10.8): a stored structure decides
 * (version 2: legacy, loaded; version 3: current, loaded, a requested legacy parser is ignored);
 * without one, `compatLevel` 1 or less asks for the legacy parser.
 */
export function chooseParser(
  compatLevel: number,
  stored: StoredStructure | undefined,
  logger: ParserLogger,
): { parser: FlatteningParser; structVersion: 2 | 3 } {
  const legacy = stored ? stored.version === 2 : compatLevel <= 1;
  if (stored && legacy) logger.warning('Using legacy JSON parser, because it is in configuration state.');
  else if (stored && compatLevel <= 1) logger.warning('Ignored request for legacy JSON parser, because configuration is already upgraded.');
  else if (legacy) logger.warning('Using legacy JSON parser, because it has been explicitly requested.');
  const parser: FlatteningParser = legacy ? new LegacyJsonParser(logger) : new JsonParser(logger);
  if (stored) parser.load(stored.struct);
  return { parser, structVersion: legacy ? 2 : 3 };
}

export interface ResultTable {
  name: string;
  header: string[];
  rows: unknown[][];
  primaryKey: string[];
}

export class ResultCollector {
  readonly parser: FlatteningParser;
  /** `json_parser.structVersion` of the parser's structure (2: legacy). */
  readonly structVersion: 2 | 3;
  private readonly mappers = new Map<string, Mapper>();

  constructor(logger: ParserLogger, mappings: JsonObject | null, compatLevel = 3, stored?: StoredStructure) {
    ({ parser: this.parser, structVersion: this.structVersion } = chooseParser(compatLevel, stored, logger));
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
