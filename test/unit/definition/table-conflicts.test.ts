import { describe, expect, it } from 'vitest';
import { tableConflict } from '../../../src/definition/table-conflicts.js';
import type { TargetColumn, TargetTable } from '../../../src/ports/target.js';

function table(definitions: TargetColumn[], primaryKey: string[] = []): TargetTable {
  return {
    id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: definitions.map((d) => d.name), definitions, primaryKey,
    created: '2026-11-27T00:00:00Z', lastImportDate: null, rowsCount: 0, metadata: {},
  } as TargetTable;
}

const untyped = (name: string): TargetColumn => ({ name, nativeType: 'VARCHAR', nullable: false });
const integer = (name: string): TargetColumn => ({ name, type: 'INTEGER', nativeType: 'BIGINT', nullable: true });

describe('tableConflict', () => {
  it('takes a mapping that adds columns, drops some, or lists them in another order', () => {
    const t = table([untyped('id'), integer('n'), untyped('old')]);
    expect(tableConflict(t, [{ name: 'n', type: 'INTEGER' }, { name: 'id' }, { name: 'new', type: 'DATE' }], [])).toBeUndefined();
  });

  it('refuses a column whose type changes, naming it and both types', () => {
    const t = table([untyped('id'), integer('n')]);
    expect(tableConflict(t, [{ name: 'id' }, { name: 'n', type: 'STRING' }], [])).toBe(
      'The column "n" of the table "in.c-b.t" is INTEGER (BIGINT) and the mapping asks for STRING: a column\'s type cannot change; map the value into a column of a new name.');
    expect(tableConflict(t, [{ name: 'id', type: 'STRING' }], [])).toContain('is untyped and the mapping asks for STRING');
    expect(tableConflict(t, [{ name: 'n' }], [])).toContain('is INTEGER (BIGINT) and the mapping asks for untyped');
    // A column of a native type without a base type (made behind Sluice's back) is not the untyped one.
    expect(tableConflict(table([{ name: 'b', nativeType: 'BLOB', nullable: true }]), [{ name: 'b' }], [])).toContain('is BLOB (no base type) and the mapping asks for untyped');
  });

  it('refuses a column whose name differs from the table\'s only in letter case', () => {
    expect(tableConflict(table([untyped('Id')]), [{ name: 'id' }], [])).toBe(
      'The table "in.c-b.t" has the column "Id", which differs from the mapping\'s "id" only in letter case; the target cannot hold both.');
  });

  it('refuses another primary key, naming the columns that differ', () => {
    const keyed = table([integer('id'), untyped('v')], ['id']);
    expect(tableConflict(keyed, [{ name: 'id', type: 'INTEGER' }], ['id'])).toBeUndefined();
    expect(tableConflict(keyed, [{ name: 'id', type: 'INTEGER' }], [])).toBe(
      'The primary key of the table "in.c-b.t" is (id) and the mapping asks for none (the columns "id"): a table\'s primary key cannot change; map into a new table.');
    expect(tableConflict(keyed, [{ name: 'id', type: 'INTEGER' }, { name: 'v' }], ['id', 'v'])).toContain('asks for (id, v) (the columns "v")');
    expect(tableConflict(table([untyped('a'), untyped('b')], ['a', 'b']), [{ name: 'a' }, { name: 'b' }], ['b', 'a'])).toContain('(the order of its columns)');
    expect(tableConflict(table([untyped('a')]), [{ name: 'a' }], ['a'])).toContain('is none and the mapping asks for (a)');
  });
});
