/**
 * Which of a table's columns a write fills, in both targets: the data's columns (by name, in
 * the data's order: WriteOptions.columns; without it every column by position), and the others,
 * which get their default.
 */
import { TableColumnsMismatchError, type TargetColumn, type WriteOptions } from '../../ports/target.js';
import { isUntypedColumn, writeColumnsProblem } from '../../ports/target-columns.js';

/** A table's column as the adapters read it from the catalog. */
export interface TableColumn extends TargetColumn {
  /** The column has a DEFAULT (the untyped column of a table written before typed columns has none). */
  hasDefault: boolean;
}

/** The column as the port describes it (without what only the adapters need). */
export function targetColumn({ name, type, nativeType, nullable }: TableColumn): TargetColumn {
  return { name, ...(type !== undefined ? { type } : {}), nativeType, nullable };
}

/** A table's columns (without `_timestamp`) and its primary key, from the catalog. */
export interface TableShape {
  columns: TableColumn[];
  primaryKey: string[];
}

export interface WritePlan {
  /** The columns the data fills, in the data's order. */
  data: TableColumn[];
  /** The table's other columns: their default. */
  others: TableColumn[];
  /** Untyped columns among the others without a default: the write gives them DEFAULT '' first. */
  needDefault: TableColumn[];
}

/** The plan of a write to `table`; TableColumnsMismatchError (before anything is written) when the data does not fit. */
export function planWrite(tableId: string, table: TableShape, options: Pick<WriteOptions, 'columns' | 'types'>): WritePlan {
  if (options.columns === undefined) return { data: table.columns, others: [], needDefault: [] };
  const problem = writeColumnsProblem(table.columns, table.primaryKey, options);
  if (problem !== undefined) throw new TableColumnsMismatchError(tableId, table.columns.map((c) => c.name), options.columns, problem);
  const byName = new Map(table.columns.map((c) => [c.name, c]));
  const data = options.columns.map((name) => byName.get(name)!);
  const others = table.columns.filter((c) => !options.columns!.includes(c.name));
  return { data, others, needDefault: others.filter((c) => isUntypedColumn(c) && !c.hasDefault) };
}

/** Throws (before anything is written) when a row of insertRows has another length than the data's columns. */
export function checkRowLengths(tableId: string, rows: readonly (readonly unknown[])[], columns: number): void {
  rows.forEach((r, i) => {
    if (r.length !== columns) throw new Error(`row ${i} has ${r.length} values, table "${tableId}" has ${columns} columns`);
  });
}
