/**
 * The request bodies' JSON schemas (src/api/stream/schemas.ts) against their types in the API
 * contract (src/contract/): the types are the source (src/contract/stream-sources.ts says why),
 * and each schema must name exactly the type's properties and require exactly its required
 * ones. Checked by the compiler (`npm run typecheck` covers test/): a drift is a type error on
 * the line of the schema; the test itself only states that the file compiled.
 */
import { describe, expect, it } from 'vitest';
import { columnSchema, settingsPatchSchema, sinkCreateSchema, sinkUpdateSchema, sourceCreateSchema, sourceUpdateSchema } from '../../../src/api/stream/schemas.js';
import type { ColumnBody, SinkCreate, SinkUpdate, SourceCreate, SourceUpdate } from '../../../src/contract/stream-sources.js';
import type { SettingsPatch } from '../../../src/contract/settings.js';

type Properties<S> = S extends { properties: infer P } ? keyof P : never;
type RequiredOf<S> = S extends { required: readonly (infer R)[] } ? R : never;
type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** Compiles only when the schema names the type's properties and requires its required ones. */
function matches<T, S>(_schema: S, _properties: Same<Properties<S>, keyof T>, _required: Same<RequiredOf<S>, RequiredKeys<T>>): true {
  return true;
}

describe('the request schemas match the contract types', () => {
  it('sources', () => {
    expect(matches<SourceCreate, typeof sourceCreateSchema>(sourceCreateSchema, true, true)).toBe(true);
    expect(matches<SourceUpdate, typeof sourceUpdateSchema>(sourceUpdateSchema, true, true)).toBe(true);
  });

  it('sinks and their columns', () => {
    // `table` is required by the type but not by the schema: the route checks it after `type`,
    // as the reference reports a bad type first (schemas.ts).
    expect(matches<Omit<SinkCreate, 'table'> & Partial<Pick<SinkCreate, 'table'>>, typeof sinkCreateSchema>(sinkCreateSchema, true, true)).toBe(true);
    expect(matches<SinkUpdate, typeof sinkUpdateSchema>(sinkUpdateSchema, true, true)).toBe(true);
    expect(matches<ColumnBody, typeof columnSchema>(columnSchema, true, true)).toBe(true);
  });

  it('settings', () => {
    expect(matches<SettingsPatch, typeof settingsPatchSchema>(settingsPatchSchema, true, true)).toBe(true);
  });
});
