/**
 * The JSON schemas of the routes against their types in the API contract (src/contract/): the
 * types are the source (src/contract/stream-sources.ts says why). Checked by the compiler
 * (`npm run typecheck` covers test/): a drift is a type error on the line of the check; the
 * test itself only states that the file compiled.
 *
 * Request bodies: each schema must name exactly the type's properties and require exactly its
 * required ones.
 *
 * Answers: most answers' response schemas are loose (documentation only), but a few routes
 * have strict ones (the Storage API's configurations, exports and files), and fastify
 * serialises an answer through its schema: it drops the properties the schema does not list and
 * coerces each value to the schema's type. For those, the schema must list exactly the type's
 * properties, at every level of nested objects and arrays, and each of the type's values must
 * be of the schema's type (and within its enum). A schema with `additionalProperties: true`
 * lets unlisted properties through: it may list fewer than the type, never others.
 */
import { describe, expect, it } from 'vitest';
import {
  columnSchema, filterSchema, replayBodySchema, settingsPatchSchema, sinkCreateSchema, sinkUpdateSchema, sourceCreateSchema, sourceUpdateSchema,
} from '../../../src/api/stream/schemas.js';
import type { componentSchema, configurationSchema, rowSchema, versionSchema } from '../../../src/api/storage/configuration-format.js';
import type { fileSchema, jobSchema as storageJobSchema } from '../../../src/api/storage/exports.js';
import type { jobSchema as queueJobSchema } from '../../../src/api/queue/index.js';
import type { ColumnBody, SinkCreate, SinkUpdate, SourceCreate, SourceUpdate } from '../../../src/contract/stream-sources.js';
import type { SettingsPatch } from '../../../src/contract/settings.js';
import type { ReplayBody } from '../../../src/contract/failures.js';
import type { MappingFilter } from '../../../src/model/definition.js';
import type {
  ComponentJson, ConfigurationJson, ConfigurationRowJson, ConfigurationVersionJson,
} from '../../../src/contract/storage-configurations.js';
import type { StorageFileJson, StorageJobJson } from '../../../src/contract/storage-jobs.js';
import type { JobJson } from '../../../src/contract/queue-jobs.js';
import { mappingProposalBodySchema } from '../../../src/api/stream/mapping-proposal.js';
import type { MappingProposalBody } from '../../../src/contract/mapping-proposal.js';

type Properties<S> = S extends { properties: infer P } ? keyof P : never;
type RequiredOf<S> = S extends { required: readonly (infer R)[] } ? R : never;
type RequiredKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? never : K }[keyof T];
type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;

/** Compiles only when the schema names the type's properties and requires its required ones. */
function matches<T, S>(_schema: S, _properties: Same<Properties<S>, keyof T>, _required: Same<RequiredOf<S>, RequiredKeys<T>>): true {
  return true;
}

/** The values a JSON schema `type` name serialises as (fast-json-stringify coerces to it). */
type JsonValue<N> =
  N extends 'string' ? string
    : N extends 'integer' | 'number' ? number
      : N extends 'boolean' ? boolean
        : N extends 'null' ? null
          : N extends 'object' ? object
            : N extends 'array' ? readonly unknown[]
              : never;

/** What a schema lets through: its enum, or its type (one name or a list of them); anything without either. */
type SchemaValue<S> =
  S extends { enum: readonly (infer E)[] } ? E
    : S extends { type: infer N } ? JsonValue<N extends readonly (infer E)[] ? E : N>
      : unknown;

/**
 * Where a response schema and a type differ, as messages naming the path (never: they agree).
 * An optional property may be absent (answer schemas require nothing), so `undefined` is not a
 * value to fit.
 */
type Mismatch<S, T, Path extends string = ''> =
  [Exclude<T, undefined>] extends [SchemaValue<S>]
    ? S extends { properties: infer P }
      ? PropertiesMismatch<P, NonNullable<T>, Path, S extends { additionalProperties: true } ? true : false>
      : S extends { items: infer I }
        ? NonNullable<T> extends readonly (infer E)[] ? Mismatch<I, E, `${Path}[]`> : never
        : never
    : `${Path}: the type's values are not of the schema's type`;

type PropertiesMismatch<P, T, Path extends string, Open extends boolean> =
  | `${Path}.${Exclude<keyof P, keyof T> & string}: in the schema, not in the type`
  | (Open extends true ? never : `${Path}.${Exclude<keyof T, keyof P> & string}: in the type, not in the schema (fastify would drop it)`)
  | { [K in keyof P & keyof T & string]: Mismatch<P[K], T[K], `${Path}.${K}`> }[keyof P & keyof T & string];

/** Compiles only when the response schema serialises the type as it is (else: the mismatches, as the parameter's type). */
function answers<T, S>(_fits: Mismatch<S, T> extends infer M extends string ? ([M] extends [never] ? true : M) : never): true {
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
    expect(matches<MappingFilter, typeof filterSchema>(filterSchema, true, true)).toBe(true);
  });

  it('settings', () => {
    expect(matches<SettingsPatch, typeof settingsPatchSchema>(settingsPatchSchema, true, true)).toBe(true);
  });

  it('replay', () => {
    expect(matches<ReplayBody, typeof replayBodySchema>(replayBodySchema, true, true)).toBe(true);
  });

  it('the mapping proposal', () => {
    expect(matches<MappingProposalBody, typeof mappingProposalBodySchema>(mappingProposalBodySchema, true, true)).toBe(true);
  });
});

describe('the strict response schemas match the contract types', () => {
  it('configurations, their rows and versions, the component list', () => {
    expect(answers<ConfigurationJson, typeof configurationSchema>(true)).toBe(true);
    expect(answers<ConfigurationRowJson, typeof rowSchema>(true)).toBe(true);
    expect(answers<ConfigurationVersionJson, typeof versionSchema>(true)).toBe(true);
    expect(answers<ComponentJson, typeof componentSchema>(true)).toBe(true);
  });

  it('Storage jobs and files', () => {
    expect(answers<StorageJobJson, typeof storageJobSchema>(true)).toBe(true);
    expect(answers<StorageFileJson, typeof fileSchema>(true)).toBe(true);
  });

  it('Queue jobs (the schema lists some properties and lets the others through)', () => {
    expect(answers<JobJson, typeof queueJobSchema>(true)).toBe(true);
  });
});
