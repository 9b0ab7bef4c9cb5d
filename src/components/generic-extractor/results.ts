/**
 * Where analysed pages go: a data type with a `config.mappings` entry is mapped (mapper.ts),
 * every other type is flattened automatically (json-parser.ts), as the reference's JsonMap
 * parser does. Collects the tables of one output bucket.
 *
 * With a spool (page-spool.ts) the current JSON parser's pages are not kept in memory: each
 * page's body goes to the spool, and so do its rows as CSV when they can be worked out on
 * arrival (`JsonParser.pageRows`). At the end the pages are replayed in arrival order: rows that
 * still hold are copied from the spool, the other pages are read back and parsed, as the
 * reference does with all of them (every table's header is the union of all pages).
 */
import { JsonParser, type PageRowsOrigin, type ParsedTable, type ParserLogger } from './json-parser.js';
import { LegacyJsonParser } from './legacy-json-parser.js';
import { Mapper } from './mapper.js';
import { TableFile, type WrittenTable } from './output.js';
import { findData, type DataFind } from './page-data.js';
import type { PageSpool, SpoolRange } from './page-spool.js';
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
  retain = true,
): { parser: FlatteningParser; structVersion: 2 | 3 } {
  const legacy = stored ? stored.version === 2 : compatLevel <= 1;
  if (stored && legacy) logger.warning('Using legacy JSON parser, because it is in configuration state.');
  else if (stored && compatLevel <= 1) logger.warning('Ignored request for legacy JSON parser, because configuration is already upgraded.');
  else if (legacy) logger.warning('Using legacy JSON parser, because it has been explicitly requested.');
  const parser: FlatteningParser = legacy ? new LegacyJsonParser(logger) : new JsonParser(logger, retain);
  if (stored) parser.load(stored.struct);
  return { parser, structVersion: legacy ? 2 : 3 };
}

export interface ResultTable {
  name: string;
  header: string[];
  rows: unknown[][];
  primaryKey: string[];
}

/** Where a page's data came from: the response body's bytes and how the data is found in it. */
export interface PageSource {
  /** Bytes whose UTF-8 text is the JSON of the response body. */
  raw: Buffer;
  find: DataFind;
}

/** A page of the current JSON parser, as kept until the end. */
interface SpooledPage {
  type: string;
  parentCols: JsonObject | null;
  /** The rows made on arrival (without their values, which are in `csv`). */
  rows: (PageRowsOrigin & { count: number; csv: SpoolRange }) | null;
  /** The body in the spool, or the data itself when no source was given. */
  body: { range: SpoolRange; find: DataFind } | Json[];
}

export class ResultCollector {
  readonly parser: FlatteningParser;
  /** `json_parser.structVersion` of the parser's structure (2: legacy). */
  readonly structVersion: 2 | 3;
  private readonly mappers = new Map<string, Mapper>();
  /** The current parser's pages when a spool keeps them (else the parser keeps them). */
  private readonly pages: SpooledPage[] | null;

  constructor(
    logger: ParserLogger,
    mappings: JsonObject | null,
    compatLevel = 3,
    stored?: StoredStructure,
    private readonly spool?: PageSpool,
  ) {
    ({ parser: this.parser, structVersion: this.structVersion } = chooseParser(compatLevel, stored, logger, !spool));
    // The legacy parser keeps its pages itself.
    this.pages = spool && this.parser instanceof JsonParser ? [] : null;
    for (const [type, mapping] of Object.entries(mappings ?? {})) {
      if (isObject(mapping)) this.mappers.set(type, new Mapper(mapping, type));
    }
  }

  /** Returns false when the page held no data (nothing stored). */
  process(data: Json[], type: string, parentCols: JsonObject | null, source?: PageSource): boolean {
    const mapper = this.mappers.get(type);
    if (mapper) {
      mapper.parse(data, parentCols ?? {});
      return data.length > 0;
    }
    const { parser, pages, spool } = this;
    if (!parser.process(data, type, parentCols)) return false;
    if (pages && spool && parser instanceof JsonParser) {
      const made = parser.pageCsv(data, type, parentCols);
      let rows: SpooledPage['rows'] = null;
      if (made) {
        const { csv, ...rest } = made;
        rows = { ...rest, csv: spool.append(csv) };
      }
      pages.push({ type, parentCols, rows, body: source ? { range: spool.append(source.raw), find: source.find } : data });
    }
    return true;
  }

  /**
   * Writes every table of this bucket with its manifest (mapped tables first, then the
   * flattened ones in the order they were created). Call once, at the end.
   */
  async write(outDir: string, bucket: string, incremental: boolean): Promise<WrittenTable[]> {
    const written: WrittenTable[] = [];
    for (const table of this.mappedTables()) {
      const file = await TableFile.create(outDir, bucket, table.name, table.header);
      await file.appendRows(table.rows);
      written.push(await file.finish(bucket, incremental, table.primaryKey));
    }
    const { pages, spool, parser } = this;
    if (!pages || !spool || !(parser instanceof JsonParser)) {
      for (const table of parser.getTables()) {
        const file = await TableFile.create(outDir, bucket, table.name, table.header);
        await file.appendRows(table.rows);
        written.push(await file.finish(bucket, incremental));
      }
      return written;
    }
    const files = new Map<string, TableFile>();
    /** Opens the tables created so far and moves their parsed rows to the files. */
    const drain = async (): Promise<void> => {
      for (const [name, table] of parser.tablesSoFar()) {
        let file = files.get(name);
        if (!file) files.set(name, (file = await TableFile.create(outDir, bucket, name, table.header)));
        if (table.rows.length > 0) await file.appendRows(parser.takeRows(name));
      }
    };
    for (let i = 0; i < pages.length; i++) {
      const page = pages[i];
      // Let the pages read go (a run can have many).
      (pages as (SpooledPage | undefined)[])[i] = undefined;
      if (page.rows && parser.pageRowsHold(page.rows, page.type)) {
        await drain();
        await (files.get(page.rows.table) as TableFile).appendCsv(spool.read(page.rows.csv), page.rows.count);
        continue;
      }
      const data = Array.isArray(page.body) ? page.body : findData(JSON.parse(spool.read(page.body.range).toString('utf8')) as Json, page.body.find);
      parser.parseBatch(data, page.type, page.parentCols);
      await drain();
    }
    for (const file of files.values()) written.push(await file.finish(bucket, incremental));
    return written;
  }

  private mappedTables(): ResultTable[] {
    const out: ResultTable[] = [];
    for (const m of this.mappers.values()) out.push(...m.tables());
    return out;
  }

  /** All tables, in memory (without a spool); call once, at the end (the JSON parser writes its rows then). */
  tables(): ResultTable[] {
    const out = this.mappedTables();
    for (const t of this.parser.getTables()) out.push({ ...t, primaryKey: [] });
    return out;
  }
}
