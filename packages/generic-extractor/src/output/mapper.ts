/**
 * `config.mappings` (keboola/php-csvmap as the reference extractor uses it): for a data type
 * with a mapping, each item becomes one row whose columns are picked by path (`column`), taken
 * from the parent columns / userData (`user`), or whose nested array becomes a separate table
 * (`table`) linked by the primary key (or an md5 of the row) in a `<type>_pk` / `parentKey`
 * column. Rows are written as they arrive. Pure (no I/O).
 */
import { createHash } from 'node:crypto';
import { UserError } from '../errors.js';
import { getDataFromPath } from '../response/data-path.js';
import { csvCell, isObject, isScalar, phpEmpty, phpJsonEncode, phpSerialize, type Json, type JsonObject } from '../php.js';

interface ColumnSettings {
  type: 'column' | 'user' | 'table';
  destination?: string;
  mappingDestination?: string;
  primaryKey: boolean;
  forceType: boolean;
  delimiter: string;
  parentKey: { disable: boolean; destination?: string; primaryKey: boolean };
  tableMapping?: JsonObject;
}

export interface MappedTable {
  name: string;
  header: string[];
  rows: unknown[][];
  primaryKey: string[];
}

function md5(s: string): string {
  return createHash('md5').update(s, 'utf8').digest('hex');
}

/** PHP serialize() of an associative array (userData is an array, not an object). */
function serializeArray(values: Record<string, unknown>): string {
  const entries = Object.entries(values);
  return `a:${entries.length}:{${entries.map(([k, v]) => `${/^(0|[1-9]\d*)$/.test(k) ? `i:${k};` : `s:${Buffer.byteLength(k)}:"${k}";`}${phpSerialize(v)}`).join('')}}`;
}

function parseSettings(key: string, raw: Json): ColumnSettings {
  // Shorthand: "path": "destination".
  if (typeof raw === 'string') {
    return { type: 'column', mappingDestination: raw, primaryKey: false, forceType: false, delimiter: '.', parentKey: { disable: false, primaryKey: false } };
  }
  if (!isObject(raw)) throw new UserError(`Invalid mapping for '${key}': expected an object`);
  const type = phpEmpty(raw.type) ? 'column' : String(raw.type);
  if (type !== 'column' && type !== 'user' && type !== 'table') throw new UserError(`Invalid mapping type '${type}' for '${key}'`);
  const mapping = isObject(raw.mapping) ? raw.mapping : {};
  const parentKey = isObject(raw.parentKey) ? raw.parentKey : {};
  return {
    type,
    destination: typeof raw.destination === 'string' ? raw.destination : undefined,
    mappingDestination: typeof mapping.destination === 'string' ? mapping.destination : undefined,
    primaryKey: !phpEmpty(mapping.primaryKey),
    forceType: !phpEmpty(raw.forceType),
    delimiter: phpEmpty(raw.delimiter) ? '.' : String(raw.delimiter),
    parentKey: {
      disable: !phpEmpty(parentKey.disable),
      destination: phpEmpty(parentKey.destination) ? undefined : String(parentKey.destination),
      primaryKey: !phpEmpty(parentKey.primaryKey),
    },
    tableMapping: isObject(raw.tableMapping) ? raw.tableMapping : undefined,
  };
}

export class Mapper {
  private readonly mapping: [string, ColumnSettings][];
  private readonly children = new Map<string, Mapper>();
  private parentKey: { column: string; value: string } | null = null;
  private parentPK: string | null = null;
  private result: { header: string[]; rows: unknown[][] } | null = null;

  constructor(
    mapping: JsonObject,
    private readonly type: string,
  ) {
    this.mapping = Object.entries(mapping).map(([k, v]) => [k, parseSettings(k, v)]);
    for (const [key, s] of this.mapping) {
      if ((s.type === 'column' || s.type === 'user') && !s.mappingDestination) {
        throw new UserError(`Key 'mapping.destination' is not set for column '${key}'.`);
      }
    }
  }

  /** Path → destination of the primary key columns (a parent key marked primaryKey last). */
  private primaryKey(): [string, string][] {
    const pk: [string, string][] = this.mapping.filter(([, s]) => s.primaryKey && s.mappingDestination).map(([k, s]) => [k, s.mappingDestination as string]);
    if (this.parentPK) pk.push([this.parentPK, this.parentPK]);
    return pk;
  }

  private header(): string[] {
    const header: string[] = [];
    const noPk = this.primaryKey().length === 0;
    for (const [key, s] of this.mapping) {
      if (s.type === 'column' || s.type === 'user') header.push(s.mappingDestination as string);
      else if (noPk) {
        if (!s.destination) throw new UserError(`Key 'destination' is not set for table '${key}'.`);
        if (!s.parentKey.disable) header.push(s.destination);
      }
    }
    if (this.parentKey) header.push(this.parentKey.column);
    return header;
  }

  private child(key: string, s: ColumnSettings): Mapper {
    if (s.destination && s.destination === this.type) {
      if (!s.parentKey.disable) throw new UserError("'parentKey.disable' must be true to parse child values into parent's table");
      return this;
    }
    if (!s.tableMapping) throw new UserError(`Key 'tableMapping' is not set for table '${key}'.`);
    if (!s.destination) throw new UserError(`Key 'destination' is not set for table '${key}'.`);
    let m = this.children.get(s.destination);
    if (!m) this.children.set(s.destination, (m = new Mapper(s.tableMapping, s.destination)));
    return m;
  }

  private primaryKeyValues(row: Json, userData: JsonObject): string[] {
    const pk = this.primaryKey();
    if (pk.length === 0) {
      const base = phpSerialize(row);
      return [md5(Object.keys(userData).length === 0 ? base : base + serializeArray(userData))];
    }
    return pk.map(([path, column]) => {
      if (this.parentKey && column === this.parentKey.column) return this.parentKey.value;
      const settings = this.mapping.find(([k]) => k === path)?.[1];
      if (settings?.type === 'user') return csvCell(userData[path]);
      return csvCell(getDataFromPath(path, row, settings?.delimiter ?? '.'));
    });
  }

  /** Maps one page of items; `userData` are the parent columns (child jobs, userData). */
  parse(data: Json[], userData: JsonObject = {}): void {
    if (!this.result) this.result = { header: this.header(), rows: [] };
    for (const row of data) {
      const values = this.parseRow(row, userData);
      (this.result as { rows: unknown[][] }).rows.push(values);
    }
  }

  private parseRow(row: Json, userData: JsonObject): unknown[] {
    const result = new Map<string, unknown>();
    for (const [key, s] of this.mapping) {
      const value = getDataFromPath(key, row, s.delimiter) as Json;
      if (s.type === 'table') {
        const tableParser = this.child(key, s);
        if (this.primaryKey().length === 0 && phpEmpty(value)) {
          if (!s.parentKey.disable) result.set(s.destination as string, null);
          continue;
        }
        const pkValues = this.primaryKeyValues(row, userData);
        if (!s.parentKey.disable) {
          if (this.primaryKey().length === 0) result.set(s.destination as string, pkValues.join(','));
          const column = s.parentKey.destination ?? `${this.type}_pk`;
          tableParser.parentKey = { column, value: pkValues.join(',') };
          if (s.parentKey.primaryKey) tableParser.parentPK = column;
        }
        tableParser.parse(Array.isArray(value) ? value : [value], userData);
      } else if (s.type === 'user') {
        result.set(s.mappingDestination as string, getDataFromPath(key, userData, '.'));
      } else {
        let v: unknown = value;
        if (!isScalar(v) && v !== null && s.forceType) v = phpJsonEncode(v);
        else if (!isScalar(v) && v !== null) {
          throw new UserError(`Error writing '${s.mappingDestination}' column: the value at '${key}' is not scalar (use "forceType": true to store it as JSON)`);
        }
        result.set(s.mappingDestination as string, v);
      }
    }
    if (this.parentKey && !result.has(this.parentKey.column)) result.set(this.parentKey.column, this.parentKey.value);
    return [...result.values()];
  }

  /** This table (if any row was written) and its child tables, depth-first. */
  tables(): MappedTable[] {
    const out: MappedTable[] = [];
    if (this.result) out.push({ name: this.type, header: this.result.header, rows: this.result.rows, primaryKey: this.primaryKey().map(([, c]) => c) });
    for (const m of this.children.values()) if (m !== this) out.push(...m.tables());
    return out;
  }
}
