/**
 * JSON → CSV flattening, reproducing keboola/php-jsonparser 3.0.0 as the reference extractor
 * uses it: every page is analysed when it arrives (the structure of every table
 * grows), rows are written only at the end, so a table's header is the union of all pages.
 *
 * - Nested objects become columns of the same row (`address.city` → `address_city`).
 * - Arrays become child tables `<table>_<key>` linked by `JSON_parentId`; the parent cell holds
 *   the link id `<path>_<md5(serialize(row) . outerHash)>`.
 * - A scalar that later turns up as an array is upgraded to a one-item child table; object vs
 *   scalar conflicts are errors.
 * - Parent columns (child jobs' `parent_*`, `userData`) are appended last; a clash with a data
 *   column renames the parent column with `_u0`, `_u1`, … (and remembers the alias globally).
 *
 * Pure: no I/O. `getTables()` returns header and rows per table name; results.ts instead keeps
 * the pages on disk, takes each page's rows when it arrives (`pageRows`) and replays the pages
 * at the end (`pageRowsHold`, else `parseBatch`), so that memory does not grow with the pages.
 */
import { createHash } from 'node:crypto';
import { csvCellQuoted, csvLines } from './output.js';
import { isObject, isScalar, phpJsonEncode, phpSerialize, type Json, type JsonObject } from '../php.js';

export class JsonParserError extends Error {}

const ARRAY = '[]';
const DATA_COLUMN = 'data';

interface Node {
  nodeType?: string;
  headerNames?: string;
  type?: 'parent';
  children: Map<string, Node>;
  /** Header list of this node, valid while `headersVersion` equals the structure's version. */
  headers?: string[];
  headersVersion?: number;
  /** Header name → position in `headers` (same validity). */
  headerIndex?: Map<string, number>;
}

const newNode = (): Node => ({ children: new Map() });

/** A node path as a linked list (cheap to extend), only turned into text for messages. */
interface Trail {
  up: Trail | null;
  key: string;
}

function trailText(t: Trail | null): string {
  const parts: string[] = [];
  for (let x = t; x; x = x.up) parts.unshift(x.key);
  return parts.join('.');
}

function md5(s: string): string {
  return createHash('md5').update(s, 'utf8').digest('hex');
}

/** `getSafeName`: runs of characters outside `[A-Za-z0-9-]` → `_`, trimmed, at most 64. */
export function safeName(name: string): string {
  let n = name.replace(/[^A-Za-z0-9-]/g, '_');
  if (n.length > 64) {
    const words = n.match(/[A-Za-z]+/g) ?? [];
    let short = words.length > 1 ? (n.match(/\b\w/g) ?? []).join('') : md5(n);
    short += '_';
    const remaining = 64 - short.length;
    const from = n.length - remaining;
    let next = n.indexOf(' ', from);
    if (next <= 0) next = n.indexOf('_', from);
    n = next < 0 ? short : short + n.slice(next);
  }
  return n.replace(/[^A-Za-z0-9-]+/g, '_').replace(/^_+|_+$/g, '');
}

/** One row being filled: values by header position. */
interface CsvRow {
  index: Map<string, number>;
  values: unknown[];
}

/** Parent column names of one table; `renamed` maps a renamed column to its original name. */
interface ParentHolder {
  keys: string[];
  renamed: Map<string, string>;
}

interface Batch {
  data: Json[];
  type: string;
  parentId: Record<string, Json> | null;
}

export interface ParsedTable {
  name: string;
  header: string[];
  /** Raw scalar values (or null), positionally as the reference writes them. */
  rows: unknown[][];
}

export interface ParserLogger {
  warning(message: string): void;
}

/**
 * The rows of one page worked out when it arrives, against the structure known then (see
 * `pageRows`). They stand for the end's rows while `pageRowsHold` says so.
 */
export interface PageRowsOrigin {
  table: string;
  /** The header the row values are positioned by. */
  header: string[];
  /** `valueChanges` when the rows were made. */
  valueChanges: number;
}

export interface PageRows extends PageRowsOrigin {
  rows: unknown[][];
}

/** The rows of a page as CSV lines (`csvLine` of each row). */
export interface PageCsv extends PageRowsOrigin {
  csv: string;
  count: number;
}

/**
 * Where a flat table's values are (a table of objects, nested objects included, no arrays, no
 * repeated header name): one path of keys per column written, in the order the parse writes
 * them, and the column it goes to.
 */
interface CsvPlan {
  paths: string[][];
  columns: number[];
  width: number;
}

/** Keys that a plain object answers without having them: read as own properties only. */
const INHERITED = new Set(Object.getOwnPropertyNames(Object.prototype));

export class JsonParser {
  /** A pseudo-node whose children are the top-level types (each an array node). */
  private readonly top: Node = newNode();
  private headerIndex = new Map<string, Set<string>>();
  private parentAliases = new Map<string, string>();
  private batches: Batch[] = [];
  private tables = new Map<string, { header: string[]; rows: unknown[][] }>();
  /** Bumped whenever the structure changes; invalidates cached header lists. */
  private version = 0;
  /**
   * Bumped when a change of the structure changes values of rows already seen (a scalar
   * upgraded to an array: its values move to a child table); new columns or a null field
   * taking a type do not.
   */
  private valueChanges = 0;

  /**
   * @param retain keep every page for `getTables()` (default); a caller that keeps the pages
   * itself (results.ts spools them to disk) passes false and replays them with `parseBatch`.
   */
  constructor(
    private readonly logger: ParserLogger = { warning: () => undefined },
    private readonly retain = true,
  ) {}

  /**
   * Analyses one page of data for `type`; returns false (nothing stored) for an empty page or
   * `[null]`-like data, as the reference's NoDataException.
   */
  process(data: Json[], type: string, parentId: Record<string, Json> | null = null): boolean {
    if (data.length === 0 || (data.length === 1 && looseNull(data[0]))) return false;
    let typeNode = this.top.children.get(type);
    if (!typeNode) this.top.children.set(type, (typeNode = newNode()));
    const trail: Trail = { up: null, key: type };
    this.analyzeArray(data, typeNode, trail);
    this.saveNodeValue(this.top, type, 'array', null);
    this.generateHeaderNames();
    this.version++;
    if (this.retain) this.batches.push({ data, type, parentId });
    return true;
  }

  /** Parses all stored pages (in arrival order) into tables. Call once, at the end. */
  getTables(): ParsedTable[] {
    for (const batch of this.batches) this.parseBatch(batch.data, batch.type, batch.parentId);
    this.batches = [];
    return [...this.tables].map(([name, t]) => ({ name, header: t.header, rows: t.rows }));
  }

  /**
   * The end's parse of one analysed page (pages in arrival order): rows go to the tables, whose
   * header is fixed when the first page reaches them (`tablesSoFar`, `takeRows`).
   */
  parseBatch(data: Json[], type: string, parentId: Record<string, Json> | null): void {
    const item = this.top.children.get(type)?.children.get(ARRAY);
    if (item) this.parse(data, item, type, parentId);
  }

  /** Tables in the order they were created, with the rows parsed since the last `takeRows`. */
  tablesSoFar(): IterableIterator<[string, { header: string[]; rows: unknown[][] }]> {
    return this.tables.entries();
  }

  /** Hands over the rows parsed so far (the tables keep their headers). */
  takeRows(name: string): unknown[][] {
    const table = this.tables.get(name);
    if (!table) return [];
    const rows = table.rows;
    table.rows = [];
    return rows;
  }

  /**
   * The rows of a page just analysed, as the end's parse would write them if the structure did
   * not change any more; null when that parse could change the structure itself or when the
   * page holds nested arrays (parent columns and `JSON_parentId` are added to the structure
   * when the end's parse meets them, after every page has been analysed, so their order and
   * `_u` renames depend on all pages). Changes nothing.
   */
  pageRows(data: Json[], type: string, parentId: Record<string, Json> | null): PageRows | null {
    if (parentId !== null && Object.keys(parentId).length > 0) return null;
    const item = this.top.children.get(type)?.children.get(ARRAY);
    if (!item || hasArrayNode(item)) return null;
    try {
      const header = this.getHeaders(item, null);
      const rows: unknown[][] = new Array(data.length);
      for (let i = 0; i < data.length; i++) rows[i] = this.parseRow(rowOf(data[i]), item, type, [], null);
      return { table: safeName(type), header, rows, valueChanges: this.valueChanges };
    } catch {
      // The end's parse meets the same error, or a later page's structure avoids it.
      return null;
    }
  }

  /**
   * `pageRows` as CSV lines. A table of objects without arrays (the common case) is written
   * straight from the items by a plan of where each value goes, without a row of values per
   * item; the lines are those of `csvLine(row)` for the rows `pageRows` would make.
   */
  pageCsv(data: Json[], type: string, parentId: Record<string, Json> | null): PageCsv | null {
    if (parentId !== null && Object.keys(parentId).length > 0) return null;
    const item = this.top.children.get(type)?.children.get(ARRAY);
    if (!item || hasArrayNode(item)) return null;
    const plan = item.nodeType === 'object' ? this.csvPlan(item) : null;
    const csv = plan ? planCsv(plan, data) : null;
    if (csv !== null) return { table: safeName(type), header: this.getHeaders(item, null), csv, count: data.length, valueChanges: this.valueChanges };
    const made = this.pageRows(data, type, parentId);
    return made && { table: made.table, header: made.header, csv: csvLines(made.rows), count: made.rows.length, valueChanges: made.valueChanges };
  }

  /** The plan of an object node's rows (see CsvPlan); null when the generic parse is needed. */
  private csvPlan(item: Node): CsvPlan | null {
    const headers = this.getHeaders(item, null);
    const index = item.headerIndex as Map<string, number>;
    if (index.size !== headers.length) return null;
    const plan: CsvPlan = { paths: [], columns: [], width: headers.length };
    const walk = (node: Node, path: string[]): boolean => {
      for (const [column, child] of node.children) {
        if (child.nodeType === 'object') {
          const nested = this.getHeaders(child, null);
          if ((child.headerIndex as Map<string, number>).size !== nested.length) return false;
          if (!walk(child, [...path, column])) return false;
        } else {
          const at = index.get((child.headerNames ?? node.headerNames) as string);
          // The parse fails such a row (a column missing from the header): let it say so.
          if (at === undefined) return false;
          plan.paths.push([...path, column]);
          plan.columns.push(at);
        }
      }
      return true;
    };
    return walk(item, []) ? plan : null;
  }

  /**
   * At the end, in arrival order in place of `parseBatch`: true when the rows `pageRows` made
   * are the rows the end's parse would write now (no value-changing upgrade since, the same
   * header), and then the page's table is created if this is its first page.
   */
  pageRowsHold(page: PageRowsOrigin, type: string): boolean {
    if (page.valueChanges !== this.valueChanges) return false;
    const item = this.top.children.get(type)?.children.get(ARRAY);
    if (!item) return false;
    const header = this.getHeaders(item, null);
    if (header.length !== page.header.length) return false;
    for (let i = 0; i < header.length; i++) if (header[i] !== page.header[i]) return false;
    if (!this.tables.has(page.table)) this.tables.set(page.table, { header, rows: [] });
    return true;
  }

  /**
   * Seeds the structure from a previous run's state (`json_parser.struct`, version 3): its
   * columns and their order come first, as in the reference (example 107).
   */
  load(struct: unknown): void {
    if (!isObject(struct) || !isObject(struct.data)) return;
    const decode = (raw: Record<string, Json>): Node => {
      const node = newNode();
      for (const [k, v] of Object.entries(raw)) {
        if (isObject(v)) node.children.set(k === ARRAY ? k : k.slice(1), decode(v));
        else if (k === 'nodeType' && typeof v === 'string') node.nodeType = v;
        else if (k === 'headerNames' && typeof v === 'string') node.headerNames = v;
        else if (k === 'type' && v === 'parent') node.type = 'parent';
      }
      return node;
    };
    for (const [k, v] of Object.entries(struct.data)) if (isObject(v)) this.top.children.set(k.slice(1), decode(v));
    if (isObject(struct.parent_aliases)) {
      for (const [k, v] of Object.entries(struct.parent_aliases)) if (typeof v === 'string') this.parentAliases.set(k, v);
    }
    this.version++;
  }

  /** The structure in the reference's state format (`json_parser.struct`). */
  dump(): JsonObject {
    const encode = (node: Node): JsonObject => {
      const out: JsonObject = {};
      for (const [k, child] of node.children) out[k === ARRAY ? k : `_${k}`] = encode(child);
      if (node.nodeType !== undefined) out.nodeType = node.nodeType;
      if (node.headerNames !== undefined) out.headerNames = node.headerNames;
      if (node.type !== undefined) out.type = node.type;
      return out;
    };
    const data: JsonObject = {};
    for (const [k, node] of this.top.children) data[`_${k}`] = encode(node);
    return { data, parent_aliases: Object.fromEntries(this.parentAliases) };
  }

  // ---------------------------------------------------------------------------------------
  // Analysis

  /** `up`: the trail of the node holding `key` (the item's own trail is only made when needed). */
  private analyzeItem(item: Json, parent: Node, key: string, up: Trail | null): string {
    let node = parent.children.get(key);
    if (!node) parent.children.set(key, (node = newNode()));
    let nodeType: string;
    if (isScalar(item)) nodeType = 'scalar';
    else if (item === null) nodeType = 'null';
    else {
      const trail: Trail = { up, key };
      if (Array.isArray(item)) {
        if (key === ARRAY) {
          this.logger.warning(`Converting nested array '${trailText(trail)}' to JSON string.`);
          nodeType = 'scalar';
        } else {
          nodeType = 'array';
          this.analyzeArray(item, node, trail);
        }
      } else {
        nodeType = 'object';
        for (const k of Object.keys(item)) this.analyzeItem(item[k], node, k, trail);
      }
    }
    // Usually the type is known already: nothing to save.
    if (node.nodeType !== nodeType) this.saveNodeValue(parent, key, nodeType, up);
    return nodeType;
  }

  /** Analyses the items of an array held by `holder` (its `[]` child). */
  private analyzeArray(array: Json[], holder: Node, holderTrail: Trail): void {
    if (array.length === 0) {
      if (!holder.children.has(ARRAY)) holder.children.set(ARRAY, newNode());
      this.saveNodeValue(holder, ARRAY, 'null', holderTrail);
    }
    let oldType: string | null = null;
    for (const row of array) {
      const newType = this.analyzeItem(row, holder, ARRAY, holderTrail);
      if (oldType !== null && newType !== oldType && newType !== 'null' && oldType !== 'null') {
        throw new JsonParserError(`Data in '${trailText({ up: holderTrail, key: ARRAY })}' contains incompatible data types '${oldType}' and '${newType}'.`);
      }
      oldType = newType;
    }
  }

  /** `up`: the trail of `parent` (for messages). */
  private saveNodeValue(parent: Node, key: string, nodeType: string, up: Trail | null): void {
    const node = parent.children.get(key) as Node;
    if (node.nodeType && node.nodeType !== nodeType) this.handleUpgrade(parent, key, node, nodeType, { up, key });
    else node.nodeType = nodeType;
  }

  private handleUpgrade(parent: Node, key: string, node: Node, newType: string, trail: Trail): void {
    const old = node.nodeType as string;
    if (old === 'array' || newType === 'array') {
      const items = node.children.get(ARRAY);
      if (!items?.nodeType) throw new JsonParserError('Array contents are unknown');
      const nonArray = old === 'array' ? newType : old;
      if (items.nodeType !== nonArray && nonArray !== 'null' && items.nodeType !== 'null') {
        throw new JsonParserError(
          `Data array in '${trailText(trail)}' contains incompatible types '${items.nodeType}' and '${nonArray}'`,
        );
      }
      const item: Node = { nodeType: items.nodeType, headerNames: items.headerNames, type: items.type, children: new Map(items.children) };
      for (const [k, child] of node.children) if (k !== ARRAY) item.children.set(k, child);
      item.nodeType = newType !== 'array' ? newType : old;
      const upgraded: Node = { nodeType: 'array', children: new Map([[ARRAY, item]]) };
      if (node.headerNames) {
        item.headerNames = DATA_COLUMN;
        upgraded.headerNames = node.headerNames;
      }
      parent.children.set(key, upgraded);
      this.valueChanges++;
    } else if (old !== 'null' && newType === 'null') {
      // the known type stays
    } else if (old === 'null') {
      node.nodeType = newType;
    } else {
      throw new JsonParserError(`Unhandled nodeType change from "${old}" to "${newType}" in "${trailText(trail)}"`);
    }
  }

  // ---------------------------------------------------------------------------------------
  // Header names

  private generateHeaderNames(): void {
    for (const [type, node] of this.top.children) {
      for (const [name, child] of node.children) this.generateHeaderName(child, name, `_${type}`);
    }
  }

  private uniqueName(baseType: string, headerName: string): string {
    let index = this.headerIndex.get(baseType);
    if (!index) this.headerIndex.set(baseType, (index = new Set()));
    let name = headerName;
    for (let i = 0; index.has(name); i++) name = `${headerName}_u${i}`;
    index.add(name);
    return name;
  }

  private generateHeaderName(node: Node, parentName: string, baseType: string): void {
    if (!node.headerNames) {
      node.headerNames = parentName !== ARRAY ? this.uniqueName(baseType, safeName(parentName)) : DATA_COLUMN;
    }
    if (node.nodeType === 'array') {
      baseType = `${baseType}.${parentName}`;
      parentName = '';
    }
    for (const [key, child] of node.children) {
      // PHP `!$parentName`: '' and '0' are both false.
      const childName = parentName === '' || parentName === '0' ? key : `${parentName}.${key}`;
      this.generateHeaderName(child, childName, baseType);
    }
  }

  // ---------------------------------------------------------------------------------------
  // Parsing (writing rows)

  private validateParentId(parentId: Record<string, Json> | string | null): Record<string, Json> {
    let ids: Record<string, Json>;
    if (parentId === null || parentId === '' || (isObject(parentId) && Object.keys(parentId).length === 0)) ids = {};
    else if (typeof parentId === 'string') ids = { JSON_parentId: parentId };
    else ids = parentId;
    const out: Record<string, Json> = {};
    for (const [k, v] of Object.entries(ids)) out[this.parentAliases.get(k) ?? k] = v;
    return out;
  }

  /**
   * Writes the rows of one array: `item` is the array's item node, `cleanPath` the path of the
   * table without `[]` (the table is named after it, link ids are prefixed with it).
   */
  private parse(data: Json[], item: Node, cleanPath: string, rawParentId: Record<string, Json> | string | null): void {
    let parentId = this.validateParentId(rawParentId);
    const name = safeName(cleanPath);
    let parentKeys = Object.keys(parentId);
    let table = this.tables.get(name);
    if (!table) {
      const holder: ParentHolder = { keys: parentKeys, renamed: new Map() };
      table = { header: this.getHeaders(item, holder), rows: [] };
      this.tables.set(name, table);
      // A clash renamed parent columns (moved to the end): the rows carry the new names.
      if (holder.renamed.size > 0) {
        const renamedId: Record<string, Json> = {};
        for (const k of holder.keys) renamedId[k] = parentId[holder.renamed.get(k) ?? k];
        parentId = renamedId;
        parentKeys = holder.keys;
      }
    }
    for (const value of data) {
      let row = rowOf(value);
      if (parentKeys.length > 0) row = { ...row, ...parentId };
      table.rows.push(this.parseRow(row, item, cleanPath, parentKeys, null));
    }
  }

  /** Returns the row's values in the order of `getHeaders(node)`. */
  private parseRow(
    row: Record<string, Json>,
    node: Node,
    cleanPath: string,
    parentKeys: string[],
    outerHash: (() => string) | null,
  ): unknown[] {
    const holder: ParentHolder = { keys: parentKeys, renamed: new Map() };
    const headers = this.getHeaders(node, holder);
    const csvRow: CsvRow = { index: node.headerIndex as Map<string, number>, values: new Array<unknown>(headers.length).fill(null) };
    // The link id (md5 of the PHP-serialised row) is only computed when something needs it.
    let linkId: string | null = null;
    const arrayParentId = (): string => (linkId ??= `${cleanPath}_${md5(phpSerialize(row) + (outerHash ? outerHash() : ''))}`);
    if (node.nodeType === 'object') {
      for (const [column, child] of node.children) this.parseField(row, csvRow, arrayParentId, column, child.nodeType ?? null, node, cleanPath);
    } else if (node.nodeType === 'scalar') {
      this.parseField(row, csvRow, arrayParentId, DATA_COLUMN, 'scalar', node, cleanPath);
    }
    for (const k of holder.keys) {
      if (!(node.nodeType === 'object' && node.children.has(k))) this.parseField(row, csvRow, arrayParentId, k, 'string', node, cleanPath);
    }
    return csvRow.values;
  }

  private setValue(csvRow: CsvRow, column: string | undefined, value: unknown): void {
    const at = column === undefined ? undefined : csvRow.index.get(column);
    if (at === undefined) throw new JsonParserError(`Error assigning '${String(value)}' to a non-existing column '${column}'!`);
    csvRow.values[at] = value;
  }

  private parseField(
    row: Record<string, Json>,
    csvRow: CsvRow,
    arrayParentId: () => string,
    column: string,
    dataType: string | null,
    node: Node,
    cleanPath: string,
  ): void {
    const value = Object.prototype.hasOwnProperty.call(row, column) ? row[column] : null;
    const child = node.children.get(column);
    if (value === null || (Array.isArray(value) && value.length === 0)) {
      if (dataType !== 'object') this.setValue(csvRow, child?.headerNames ?? node.headerNames, null);
      return;
    }
    if (dataType === 'array') {
      const items = Array.isArray(value) ? value : [value];
      const id = arrayParentId();
      this.setValue(csvRow, child?.headerNames, id);
      const itemNode = child?.children.get(ARRAY);
      if (itemNode) this.parse(items, itemNode, `${cleanPath}.${column}`, id);
    } else if (dataType === 'object') {
      if (!isObject(value) || !child) throw new JsonParserError(`Unexpected value in '${column}' where an object was expected.`);
      const nested = this.parseRow(value, child, `${cleanPath}.${column}`, [], arrayParentId);
      const names = child.headers as string[];
      for (let i = 0; i < names.length; i++) this.setValue(csvRow, names[i], nested[i]);
    } else if (isScalar(value)) {
      this.setValue(csvRow, child?.headerNames ?? node.headerNames, value);
    } else {
      this.setValue(csvRow, child?.headerNames, phpJsonEncode(value));
    }
  }

  /**
   * The header of the table (or object) of `node`. Parent columns in `parent.keys` are added to
   * the structure on first sight; a clash with a data column renames them (`_u0`, …).
   */
  private getHeaders(node: Node, parent: ParentHolder | null): string[] {
    if (parent && parent.keys.length > 0) {
      for (const original of [...parent.keys]) {
        let key = original;
        const existing = node.children.get(key);
        if (existing?.type === 'parent') continue;
        if (existing) {
          let candidate = key;
          for (let i = 0; node.children.has(candidate); i++) candidate = `${key}_u${i}`;
          parent.keys = [...parent.keys.filter((k) => k !== key), candidate];
          parent.renamed.set(candidate, key);
          this.parentAliases.set(key, candidate);
          key = candidate;
        }
        node.children.set(key, { nodeType: 'scalar', type: 'parent', children: new Map() });
        this.generateHeaderNames();
        this.version++;
      }
    }
    if (node.headers && node.headersVersion === this.version) return node.headers;
    const headers: string[] = [];
    if (node.nodeType === 'scalar' && node.headerNames) headers.push(node.headerNames);
    for (const child of node.children.values()) {
      if (child.nodeType === 'object') headers.push(...this.getHeaders(child, null));
      else if (child.headerNames !== undefined) headers.push(child.headerNames);
    }
    node.headers = headers;
    node.headersVersion = this.version;
    // Like PHP's array_fill_keys, a repeated name keeps its first position.
    node.headerIndex = new Map();
    for (let i = 0; i < headers.length; i++) if (!node.headerIndex.has(headers[i])) node.headerIndex.set(headers[i], i);
    return headers;
  }
}

/**
 * The CSV lines of `data` by `plan`, as `parseRow` then `csvLine` make them; null when an item
 * is not an object or a nested object is something else (the parse fails it, or the upgrade
 * of a later page makes it a child table: the generic parse decides).
 */
function planCsv(plan: CsvPlan, data: Json[]): string | null {
  const { paths, columns, width } = plan;
  const cells: string[] = new Array<string>(width);
  let out = '';
  for (const item of data) {
    if (!isObject(item)) return null;
    cells.fill('""');
    for (let p = 0; p < paths.length; p++) {
      const path = paths[p];
      let value: Json | undefined = item;
      for (let i = 0; i < path.length; i++) {
        const key = path[i];
        const holder = value as JsonObject;
        value = INHERITED.has(key) && !Object.prototype.hasOwnProperty.call(holder, key) ? undefined : holder[key];
        if (value === undefined || value === null || (Array.isArray(value) && value.length === 0)) {
          value = null;
          break;
        }
        if (i < path.length - 1 && !isObject(value)) return null;
      }
      if (value === null) continue;
      cells[columns[p]] = csvCellQuoted(isScalar(value) ? value : phpJsonEncode(value));
    }
    out += `${cells.join(',')}\n`;
  }
  return out;
}

/** An item as a row: scalars and lists go into the `data` column. */
function rowOf(value: Json): Record<string, Json> {
  if (isScalar(value) || value === null) return { [DATA_COLUMN]: value };
  if (Array.isArray(value)) return { [DATA_COLUMN]: phpJsonEncode(value) };
  return value;
}

/** True when the node or a node below it is an array (its rows would make child tables). */
function hasArrayNode(node: Node): boolean {
  for (const child of node.children.values()) if (child.nodeType === 'array' || hasArrayNode(child)) return true;
  return false;
}

/** PHP `$data == [null]` for a one-element array: the element loosely equals null. */
function looseNull(v: Json): boolean {
  return v === null || v === false || v === 0 || v === '' || (Array.isArray(v) && v.length === 0);
}
