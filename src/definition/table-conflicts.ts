/**
 * Whether a sink's mapping can fill an existing table: checked when a sink is created, updated
 * or rolled back, so that a change the table cannot take is a 400 at once (and nothing is
 * saved) rather than a task that fails. The table is read as the target has it, so a column
 * the mapping dropped earlier still counts. TableService.ensureTable, which makes the change,
 * applies the same rules (ports/target-columns.ts) again under its lock and has the last word:
 * a table changed in between fails the task.
 */
import type { ColumnDefinition, TargetTable } from '../ports/target.js';
import { describeTableType, describeType, hasType } from '../ports/target-columns.js';

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
  for (const c of columns) {
    const there = table.definitions.find((d) => d.name === c.name);
    if (there === undefined) {
      const variant = table.definitions.find((d) => d.name.toLowerCase() === c.name.toLowerCase());
      if (variant === undefined) continue;
      return `The table "${table.id}" has the column "${variant.name}", which differs from the mapping's "${c.name}" only in letter case; the target cannot hold both.`;
    }
    if (hasType(there, c.type)) continue;
    return `The column "${c.name}" of the table "${table.id}" is ${describeTableType(there)} and the mapping asks for ${describeType(c.type)}: ` +
      'a column\'s type cannot change; map the value into a column of a new name.';
  }
  const key = table.primaryKey;
  if (key.length !== primaryKey.length || key.some((k, i) => k !== primaryKey[i])) {
    const differing = [...key.filter((k) => !primaryKey.includes(k)), ...primaryKey.filter((k) => !key.includes(k))];
    const named = differing.length > 0 ? ` (the columns ${differing.map((k) => `"${k}"`).join(', ')})` : ' (the order of its columns)';
    return `The primary key of the table "${table.id}" is ${keyText(key)} and the mapping asks for ${keyText(primaryKey)}${named}: ` +
      'a table\'s primary key cannot change; map into a new table.';
  }
  return undefined;
}
