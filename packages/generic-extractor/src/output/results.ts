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
import { findData, type DataFind } from '../response/page-data.js';
import type { PageSpool } from './page-spool.js';
import { isObject, type Json, type JsonObject } from '../php.js';
import type { StoredStructure } from '../config/state.js';

/** What both JSON parsers offer (json-parser.ts: php-jsonparser 3; legacy-json-parser.ts: 2.x). */
export interface FlatteningParser {
  process(data: Json[], type: string, parentId: JsonObject | null): boolean;
  getTables(): ParsedTable[];
  load(struct: unknown): void;
  dump(): JsonObject;
}

/**
 * The parser the reference's juicer `Json` picks: a stored structure decides
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

/**
 * A page of the current JSON parser, as kept in memory until the end: one flat object (a run
 * can have many pages), the rows and the body in the spool.
 */
interface SpooledPage {
  type: string;
  parentCols: JsonObject | null;
  /** The rows made on arrival, or null; their origin (`PageRowsOrigin`) and where their CSV is. */
  table: string | null;
  header: string[];
  valueChanges: number;
  count: number;
  csvAt: number;
  csvBytes: number;
  /** Where the body is in the spool, and how the data is found in it; or the data itself when no source was given. */
  bodyAt: number;
  bodyBytes: number;
  find: DataFind | null;
  data: Json[] | null;
}

export class ResultCollector {
  readonly parser: FlatteningParser;
  /** `json_parser.structVersion` of the parser's structure (2: legacy). */
  readonly structVersion: 2 | 3;
  private readonly mappers = new Map<string, Mapper>();
  private lastHeader: string[] = [];
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
      const csv = made ? spool.append(made.csv) : { at: 0, bytes: 0 };
      // Pages of one shape share one header.
      if (made && !sameStrings(made.header, this.lastHeader)) this.lastHeader = made.header;
      const body = source ? spool.append(source.raw) : { at: 0, bytes: 0 };
      pages.push({
        type,
        parentCols,
        table: made ? made.table : null,
        header: made ? this.lastHeader : [],
        valueChanges: made ? made.valueChanges : 0,
        count: made ? made.count : 0,
        csvAt: csv.at,
        csvBytes: csv.bytes,
        bodyAt: body.at,
        bodyBytes: body.bytes,
        find: source ? source.find : null,
        data: source ? null : data,
      });
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
      if (page.table !== null && parser.pageRowsHold(page as PageRowsOrigin, page.type)) {
        await drain();
        await (files.get(page.table) as TableFile).appendCsv(spool.read({ at: page.csvAt, bytes: page.csvBytes }), page.count);
        continue;
      }
      const data = page.data ?? findData(JSON.parse(spool.read({ at: page.bodyAt, bytes: page.bodyBytes }).toString('utf8')) as Json, page.find as DataFind);
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

function sameStrings(a: readonly string[], b: readonly string[]): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}
