/**
 * The rules about a table's columns that both sides of the Target port apply: the adapters
 * inside a write's transaction (the truth), TableService before it (to word the Storage API's
 * 400). Pure functions over the port's types.
 */
import type { BaseType } from '../model/definition.js';
import type { ColumnDefinition, TargetColumn, TargetTable, WriteOptions } from './target.js';

/** The string types of the untyped column: DuckDB's VARCHAR, PostgreSQL's text. */
const UNTYPED_NATIVE = /^(VARCHAR|text)$/i;

/**
 * Whether a table's column is the untyped string column (no base type, and the target's string
 * type), rather than a column of a native type that has no base type (made behind Sluice's back).
 */
export function isUntypedColumn(column: TargetColumn): boolean {
  return column.type === undefined && UNTYPED_NATIVE.test(column.nativeType);
}

/** Whether the table's column has the type the caller asks for (`type` undefined: untyped). */
export function hasType(column: TargetColumn, type: BaseType | undefined): boolean {
  return type === undefined ? isUntypedColumn(column) : column.type === type;
}

/** A column's type in words, for messages: "INTEGER (BIGINT)", "untyped", "BLOB (no base type)". */
export function describeTableType(column: TargetColumn): string {
  if (column.type !== undefined) return `${column.type} (${column.nativeType})`;
  return isUntypedColumn(column) ? 'untyped' : `${column.nativeType} (no base type)`;
}

/** A requested type in words: the base type, or "untyped". */
export function describeType(type: BaseType | undefined): string {
  return type ?? 'untyped';
}

/** The base types a new table's or a write's columns are given, by name. */
export function typesOf(columns: readonly ColumnDefinition[]): Record<string, BaseType> {
  const types: Record<string, BaseType> = {};
  for (const c of columns) if (c.type !== undefined) types[c.name] = c.type;
  return types;
}

/**
 * What is wrong with a write that names the columns its data fills (WriteOptions.columns) on a
 * table with these columns and key, in words; undefined when the write may go. The table must
 * have each column (and, with `types`, of that base type), the data must fill the primary key,
 * and a column may be named once.
 */
export function writeColumnsProblem(
  definitions: readonly TargetColumn[],
  primaryKey: readonly string[],
  options: Pick<WriteOptions, 'columns' | 'types'>,
): string | undefined {
  const columns = options.columns;
  if (columns === undefined) return undefined;
  const byName = new Map(definitions.map((d) => [d.name, d]));
  const seen = new Set<string>();
  for (const name of columns) {
    if (seen.has(name)) return `the column "${name}" is named twice`;
    seen.add(name);
    const column = byName.get(name);
    if (column === undefined) return `the table has no column "${name}"`;
    if (options.types !== undefined && !hasType(column, options.types[name])) {
      return `the column "${name}" is ${describeTableType(column)} in the table, the data was mapped as ${describeType(options.types[name])}`;
    }
  }
  const unfilled = primaryKey.find((k) => !seen.has(k));
  if (unfilled !== undefined) return `the data does not fill the primary key column "${unfilled}"`;
  return undefined;
}

/** Why an existing table cannot take a set of columns and a primary key (see compareToTable). */
export type TableConflict =
  | { kind: 'case'; column: string; variant: string }
  | { kind: 'type'; column: string; there: TargetColumn; wanted: BaseType | undefined }
  | { kind: 'key'; key: readonly string[]; wanted: readonly string[] };

/**
 * An existing table against the columns and primary key asked of it: the first conflict (a
 * column it has with another type, or under a name that differs only in letter case, which
 * the targets' identifiers ignore; another primary key), or the columns it lacks, which may be
 * added at its end. Columns it has beyond these are no conflict. The callers word a conflict
 * for their API (the sink's mapping, the Storage API's table).
 */
export function compareToTable(
  table: Pick<TargetTable, 'definitions' | 'primaryKey'>,
  columns: readonly ColumnDefinition[],
  primaryKey: readonly string[],
): { conflict: TableConflict } | { missing: ColumnDefinition[] } {
  const missing: ColumnDefinition[] = [];
  for (const c of columns) {
    const there = table.definitions.find((d) => d.name === c.name);
    if (there === undefined) {
      const variant = table.definitions.find((d) => d.name.toLowerCase() === c.name.toLowerCase());
      if (variant !== undefined) return { conflict: { kind: 'case', column: c.name, variant: variant.name } };
      missing.push(c);
    } else if (!hasType(there, c.type)) {
      return { conflict: { kind: 'type', column: c.name, there, wanted: c.type } };
    }
  }
  const key = table.primaryKey;
  if (key.length !== primaryKey.length || key.some((k, i) => k !== primaryKey[i])) return { conflict: { kind: 'key', key, wanted: primaryKey } };
  return { missing };
}
