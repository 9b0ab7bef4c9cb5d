/**
 * JSON schemas of the Storage API responses. They validate nothing on the way out but decide
 * what is serialised (fields not listed here are dropped) and feed the OpenAPI document.
 */

import { BASE_TYPES } from '../../model/definition.js';

export const errorSchema = {
  type: 'object',
  description: 'Storage API error',
  required: ['error', 'code', 'status'],
  properties: {
    error: { type: 'string' },
    code: { type: 'string' },
    status: { type: 'string', enum: ['error'] },
    exceptionId: { type: 'string' },
    errors: {
      type: 'array',
      items: { type: 'object', properties: { key: { type: 'string' }, message: { type: 'string' } } },
    },
  },
} as const;

/** The error responses every authenticated route can give. */
export const errorResponses = {
  '4xx': errorSchema,
  '5xx': errorSchema,
} as const;

/**
 * The path parameters of a route that is registered both under /v2/storage and under
 * /v2/storage/branch/{branchId}: `branchId` only where the path has it (`prefix`: the plugin's
 * app.prefix), so that the OpenAPI document declares exactly the parameters of each path.
 * Every value is a string, none is required: validating them changes nothing.
 */
export function pathParams(prefix: string, ...names: string[]) {
  const all = prefix.includes(':branchId') ? ['branchId', ...names] : names;
  return { type: 'object', properties: Object.fromEntries(all.map((name) => [name, { type: 'string' }])) } as const;
}

const date = { type: 'string', description: 'e.g. 2024-01-31T12:00:00+0000' } as const;
const nullableDate = { type: ['string', 'null'], description: 'e.g. 2024-01-31T12:00:00+0000, or null' } as const;

const metadataSchema = {
  type: 'array',
  items: {
    type: 'object',
    properties: {
      id: { type: 'string' },
      key: { type: 'string' },
      value: { type: 'string' },
      provider: { type: 'string' },
      timestamp: date,
    },
  },
} as const;

export const tokenSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    token: { type: 'string', description: 'Only when the caller holds it: on create and verify.' },
    description: { type: 'string' },
    created: date,
    isMasterToken: { type: 'boolean' },
    canManageBuckets: { type: 'boolean' },
    canManageTokens: { type: 'boolean' },
    canReadAllFileUploads: { type: 'boolean' },
    canPurgeTrash: { type: 'boolean' },
    expires: nullableDate,
    isExpired: { type: 'boolean' },
    isDisabled: { type: 'boolean' },
    bucketPermissions: {
      type: 'object',
      additionalProperties: { type: 'string', enum: ['read', 'write', 'manage'] },
    },
    componentAccess: { type: 'array', items: { type: 'string' } },
    admin: {
      type: 'object',
      properties: { id: { type: 'integer' }, name: { type: 'string' }, role: { type: 'string' } },
    },
    owner: { type: 'object', properties: { id: { type: 'integer' }, name: { type: 'string' } } },
  },
} as const;

export const bucketSchema = {
  type: 'object',
  properties: {
    uri: { type: 'string' },
    id: { type: 'string' },
    name: { type: 'string' },
    displayName: { type: 'string' },
    stage: { type: 'string', enum: ['in', 'out'] },
    description: { type: 'string' },
    tables: { type: 'string' },
    created: date,
    isReadOnly: { type: 'boolean' },
    backend: { type: 'string' },
    metadata: metadataSchema,
  },
} as const;

export const tableSchema = {
  type: 'object',
  properties: {
    uri: { type: 'string' },
    id: { type: 'string' },
    name: { type: 'string' },
    displayName: { type: 'string' },
    transactional: { type: 'boolean' },
    primaryKey: { type: 'array', items: { type: 'string' } },
    created: date,
    lastImportDate: nullableDate,
    lastChangeDate: date,
    rowsCount: { type: 'integer' },
    isAlias: { type: 'boolean' },
    isTyped: { type: 'boolean', description: 'A typed table (a column with a base type); absent on an untyped table.' },
    definition: {
      type: 'object',
      description: 'A typed table: its primary key and its columns\' native types and base types.',
      properties: {
        primaryKeysNames: { type: 'array', items: { type: 'string' } },
        columns: {
          type: 'array',
          items: {
            type: 'object',
            properties: {
              name: { type: 'string' },
              definition: {
                type: 'object',
                properties: { type: { type: 'string' }, nullable: { type: 'boolean' }, length: { type: 'string' } },
              },
              basetype: { type: 'string', enum: BASE_TYPES },
            },
          },
        },
      },
    },
    columns: { type: 'array', items: { type: 'string' }, description: 'On detail, or with include=columns.' },
    bucket: {
      type: 'object',
      properties: {
        id: { type: 'string' },
        stage: { type: 'string' },
        name: { type: 'string' },
        displayName: { type: 'string' },
      },
    },
    metadata: metadataSchema,
  },
} as const;
