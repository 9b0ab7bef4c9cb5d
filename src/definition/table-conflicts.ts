/**
 * Whether a sink's mapping can fill an existing table: checked when a sink is created, updated
 * or rolled back, so that a change the table cannot take is a 400 at once (and nothing is
 * saved) rather than a task that fails. The table is read as the target has it, so a column
 * the mapping dropped earlier still counts. TableService.ensureTable, which makes the change,
 * applies the same comparison (compareToTable, ports/target-columns.ts) again under its lock and has the last word:
 * a table changed in between fails the task.
 */
import type { ColumnDefinition, TargetTable } from '../ports/target.js';
import { compareToTable, describeTableType, describeType } from '../ports/target-columns.js';

function keyText(key: readonly string[]): string {
  return key.length === 0 ? 'none' : `(${key.join(', ')})`;
}

/**
 * The first reason why the table cannot take the mapping, or undefined: a column of the mapping
 * that the table has with another type (untyped and STRING differ: an untyped column is never
 * NULL), or under a name that differs only in letter case, or another primary key. Columns the
 * table has beyond the mapping are fine (they are left as they are), and so are the mapping's
 * columns the table lacks (they are added).
 */
export function tableConflict(table: TargetTable, columns: readonly ColumnDefinition[], primaryKey: readonly string[]): string | undefined {
  const compared = compareToTable(table, columns, primaryKey);
  if (!('conflict' in compared)) return undefined;
  const conflict = compared.conflict;
  switch (conflict.kind) {
    case 'case':
      return `The table "${table.id}" has the column "${conflict.variant}", which differs from the mapping's "${conflict.column}" only in letter case; the target cannot hold both.`;
    case 'type':
      return `The column "${conflict.column}" of the table "${table.id}" is ${describeTableType(conflict.there)} and the mapping asks for ${describeType(conflict.wanted)}: ` +
        'a column\'s type cannot change; map the value into a column of a new name.';
    case 'key': {
      const { key, wanted } = conflict;
      const differing = [...key.filter((k) => !wanted.includes(k)), ...wanted.filter((k) => !key.includes(k))];
      const named = differing.length > 0 ? ` (the columns ${differing.map((k) => `"${k}"`).join(', ')})` : ' (the order of its columns)';
      return `The primary key of the table "${table.id}" is ${keyText(key)} and the mapping asks for ${keyText(wanted)}${named}: ` +
        'a table\'s primary key cannot change; map into a new table.';
    }
  }
}
