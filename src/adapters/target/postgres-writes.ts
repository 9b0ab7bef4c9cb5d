/**
 * The SQL of the PostgreSQL target's tables and writes, and of the text of typed columns
 * (postgres-target.ts runs it). Rows arrive by COPY ... FROM STDIN in CSV, which reads an
 * unquoted empty field as NULL and a quoted one as ''; the untyped columns are FORCE_NOT_NULL
 * (both ''), typed columns are cast by COPY itself.
 */
import type pg from 'pg';
import { TIMESTAMP_COLUMN, type TargetColumn } from '../../ports/target.js';
import { isUntypedColumn } from '../../ports/target-columns.js';
import { columnDeclaration, readColumn } from './column-types.js';
import { ident, pgName } from './postgres-names.js';
import type { TableShape } from './write-plan.js';

/** The system column: when the row was written (the transaction's time). */
const TIMESTAMP_DECLARATION = 'timestamptz NOT NULL DEFAULT now()';

/** The ordinal of a row in the upsert's temporary table: a name no Storage column can have. */
const ROW = ident('sluice row');

/** CREATE TABLE with the columns (typed, or untyped), the system column and the primary key. */
export function createTableSql(table: string, columns: readonly { name: string; type?: TargetColumn['type'] }[], primaryKey: readonly string[]): string {
  const list = columns.map((c) => `${ident(c.name)} ${columnDeclaration('postgres', c.type)}`);
  list.push(`${ident(TIMESTAMP_COLUMN)} ${TIMESTAMP_DECLARATION}`);
  if (primaryKey.length > 0) list.push(`PRIMARY KEY (${primaryKey.map((k) => ident(k)).join(', ')})`);
  return `CREATE TABLE ${table} (${list.join(', ')})`;
}

/** ALTER TABLE ... ADD COLUMN: typed nullable (old rows NULL), untyped NOT NULL DEFAULT '' (old rows ''). */
export function addColumnSql(table: string, column: { name: string; type?: TargetColumn['type'] }): string {
  return `ALTER TABLE ${table} ADD COLUMN ${ident(column.name)} ${columnDeclaration('postgres', column.type)}`;
}

/**
 * The table's columns (without the system column) and primary key as the catalog has them (the
 * truth: a column renamed or retyped behind Sluice's back shows here), named by the Storage
 * names they were created with (`created`, see pgName).
 */
export async function readShape(c: pg.PoolClient, schema: string, table: string, created: readonly string[]): Promise<TableShape> {
  const { rows } = await c.query(
    `SELECT a.attname, format_type(a.atttypid, a.atttypmod) AS native, a.attnotnull AS not_null, a.atthasdef AS has_default, k.n AS key_position
       FROM pg_attribute a
       JOIN pg_class r ON r.oid = a.attrelid JOIN pg_namespace ns ON ns.oid = r.relnamespace
       LEFT JOIN pg_index i ON i.indrelid = r.oid AND i.indisprimary
       LEFT JOIN LATERAL (SELECT u.n FROM unnest(i.indkey) WITH ORDINALITY AS u(attnum, n) WHERE u.attnum = a.attnum) k ON true
      WHERE ns.nspname = $1 AND r.relname = $2 AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY a.attnum`,
    [pgName(schema), pgName(table)],
  );
  const named = rows
    .filter((r) => r.attname !== TIMESTAMP_COLUMN)
    .map((r) => ({ ...r, name: created.find((col) => pgName(col) === r.attname) ?? String(r.attname) }));
  const primaryKey = named.filter((r) => r.key_position !== null).sort((a, b) => Number(a.key_position) - Number(b.key_position)).map((r) => r.name);
  const columns = named.map((r) => {
    const catalog = { name: r.name, nativeType: String(r.native), notNull: r.not_null === true, hasDefault: r.has_default === true, inPrimaryKey: r.key_position !== null };
    return { ...readColumn('postgres', catalog), hasDefault: catalog.hasDefault };
  });
  return { columns, primaryKey };
}

/**
 * COPY of header-less CSV into `columns` of `into`; an untyped column (or one with no base type,
 * as before typed columns) reads an unquoted empty field as '' (FORCE_NOT_NULL), a typed one as NULL.
 */
export function copySql(into: string, columns: readonly TargetColumn[]): string {
  const list = columns.map((c) => ident(c.name)).join(', ');
  const untyped = columns.filter((c) => c.type === undefined).map((c) => ident(c.name));
  const force = untyped.length > 0 ? `, FORCE_NOT_NULL (${untyped.join(', ')})` : '';
  return `COPY ${into} (${list}) FROM STDIN WITH (FORMAT csv${force})`;
}

/** The temporary table an upsert copies its rows into first, numbered in the order they come. */
export function upsertTableSql(data: readonly TargetColumn[]): string {
  const columns = data.map((c) => `${ident(c.name)} ${c.nativeType}`);
  return `CREATE TEMP TABLE sluice_upsert (${columns.join(', ')}, ${ROW} bigint GENERATED ALWAYS AS IDENTITY) ON COMMIT DROP`;
}

/**
 * The upsert from the temporary table: the last row of each key (DISTINCT ON, by the rows'
 * order), inserted or replacing the table's row of that key (the columns the data does not
 * fill get their default: `excluded` has them). Its one row `fresh`: the rows that were new.
 * (The key index's upkeep is most of its cost: the sort is a sixth of it.)
 */
export function upsertSql(table: string, data: readonly TargetColumn[], others: readonly TargetColumn[], primaryKey: readonly string[]): string {
  const names = data.map((c) => ident(c.name)).join(', ');
  const key = primaryKey.map((k) => ident(k)).join(', ');
  const replaced = [...data, ...others].filter((c) => !primaryKey.includes(c.name)).map((c) => ident(c.name));
  replaced.push(ident(TIMESTAMP_COLUMN));
  return `WITH written AS (
      INSERT INTO ${table} (${names})
      SELECT DISTINCT ON (${key}) ${names} FROM pg_temp.sluice_upsert ORDER BY ${key}, ${ROW} DESC
      ON CONFLICT (${key}) DO UPDATE SET ${replaced.map((c) => `${c} = excluded.${c}`).join(', ')}
      RETURNING (xmax = 0) AS fresh
    ) SELECT count(*) FILTER (WHERE fresh)::bigint AS fresh FROM written`;
}

/**
 * A column's value as text, for previews and exports: NULL stays NULL; a TIMESTAMP in UTC
 * ISO 8601 with microseconds and "Z"; other types PostgreSQL's text (numeric "-1.500000000").
 */
export function textExpression(column: TargetColumn): string {
  const name = ident(column.name);
  if (column.type === 'TIMESTAMP') return `to_char(${name} AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.US"Z"')`;
  if (isUntypedColumn(column) || column.type === 'STRING') return name;
  return `${name}::text`;
}
