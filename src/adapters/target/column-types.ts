/**
 * The native types of the base types on both targets, and the way back from a catalog's column
 * to a TargetColumn.
 *
 * | base type | DuckDB        | PostgreSQL       |
 * | --------- | ------------- | ---------------- |
 * | (untyped) | VARCHAR NOT NULL DEFAULT '' | text NOT NULL DEFAULT '' |
 * | STRING    | VARCHAR       | text             |
 * | INTEGER   | BIGINT        | bigint           |
 * | NUMERIC   | DECIMAL(38,9) | numeric          |
 * | FLOAT     | DOUBLE        | double precision |
 * | BOOLEAN   | BOOLEAN       | boolean          |
 * | DATE      | DATE          | date             |
 * | TIMESTAMP | TIMESTAMPTZ   | timestamptz      |
 * | JSON      | JSON          | jsonb            |
 *
 * Typed columns are nullable (a key column is NOT NULL, as a primary key makes it). The untyped
 * column and STRING share the string type; the catalog tells them apart by NULL and DEFAULT:
 * STRING is nullable, or NOT NULL without a default when it is a key column; the untyped column
 * is NOT NULL with the default '' (tables written before typed columns existed: NOT NULL
 * without a default, and no key).
 */
import { BASE_TYPES, type BaseType } from '../../model/definition.js';
import type { ColumnDefinition, NewTable, TargetColumn } from '../../ports/target.js';

export type Dialect = 'duckdb' | 'postgres';

interface NativeType {
  /** How a column of the type is declared. */
  declare: string;
  /** The catalog's names of the type (DuckDB: duckdb_columns().data_type; PostgreSQL: format_type()). */
  reads: RegExp;
}

const NATIVE: Record<Dialect, Record<BaseType, NativeType>> = {
  duckdb: {
    STRING: { declare: 'VARCHAR', reads: /^VARCHAR$/ },
    INTEGER: { declare: 'BIGINT', reads: /^BIGINT$/ },
    NUMERIC: { declare: 'DECIMAL(38,9)', reads: /^DECIMAL\(\d+,\d+\)$/ },
    FLOAT: { declare: 'DOUBLE', reads: /^DOUBLE$/ },
    BOOLEAN: { declare: 'BOOLEAN', reads: /^BOOLEAN$/ },
    DATE: { declare: 'DATE', reads: /^DATE$/ },
    TIMESTAMP: { declare: 'TIMESTAMPTZ', reads: /^TIMESTAMP WITH TIME ZONE$/ },
    JSON: { declare: 'JSON', reads: /^JSON$/ },
  },
  postgres: {
    STRING: { declare: 'text', reads: /^text$/ },
    INTEGER: { declare: 'bigint', reads: /^bigint$/ },
    NUMERIC: { declare: 'numeric', reads: /^numeric(\(\d+,\d+\))?$/ },
    FLOAT: { declare: 'double precision', reads: /^double precision$/ },
    BOOLEAN: { declare: 'boolean', reads: /^boolean$/ },
    DATE: { declare: 'date', reads: /^date$/ },
    TIMESTAMP: { declare: 'timestamptz', reads: /^timestamp with time zone$/ },
    JSON: { declare: 'jsonb', reads: /^jsonb$/ },
  },
};

/** The declaration of a typed column (nullable), or of the untyped one (NOT NULL DEFAULT ''). */
export function columnDeclaration(dialect: Dialect, type: BaseType | undefined): string {
  if (type === undefined) return `${NATIVE[dialect].STRING.declare} NOT NULL DEFAULT ''`;
  return NATIVE[dialect][type].declare;
}

/** The native type of a base type (for casts). */
export function nativeType(dialect: Dialect, type: BaseType): string {
  return NATIVE[dialect][type].declare;
}

/** A column as the catalog describes it. */
export interface CatalogColumn {
  name: string;
  nativeType: string;
  notNull: boolean;
  hasDefault: boolean;
  inPrimaryKey: boolean;
}

/** A catalog's column as the port describes it (see the rules at the top). */
export function readColumn(dialect: Dialect, column: CatalogColumn): TargetColumn {
  const base = BASE_TYPES.find((t) => NATIVE[dialect][t].reads.test(column.nativeType));
  const untyped = base === 'STRING' && column.notNull && (column.hasDefault || !column.inPrimaryKey);
  return {
    name: column.name,
    ...(base !== undefined && !untyped ? { type: base } : {}),
    nativeType: column.nativeType,
    nullable: !column.notNull,
  };
}

/**
 * What is wrong with a new table's columns, types and key, in words; undefined when it can be
 * created. (TableService checks the names with the Storage API's rules before.)
 */
export function newTableProblem(table: Pick<NewTable, 'columns' | 'types' | 'primaryKey'>): string | undefined {
  if (table.columns.length === 0) return 'a table needs at least one column';
  const columns = new Set(table.columns);
  if (columns.size !== table.columns.length) return 'a column is named twice';
  for (const [name, type] of Object.entries(table.types ?? {})) {
    if (!columns.has(name)) return `a type is given for "${name}", which is not a column`;
    if (!BASE_TYPES.includes(type)) return `the type "${String(type)}" of "${name}" is not a base type (${BASE_TYPES.join(', ')})`;
  }
  const key = table.primaryKey ?? [];
  if (new Set(key).size !== key.length) return 'a primary key column is named twice';
  const outside = key.find((k) => !columns.has(k));
  if (outside !== undefined) return `the primary key column "${outside}" is not a column`;
  return undefined;
}

/**
 * What is wrong with columns to add to a table that has `existing`, in words; undefined when
 * they can be added. Names compare without letter case: DuckDB's identifiers ignore it.
 */
export function addColumnsProblem(existing: readonly string[], columns: readonly ColumnDefinition[]): string | undefined {
  const taken = new Set(existing.map((name) => name.toLowerCase()));
  for (const column of columns) {
    if (taken.has(column.name.toLowerCase())) return `the table has a column "${column.name}" already (names compare without letter case)`;
    taken.add(column.name.toLowerCase());
    if (column.type !== undefined && !BASE_TYPES.includes(column.type)) return `the type "${String(column.type)}" of "${column.name}" is not a base type (${BASE_TYPES.join(', ')})`;
  }
  return undefined;
}
