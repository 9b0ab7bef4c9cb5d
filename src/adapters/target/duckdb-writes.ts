/**
 * The SQL of the DuckDB target's writes and of the text of typed columns (duckdb-target.ts runs
 * it). A write's data comes from a relation with the fields c0..cN (VARCHAR, in the data's
 * column order; NULL for an unquoted empty CSV field) and, for an upsert, `ordinality` (the
 * row's place in the data: file order, then row order): read_csv(...) [WITH ORDINALITY] for an
 * import, a temporary table for insertRows.
 */
import { TIMESTAMP_COLUMN, type TargetColumn } from '../../ports/target.js';
import { isUntypedColumn } from '../../ports/target-columns.js';
import { columnDeclaration, nativeType } from './column-types.js';
import { duckLiteral } from './parquet.js';

/** A DuckDB identifier in double quotes (embedded quotes doubled), safe for any name. */
export function ident(name: string): string {
  if (name.includes('\u0000')) throw new Error('identifiers cannot contain NUL');
  return `"${name.replaceAll('"', '""')}"`;
}

export function qualified(schema: string, table: string): string {
  return `${ident(schema)}.${ident(table)}`;
}

/** `_timestamp`: the write's transaction time (now() is the start of the transaction), in UTC. */
export const TIMESTAMP_TYPE = "TIMESTAMP DEFAULT (timezone('UTC', now()))";

/** CREATE TABLE with the columns (typed, or untyped), the system column and the primary key. */
export function createTableSql(table: string, columns: readonly { name: string; type?: TargetColumn['type'] }[], primaryKey: readonly string[]): string {
  const list = columns.map((c) => `${ident(c.name)} ${columnDeclaration('duckdb', c.type)}`);
  list.push(`${ident(TIMESTAMP_COLUMN)} ${TIMESTAMP_TYPE}`);
  if (primaryKey.length > 0) list.push(`PRIMARY KEY (${primaryKey.map(ident).join(', ')})`);
  return `CREATE TABLE ${table} (${list.join(', ')})`;
}

/**
 * ALTER TABLE statements that add a column: a typed column is nullable (old rows NULL); the
 * untyped one gets '' in old rows, then NOT NULL (DuckDB adds no column with a constraint).
 */
export function addColumnSql(table: string, column: { name: string; type?: TargetColumn['type'] }): string[] {
  if (column.type !== undefined) return [`ALTER TABLE ${table} ADD COLUMN ${ident(column.name)} ${columnDeclaration('duckdb', column.type)}`];
  return [
    `ALTER TABLE ${table} ADD COLUMN ${ident(column.name)} VARCHAR DEFAULT ''`,
    `ALTER TABLE ${table} ALTER COLUMN ${ident(column.name)} SET NOT NULL`,
  ];
}

/**
 * A data field as the column's value: the untyped column reads NULL (an unquoted empty field)
 * as '' (the bytes of every write before typed columns); STRING keeps it; other typed columns
 * cast it, failing the statement with the column, the value and the type named when the text
 * does not convert (DuckDB's own cast error names neither column nor value).
 */
export function valueExpression(column: TargetColumn, field: string): string {
  if (column.type === undefined) return `COALESCE(${field}, '')`;
  if (column.type === 'STRING') return field;
  const native = nativeType('duckdb', column.type);
  const failure = `error(${duckLiteral(`column "${column.name}": the value "`)} || left(${field}, 200) || ${duckLiteral(`" does not convert to ${column.type} (${native})`)})`;
  // DuckDB casts '1.5' to the BIGINT 2: an INTEGER is digits only.
  const cast = column.type === 'INTEGER'
    ? `CASE WHEN regexp_full_match(${field}, '\\s*[+-]?[0-9]+\\s*') THEN TRY_CAST(${field} AS ${native}) END`
    : `TRY_CAST(${field} AS ${native})`;
  return `COALESCE(${cast}, CASE WHEN ${field} IS NULL THEN NULL ELSE ${failure} END)`;
}

/**
 * The statements that write `source` into the table: a plain INSERT, or on a table with a
 * primary key an upsert. The upsert keeps the last row of each key in a temporary table (a
 * window over `ordinality`: ON CONFLICT cannot touch one row twice in a statement); the rows
 * read are the highest `ordinality` kept (the last row read is the last of its key). Then the
 * rows whose key the table has replace their row (ON CONFLICT DO UPDATE: the columns the data
 * does not fill get their defaults, which `excluded` has), and the others are inserted plainly:
 * DuckDB's ON CONFLICT costs three times a plain insert for a new key. (The DuckDB target
 * writes one statement at a time, so no other write can add a key between the two.) `countAt`:
 * the statement whose one row `n` is the number of rows read; without it, the rows the only
 * statement changed. The last statement drops the temporary table (after a failure the rollback
 * does: it was made in the transaction).
 */
export function writeStatements(
  table: string,
  data: readonly TargetColumn[],
  others: readonly TargetColumn[],
  primaryKey: readonly string[],
  source: string,
): { statements: string[]; countAt?: number } {
  const values = data.map((c, i) => valueExpression(c, `c${i}`));
  const names = data.map((c) => ident(c.name)).join(', ');
  if (primaryKey.length === 0) {
    return { statements: [`INSERT INTO ${table} (${names}) SELECT ${values.join(', ')} FROM ${source}`] };
  }
  const field = (name: string) => `d${data.findIndex((c) => c.name === name)}`;
  const fields = data.map((_, i) => `d.d${i}`).join(', ');
  const sameKey = primaryKey.map((k) => `t.${ident(k)} = d.${field(k)}`).join(' AND ');
  const replaced = [...data, ...others].filter((c) => !primaryKey.includes(c.name)).map((c) => c.name);
  replaced.push(TIMESTAMP_COLUMN);
  return {
    statements: [
      `CREATE OR REPLACE TEMP TABLE sluice_last AS SELECT * FROM (
         SELECT ${values.map((v, i) => `${v} AS d${i}`).join(', ')}, ordinality AS sluice_row FROM ${source}
       ) QUALIFY row_number() OVER (PARTITION BY ${primaryKey.map(field).join(', ')} ORDER BY sluice_row DESC) = 1`,
      'SELECT coalesce(max(sluice_row), 0) AS n FROM temp.sluice_last',
      `INSERT INTO ${table} (${names}) SELECT ${fields} FROM temp.sluice_last d SEMI JOIN ${table} t ON ${sameKey}
         ON CONFLICT (${primaryKey.map(ident).join(', ')}) DO UPDATE SET ${replaced.map((c) => `${ident(c)} = excluded.${ident(c)}`).join(', ')}`,
      `INSERT INTO ${table} (${names}) SELECT ${fields} FROM temp.sluice_last d ANTI JOIN ${table} t ON ${sameKey}`,
      'DROP TABLE temp.sluice_last',
    ],
    countAt: 1,
  };
}

/**
 * A column's value as text, for previews and exports: NULL stays NULL; a TIMESTAMP in UTC
 * ISO 8601 with microseconds and "Z"; other types DuckDB's text (DECIMAL "-1.500000000").
 */
export function textExpression(column: TargetColumn): string {
  const name = ident(column.name);
  if (column.type === 'TIMESTAMP') return `strftime(${name} AT TIME ZONE 'UTC', '%Y-%m-%dT%H:%M:%S.%fZ')`;
  if (isUntypedColumn(column) || column.type === 'STRING') return name;
  return `CAST(${name} AS VARCHAR)`;
}
