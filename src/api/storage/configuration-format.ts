import type {
  Configuration, ConfigurationRow, ConfigurationVersion, ConfigurationWithRows, VersionInfo,
} from '../../storage/configurations/model.js';
import type {
  ConfigurationJson, ConfigurationListItemJson, ConfigurationRowJson, ConfigurationVersionJson,
} from '../../contract/storage-configurations.js';
import { storageDate } from './format.js';

/**
 * Configuration JSON shapes of the Storage API: the API contract's
 * (src/contract/storage-configurations.ts). These routes' response schemas below are strict
 * (they serialise exactly what they list); test/unit/repository/contract-schemas.test.ts checks
 * them against the contract's types.
 */

function currentVersionJson(v: VersionInfo): ConfigurationJson['currentVersion'] {
  return {
    created: storageDate(v.created),
    creatorToken: v.creatorToken,
    changeDescription: v.changeDescription,
    versionIdentifier: v.versionIdentifier,
  };
}

export function rowJson(row: ConfigurationRow): ConfigurationRowJson {
  return {
    id: row.id,
    name: row.name,
    description: row.description,
    configuration: row.configuration,
    state: row.state,
    isDisabled: row.isDisabled,
    version: row.version,
    created: storageDate(row.created),
    creatorToken: row.creatorToken,
    changeDescription: row.changeDescription,
  };
}

export interface ConfigurationJsonOptions {
  configuration?: boolean;
  rows?: boolean;
  state?: boolean;
}

/** The configuration as create, detail and lists show it; `include` trims the component list's items. */
export function configurationJson(config: Configuration | ConfigurationWithRows): ConfigurationJson;
export function configurationJson(config: Configuration | ConfigurationWithRows, include: ConfigurationJsonOptions): ConfigurationListItemJson;
export function configurationJson(config: Configuration | ConfigurationWithRows, include: ConfigurationJsonOptions = {}): ConfigurationListItemJson {
  const withRows = include.rows ?? 'rows' in config;
  return {
    id: config.id,
    name: config.name,
    description: config.description,
    created: storageDate(config.created),
    creatorToken: config.creatorToken,
    version: config.current.version,
    changeDescription: config.current.changeDescription,
    isDisabled: config.isDisabled,
    isDeleted: config.isDeleted,
    ...(include.configuration ?? true ? { configuration: config.configuration } : {}),
    ...(include.state ?? true ? { state: config.state } : {}),
    currentVersion: currentVersionJson(config.current),
    ...(withRows && 'rows' in config ? { rowsSortOrder: [] as string[], rows: config.rows.map(rowJson) } : {}),
  };
}

export function versionJson(v: ConfigurationVersion, withContent: boolean): ConfigurationVersionJson {
  return {
    version: v.version,
    created: storageDate(v.created),
    creatorToken: v.creatorToken,
    changeDescription: v.changeDescription,
    versionIdentifier: v.versionIdentifier,
    isDeleted: v.isDeleted,
    name: v.name,
    description: v.description,
    isDisabled: v.isDisabled,
    ...(withContent ? { configuration: v.configuration, rows: v.rows.map(rowJson) } : {}),
  };
}

const creatorTokenSchema = {
  type: 'object',
  properties: { id: { type: 'integer' }, description: { type: 'string' } },
} as const;

const freeObject = { type: 'object', additionalProperties: true } as const;

export const rowSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    configuration: freeObject,
    state: freeObject,
    isDisabled: { type: 'boolean' },
    version: { type: 'integer' },
    created: { type: 'string' },
    creatorToken: creatorTokenSchema,
    changeDescription: { type: 'string' },
  },
} as const;

export const configurationSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    created: { type: 'string', description: 'e.g. 2024-01-31T12:00:00+0000' },
    creatorToken: creatorTokenSchema,
    version: { type: 'integer' },
    changeDescription: { type: 'string' },
    isDisabled: { type: 'boolean' },
    isDeleted: { type: 'boolean' },
    configuration: freeObject,
    state: freeObject,
    currentVersion: {
      type: 'object',
      properties: {
        created: { type: 'string' },
        creatorToken: creatorTokenSchema,
        changeDescription: { type: 'string' },
        versionIdentifier: { type: 'string' },
      },
    },
    rowsSortOrder: { type: 'array', items: { type: 'string' } },
    rows: { type: 'array', items: rowSchema },
  },
} as const;

export const versionSchema = {
  type: 'object',
  properties: {
    version: { type: 'integer' },
    created: { type: 'string' },
    creatorToken: creatorTokenSchema,
    changeDescription: { type: 'string' },
    versionIdentifier: { type: 'string' },
    isDeleted: { type: 'boolean' },
    name: { type: 'string' },
    description: { type: 'string' },
    isDisabled: { type: 'boolean' },
    configuration: freeObject,
    rows: { type: 'array', items: rowSchema },
  },
} as const;

export const componentSchema = {
  type: 'object',
  properties: {
    id: { type: 'string' },
    type: { type: 'string' },
    name: { type: 'string' },
    description: { type: 'string' },
    configurations: { type: 'array', items: configurationSchema },
  },
} as const;
