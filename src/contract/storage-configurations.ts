/**
 * The API contract (see stream-sources.ts for why the types are the source): the Storage API's
 * components and their configurations, rows and versions (
 * src/api/storage/configuration-format.ts builds them). Unlike most answers these routes have
 * strict response schemas (configuration-format.ts: configurationSchema, rowSchema,
 * versionSchema, componentSchema), which serialise exactly the properties they list;
 * test/unit/repository/contract-schemas.test.ts checks them against these types.
 */

/** Who made a change: the token's id and description at that time. */
export interface CreatorTokenJson {
  id: number;
  description: string;
}

/** A configuration row (GET .../configs/{configId}/rows, and in its configuration's `rows`). */
export interface ConfigurationRowJson {
  id: string;
  name: string;
  description: string;
  configuration: Record<string, unknown>;
  state: Record<string, unknown>;
  isDisabled: boolean;
  version: number;
  /** Storage date. */
  created: string;
  creatorToken: CreatorTokenJson;
  changeDescription: string;
}

/** A configuration as create, detail and the component's list answer it. */
export interface ConfigurationJson {
  id: string;
  name: string;
  description: string;
  /** Storage date, e.g. 2024-01-31T12:00:00+0000. */
  created: string;
  creatorToken: CreatorTokenJson;
  /** The current version's number and change description (also in `currentVersion`). */
  version: number;
  changeDescription: string;
  isDisabled: boolean;
  isDeleted: boolean;
  configuration: Record<string, unknown>;
  state: Record<string, unknown>;
  currentVersion: { created: string; creatorToken: CreatorTokenJson; changeDescription: string; versionIdentifier: string };
  /** With its rows (not on create): the rows in creation order, and an empty sort order. */
  rowsSortOrder?: string[];
  rows?: ConfigurationRowJson[];
}

/**
 * A configuration in the component list (GET /v2/storage/components): its configuration, state
 * and rows only when `include=configuration,state,rows` asks for them.
 */
export type ConfigurationListItemJson = Omit<ConfigurationJson, 'configuration' | 'state'> & Partial<Pick<ConfigurationJson, 'configuration' | 'state'>>;

/** A component with its configurations, as GET /v2/storage/components lists it. */
export interface ComponentJson {
  id: string;
  type: string;
  name: string;
  description: string;
  configurations: ConfigurationListItemJson[];
}

/**
 * A version of a configuration (GET .../configs/{configId}/versions and .../versions/{version});
 * its content (`configuration`, `rows`) on the detail, and in the list with include=configuration.
 */
export interface ConfigurationVersionJson {
  version: number;
  created: string;
  creatorToken: CreatorTokenJson;
  changeDescription: string;
  versionIdentifier: string;
  isDeleted: boolean;
  name: string;
  description: string;
  isDisabled: boolean;
  configuration?: Record<string, unknown>;
  rows?: ConfigurationRowJson[];
}
