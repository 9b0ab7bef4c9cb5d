/**
 * The legacy JSON → CSV flattening: keboola/php-jsonparser 2.x (`keboola-legacy/json-parser`,
 * classes Struct, Analyzer, Parser), which the reference uses with `config.compatLevel` 1 (or
 * a state whose `json_parser.structVersion` is 2), as the reference does. juicer constructs it with
 * `autoUpgradeToArray` and `nestedArrayAsJson` on and analyses every row.
 *
 * How it differs from the current parser (json-parser.ts):
 * - The structure is a flat map `type → {column → dataType}`; nested objects have their own
 *   type `users.address`, arrays their item type (`arrayOfscalar`, `arrayOfobject`); empty
 *   objects are not analysed at all.
 * - Names: each character outside `[A-Za-z0-9-]` becomes `_` (no collapsing of runs), then
 *   `_` is trimmed: the table of `user/{user-id}` is `user__user-id`, the column of `a__b`
 *   stays `a__b`. Names longer than 64 are shortened before the replacement.
 * - A header name that is already taken becomes `md5(<name before sanitising>)`. Parent columns
 *   (`JSON_parentId`, child jobs' `parent_*`, `userData`) are not renamed: their values replace
 *   a data value of the same name in the row (`array_replace`) and are written to the first
 *   column of that name; the md5-named duplicate stays empty (examples 124 and 125).
 * - Link ids are `<type>_<md5(serialize(row) . outerHash)>` with the unsanitised type
 *   (`users.tags_…`), hashed after the parent columns are injected.
 * - The parser does not set `serialize_precision`, so floats are serialised (link-id hashes,
 *   nested arrays encoded as JSON) with PHP's default -1 (shortest round-trip form), not 17.
 *
 * Pure: no I/O. Same surface as JsonParser: `process()` per page, `getTables()` once at the end.
 */
import { createHash } from 'node:crypto';
import { JsonParserError, type ParsedTable, type ParserLogger } from './json-parser.js';
import { isNumeric, isObject, isScalar, phpJsonEncode, phpSerialize, type Json, type JsonObject } from '../php.js';

const DATA_COLUMN = 'data';
/** PHP's default `serialize_precision` (-1: shortest round-trip), used by serialize/json_encode. */
const PRECISION = -1;
const VALID_TYPES = new Set(['integer', 'double', 'string', 'boolean', 'NULL', 'scalar', 'object', 'array']);

function md5(s: string): string {
  return createHash('md5').update(s, 'utf8').digest('hex');
}

/** PHP `str_word_count`: runs of letters (`'` and `-` allowed inside a word). */
function strWordCount(s: string): number {
  return (s.match(/[A-Za-z](?:[A-Za-z']|-(?=[A-Za-z'-]*[A-Za-z']))*/g) ?? []).length;
}

/**
 * `Parser::createSafeName` of php-jsonparser 2.x: a name longer than 64 bytes is shortened (an
 * acronym of its words, or its md5, then `_` and the tail from the next space or `_`), then
 * every character outside `[A-Za-z0-9-]` becomes `_` and leading/trailing `_` are trimmed.
 */
export function legacySafeName(name: string): string {
  let newName = name;
  const length = Buffer.byteLength(name, 'utf8');
  if (length > 64) {
    let short = strWordCount(name) > 1 && /\b\w/.test(name) ? (name.match(/\b\w/g) ?? []).join('') : md5(name);
    short += '_';
    const remaining = 64 - short.length;
    const from = name.length - remaining;
    // PHP `strpos(…) ?: strpos(…)`: a space, else an underscore, at or after `from`.
    let next = name.indexOf(' ', from);
    if (next <= 0) next = name.indexOf('_', from);
    newName = next < 0 ? short : short + name.slice(next);
  }
  return newName.replace(/[^A-Za-z0-9-]/g, '_').replace(/^_+|_+$/g, '');
}

/** PHP 7 loose `==` of two strings (as `in_array` compares): numeric strings compare as numbers. */
function looseEquals(a: string, b: string): boolean {
  if (a === b) return true;
  return isNumeric(a) && isNumeric(b) && !/\s$/.test(a) && !/\s$/.test(b) && Number(a) === Number(b);
}

/** `Keboola\Utils\isEmptyObject`: empty, or its first property is itself an "empty" object. */
function isEmptyObject(o: JsonObject): boolean {
  const keys = Object.keys(o);
  if (keys.length === 0) return true;
  const first = o[keys[0]];
  return isObject(first) ? isEmptyObject(first) : false;
}

/** The PHP `gettype`-based type the analyser records (strict mode off: scalars are `scalar`). */
function typeOf(v: Json): string {
  if (isScalar(v)) return 'scalar';
  if (v === null) return 'NULL';
  return Array.isArray(v) ? 'array' : 'object';
}

/** `Struct::isArrayOf`: the item type of `arrayOf<type>`, or null. */
function arrayOf(type: string): string | null {
  return type.startsWith('arrayOf') ? type.slice(7) : null;
}

/** PHP `empty()` of a stored data type string. */
function emptyType(t: string | undefined): boolean {
  return t === undefined || t === '' || t === '0';
}

/** A row being filled (`CsvRow`): column → value, in header order; a repeated name keeps its first place. */
class CsvRow {
  readonly data = new Map<string, unknown>();

  constructor(columns: string[]) {
    for (const c of columns) if (!this.data.has(c)) this.data.set(c, null);
  }

  setValue(column: string, value: unknown): void {
    if (!this.data.has(column)) {
      throw new JsonParserError(`Error assigning '${value === null || value === undefined ? '' : String(value)}' to a non-existing column '${column}'!`);
    }
    this.data.set(column, value);
  }
}

interface Batch {
  data: Json[];
  type: string;
  parentId: Record<string, Json> | null;
}

export class LegacyJsonParser {
  /** `Struct`: type → column → data type, in first-seen order. */
  private struct = new Map<string, Map<string, string>>();
  private rowsAnalyzed = new Map<string, number>();
  private headers = new Map<string, string[]>();
  private tables = new Map<string, { header: string[]; rows: unknown[][] }>();
  private batches: Batch[] = [];

  constructor(private readonly logger: ParserLogger = { warning: () => undefined }) {}

  /**
   * Analyses one page of data for `type` and stores it; returns false (nothing stored) for an
   * empty page or `[null]`-like data of a type without a known structure (NoDataException).
   */
  process(data: Json[], type: string, parentId: Record<string, Json> | null = null): boolean {
    if ((data.length === 0 || (data.length === 1 && looseNull(data[0]))) && !this.hasDefinitions(type)) return false;
    this.analyze(data, type);
    this.batches.push({ data, type, parentId });
    return true;
  }

  /** Parses all stored pages (in arrival order) into tables. Call once, at the end. */
  getTables(): ParsedTable[] {
    for (const batch of this.batches) this.parse(batch.data, batch.type, batch.parentId);
    this.batches = [];
    return [...this.tables].map(([name, t]) => ({ name, header: t.header, rows: t.rows }));
  }

  /** Seeds the structure from a previous run's state (`json_parser.struct`, version 2). */
  load(struct: unknown): void {
    if (!isObject(struct)) return;
    for (const [key, defs] of Object.entries(struct)) {
      if (!isObject(defs)) {
        throw new JsonParserError(`Invalid data definitions in '${key}'. Each key should contain an array of data types in an associative array.`);
      }
      const columns = new Map<string, string>();
      for (const [node, type] of Object.entries(defs)) {
        const item = typeof type === 'string' ? arrayOf(type) : null;
        if (typeof type !== 'string' || (!VALID_TYPES.has(type) && !(item !== null && VALID_TYPES.has(item)))) {
          const shown = typeof type === 'string' ? type : phpJsonEncode(type);
          throw new JsonParserError(`Error loading data structure definition in '${key}.${node}'! '${shown}' is not a valid data type.`);
        }
        columns.set(node, type);
      }
      this.struct.set(key, columns);
    }
  }

  /** The structure in the reference's state format (`json_parser.struct`, version 2). */
  dump(): JsonObject {
    const out: JsonObject = {};
    for (const [type, columns] of this.struct) out[type] = Object.fromEntries(columns);
    return out;
  }

  // ---------------------------------------------------------------------------------------
  // Struct

  private hasDefinitions(type: string): boolean {
    return (this.struct.get(type)?.size ?? 0) > 0;
  }

  private definitions(type: string): Map<string, string> {
    const defs = this.struct.get(type);
    if (!defs || defs.size === 0) throw new JsonParserError(`Trying to retrieve unknown definitions for '${type}'`);
    return defs;
  }

  /** `Struct::add`: a new type is stored; otherwise differing columns are updated, new ones appended. */
  private addStruct(type: string, row: Map<string, string>): void {
    const known = this.struct.get(type);
    if (!known || known.size === 0) {
      this.struct.set(type, new Map(row));
      return;
    }
    for (const [key, newType] of row) {
      const old = known.get(key);
      if (old === newType) continue;
      known.set(key, this.update(emptyType(old) ? null : (old as string), newType, `${type}.${key}`));
    }
  }

  /** `Struct::update`: the type a column keeps when a row shows another one. */
  private update(oldType: string | null, newType: string, path: string): string {
    if (oldType === null || oldType === 'NULL') return newType;
    if (newType === 'NULL' || newType === oldType) return oldType;
    const oldItem = arrayOf(oldType);
    const newItem = arrayOf(newType);
    // autoUpgradeToArray: a single value where an array is known (or the reverse) becomes an array.
    if (oldItem === newType || newType === `arrayOf${oldType}` || oldItem === 'NULL' || newItem === 'NULL') {
      if (oldItem !== null) {
        if (oldItem === 'NULL') return newItem !== null ? newType : `arrayOf${newType}`;
        return oldType;
      }
      return oldType === 'array' ? `arrayOf${newType}` : `arrayOf${oldType}`;
    }
    throw new JsonParserError(`Unhandled type change from ${phpJsonEncode(oldType)} to ${phpJsonEncode(newType)} in '${path}'`);
  }

  /** `Struct::getArrayType`: the known item type of the array `type` (`parent.child`), or null. */
  private arrayType(type: string): string | null {
    const separator = type.lastIndexOf('.');
    const parent = separator <= 0 ? type : type.slice(0, separator);
    const child = separator <= 0 ? DATA_COLUMN : type.slice(separator + 1);
    const known = this.struct.get(parent)?.get(child);
    return emptyType(known) ? null : (known as string).split('arrayOf').join('');
  }

  // ---------------------------------------------------------------------------------------
  // Analyzer

  /** `Analyzer::analyze`: the item type of the array (false when empty). */
  private analyze(data: Json[], type: string): string | false {
    if (data.length === 0) return false;
    this.rowsAnalyzed.set(type, (this.rowsAnalyzed.get(type) ?? 0) + data.length);
    let rowType = this.arrayType(type);
    for (const row of data) {
      const newType = this.analyzeRow(row, type);
      if (rowType !== null && newType !== rowType && newType !== 'NULL' && rowType !== 'NULL') {
        throw new JsonParserError(`Data array in '${type}' contains incompatible data types '${rowType}' and '${newType}'!`);
      }
      rowType = newType;
    }
    return rowType as string;
  }

  private analyzeRow(row: Json, type: string): string {
    const struct = new Map<string, string>();
    let rowType = typeOf(row);
    if (isScalar(row)) {
      struct.set(DATA_COLUMN, 'scalar');
    } else if (isObject(row)) {
      for (const [key, field] of Object.entries(row)) {
        let fieldType = typeOf(field);
        if (isObject(field)) {
          // Only assign the type if the object isn't empty
          if (isEmptyObject(field)) continue;
          this.analyzeRow(field, `${type}.${key}`);
        } else if (Array.isArray(field)) {
          const itemType = this.analyze(field, `${type}.${key}`);
          fieldType = itemType !== false ? `arrayOf${itemType}` : 'NULL';
        }
        struct.set(key, fieldType);
      }
    } else if (Array.isArray(row)) {
      this.logger.warning(`Unsupported array nesting in '${type}'! Converting to JSON string.`);
      rowType = 'scalar';
      struct.set(DATA_COLUMN, 'scalar');
    }
    this.addStruct(type, struct);
    return rowType;
  }

  // ---------------------------------------------------------------------------------------
  // Parser

  private validateParentId(parentId: Record<string, Json> | string | null): Record<string, Json> {
    if (parentId === null || parentId === '' || parentId === '0') return {};
    if (typeof parentId === 'string') return { JSON_parentId: parentId };
    const keys = Object.keys(parentId);
    if (keys.length === 0) return {};
    for (const k of keys) {
      const v = parentId[k];
      if (Array.isArray(v) ? v.length > 0 : isObject(v) && Object.keys(v).length > 0) {
        throw new JsonParserError('Error assigning parentId to a CSV file! $parentId array cannot be multidimensional.');
      }
    }
    return parentId;
  }

  private getHeader(type: string, parentCols: string[] | null): string[] {
    const header: string[] = [];
    for (const [column, dataType] of this.definitions(type)) {
      if (dataType === 'object') {
        for (const val of this.getHeader(`${type}.${column}`, null)) header.push(`${legacySafeName(column)}_${val}`);
      } else {
        header.push(column);
      }
    }
    if (parentCols && parentCols.length > 0) header.push(...parentCols);
    return this.validateHeader(header);
  }

  /** `validateHeader`: sanitised names; a name already taken becomes the md5 of the raw name. */
  private validateHeader(header: string[]): string[] {
    const out: string[] = [];
    for (const colName of header) {
      const name = legacySafeName(colName);
      out.push(out.some((taken) => looseEquals(taken, name)) ? md5(colName) : name);
    }
    return out;
  }

  private tableFor(type: string, parentCols: string[]): { header: string[]; rows: unknown[][] } {
    let header = this.headers.get(type);
    if (!header || header.length === 0) this.headers.set(type, (header = this.getHeader(type, parentCols)));
    const safeType = legacySafeName(type);
    let table = this.tables.get(safeType);
    if (!table) this.tables.set(safeType, (table = { header, rows: [] }));
    return table;
  }

  private parse(data: Json[], type: string, rawParentId: Record<string, Json> | string | null): void {
    const analyzed = this.rowsAnalyzed.get(type) ?? 0;
    if (analyzed === 0 || analyzed < data.length) this.analyze(data, type);
    const parentId = this.validateParentId(rawParentId);
    const parentCols = Object.keys(parentId);
    const table = this.tableFor(type, parentCols);
    for (const value of data) {
      let row: JsonObject;
      if (isScalar(value) || value === null) row = { [DATA_COLUMN]: value };
      else if (Array.isArray(value)) row = { [DATA_COLUMN]: phpJsonEncode(value, PRECISION) };
      else row = value;
      if (parentCols.length > 0) row = { ...row, ...parentId };
      table.rows.push([...this.parseRow(row, type, parentCols, null).data.values()]);
    }
  }

  private parseRow(row: JsonObject, type: string, parentCols: string[], outerHash: string | null): CsvRow {
    const csvRow = new CsvRow(this.getHeader(type, parentCols));
    let linkId: string | null = null;
    const arrayParentId = (): string => (linkId ??= `${type}_${md5(phpSerialize(row, PRECISION) + (outerHash ?? ''))}`);
    // array_replace(definitions, parentCols): a parent column of a data column's name takes its place.
    const columns = new Map(this.definitions(type));
    for (const c of parentCols) columns.set(c, 'string');
    for (const [column, dataType] of columns) this.parseField(row, csvRow, arrayParentId, column, dataType, type);
    return csvRow;
  }

  private parseField(
    row: JsonObject,
    csvRow: CsvRow,
    arrayParentId: () => string,
    column: string,
    dataType: string,
    type: string,
  ): void {
    const safeColumn = legacySafeName(column);
    let value = Object.prototype.hasOwnProperty.call(row, column) ? row[column] : null;
    // Missing, null or an empty array: an empty cell (objects are never empty in PHP).
    if (value === null || (Array.isArray(value) && value.length === 0)) {
      if (dataType !== 'object') csvRow.setValue(safeColumn, null);
      return;
    }
    if (dataType === 'NULL') {
      this.logger.warning(`Encountered data where 'NULL' was expected from previous analysis (type '${type}')`);
      csvRow.setValue(column, phpJsonEncode(row, PRECISION));
      return;
    }
    if (arrayOf(dataType) !== null) {
      if (!Array.isArray(value)) value = [value];
      dataType = 'array';
    }
    switch (dataType) {
      case 'array': {
        if (!Array.isArray(value)) value = [value];
        const id = arrayParentId();
        csvRow.setValue(safeColumn, id);
        this.parse(value, `${type}.${column}`, id);
        break;
      }
      case 'object': {
        if (!isObject(value)) throw new JsonParserError(`Unexpected value in '${type}.${column}' where an object was expected.`);
        const child = this.parseRow(value, `${type}.${column}`, [], arrayParentId());
        for (const [key, v] of child.data) csvRow.setValue(legacySafeName(`${safeColumn}_${key}`), v);
        break;
      }
      default:
        if (isScalar(value)) {
          csvRow.setValue(safeColumn, value);
        } else {
          const json = phpJsonEncode(value, PRECISION);
          this.logger.warning(`Data parse error in '${column}' - unexpected '${typeOf(value)}' where '${dataType}' was expected!`);
          csvRow.setValue(safeColumn, json);
        }
    }
  }
}

/** PHP `$data == [null]` for a one-element array: the element loosely equals null. */
function looseNull(v: Json): boolean {
  return v === null || v === false || v === 0 || v === '' || (Array.isArray(v) && v.length === 0);
}
