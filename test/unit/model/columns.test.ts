import { describe, expect, it } from 'vitest';
import { DomainError } from '../../../src/domain-errors.js';
import { checkColumns, primaryKeyOf } from '../../../src/model/columns.js';
import { DATA_TYPES_OF } from '../../../src/model/definition.js';
import { BASE_TYPES, COLUMN_TYPES, type Column, type ColumnType } from '../../../src/model/definition.js';

const none = async () => undefined;

/** A column of the type with the fields it needs. */
function column(type: ColumnType, extra: Partial<Column> = {}): Column {
  const needs = type === 'path' ? { path: 'a' } : type === 'template' ? { template: { language: 'jsonnet' as const, content: '1' } } : {};
  return { type, name: 'c', ...needs, ...extra };
}

async function refusal(columns: Column[]): Promise<string> {
  const err = await checkColumns(columns, none).then(() => undefined, (e: unknown) => e);
  expect(err).toBeInstanceOf(DomainError);
  expect((err as DomainError).code).toBe('badRequest');
  return (err as DomainError).message;
}

describe('checkColumns: data types', () => {
  it.each(COLUMN_TYPES.flatMap((type) => BASE_TYPES.map((dataType) => [type, dataType] as const)))('%s column with dataType %s', async (type, dataType) => {
    const allowed = DATA_TYPES_OF[type].includes(dataType);
    if (allowed) await expect(checkColumns([column(type, { dataType })], none)).resolves.toBeUndefined();
    else expect(await refusal([column(type, { dataType })])).toMatch(new RegExp(`^Column "c" of type "${type}" cannot have the dataType "${dataType}"`));
  });

  it('says which types a column type may have', async () => {
    expect(await refusal([column('uuid', { dataType: 'INTEGER' })])).toBe('Column "c" of type "uuid" cannot have the dataType "INTEGER": its values are STRING.');
    expect(await refusal([column('datetime', { dataType: 'DATE' })])).toBe('Column "c" of type "datetime" cannot have the dataType "DATE": it may be STRING or TIMESTAMP.');
  });
});

describe('checkColumns: primary keys', () => {
  it.each<ColumnType>(['path', 'template', 'uuid', 'datetime', 'ip'])('a %s column may be part of the key', async (type) => {
    await expect(checkColumns([column(type, { primaryKey: true })], none)).resolves.toBeUndefined();
  });

  it.each<ColumnType>(['body', 'headers'])('a %s column may not: its values have no size limit', async (type) => {
    expect(await refusal([column(type, { primaryKey: true })])).toMatch(new RegExp(`^Column "c" of type "${type}" cannot be part of the primary key: its values have no size limit`));
  });

  it('a JSON column may not', async () => {
    expect(await refusal([column('path', { dataType: 'JSON', primaryKey: true })])).toBe('Column "c" of dataType "JSON" cannot be part of the primary key: JSON values cannot be compared as a key is.');
  });

  it('a key has 32 columns at most', async () => {
    const columns = (n: number) => Array.from({ length: n }, (_, i) => ({ ...column('path', { primaryKey: true }), name: `c${i}` }));
    await expect(checkColumns(columns(32), none)).resolves.toBeUndefined();
    expect(await refusal(columns(33))).toBe('The primary key has 33 columns; it may have 32 at most.');
  });

  it('primaryKeyOf lists the key columns in mapping order; primaryKey false is no key', () => {
    expect(primaryKeyOf([column('path', { name: 'b', primaryKey: true }), column('uuid', { name: 'x', primaryKey: false }), column('ip', { name: 'a', primaryKey: true })])).toEqual(['b', 'a']);
  });
});
