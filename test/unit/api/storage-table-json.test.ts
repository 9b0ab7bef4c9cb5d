/**
 * The Storage API's table JSON (src/api/storage/format.ts) for typed tables of either target:
 * Keboola Storage's `isTyped` and `definition`, the native type split into type and length.
 */
import { describe, expect, it } from 'vitest';
import { tableDefinitionJson, tableJson } from '../../../src/api/storage/format.js';
import type { Bucket, Table } from '../../../src/storage/tables.js';

const bucket: Bucket = { id: 'in.c-b', stage: 'in', name: 'c-b', created: '2026-01-01T00:00:00.000Z', metadata: {} };
const table = (definitions: Table['definitions'], primaryKey: string[] = []): Table => ({
  id: 'in.c-b.t', bucketId: 'in.c-b', name: 't', columns: definitions.map((d) => d.name), definitions, primaryKey,
  created: '2026-01-01T00:00:00.000Z', lastImportDate: null, rowsCount: 0, metadata: {},
});

describe('the table JSON of typed tables', () => {
  it('answers PostgreSQL\'s native types upper case, with the length of a constrained one', () => {
    const t = table([
      { name: 'id', type: 'INTEGER', nativeType: 'bigint', nullable: false },
      { name: 'n', type: 'NUMERIC', nativeType: 'numeric(38,9)', nullable: true },
      { name: 'at', type: 'TIMESTAMP', nativeType: 'timestamp with time zone', nullable: true },
      { name: 'u', nativeType: 'text', nullable: false },
      { name: 'odd', nativeType: 'integer', nullable: true },
    ], ['id']);
    expect(tableDefinitionJson(t)).toEqual({
      primaryKeysNames: ['id'],
      columns: [
        { name: 'id', definition: { type: 'BIGINT', nullable: false }, basetype: 'INTEGER' },
        { name: 'n', definition: { type: 'NUMERIC', nullable: true, length: '38,9' }, basetype: 'NUMERIC' },
        { name: 'at', definition: { type: 'TIMESTAMP WITH TIME ZONE', nullable: true }, basetype: 'TIMESTAMP' },
        { name: 'u', definition: { type: 'TEXT', nullable: false }, basetype: 'STRING' },
        // A native type with no base type (made behind Sluice's back): no basetype.
        { name: 'odd', definition: { type: 'INTEGER', nullable: true } },
      ],
    });
    expect(tableJson({ publicApiUrl: 'http://x' }, t, bucket)).toMatchObject({ isTyped: true, primaryKey: ['id'] });
  });

  it('answers an untyped table (keyed or not) without isTyped and definition', () => {
    const json = tableJson({ publicApiUrl: 'http://x' }, table([{ name: 'k', nativeType: 'VARCHAR', nullable: false }], ['k']), bucket);
    expect(json.primaryKey).toEqual(['k']);
    expect('isTyped' in json).toBe(false);
    expect('definition' in json).toBe(false);
  });
});
