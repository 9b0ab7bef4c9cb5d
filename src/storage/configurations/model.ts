/** Component configurations as stored. */

export type JsonObject = Record<string, unknown>;

/** Who made a change: the token's id and description at that time. */
export interface CreatorToken {
  id: number;
  description: string;
}

/** The metadata of one version of a configuration (or row). */
export interface VersionInfo {
  version: number;
  created: string;
  creatorToken: CreatorToken;
  changeDescription: string;
  versionIdentifier: string;
}

export interface ConfigurationRow {
  id: string;
  name: string;
  description: string;
  configuration: JsonObject;
  state: JsonObject;
  isDisabled: boolean;
  version: number;
  created: string;
  creatorToken: CreatorToken;
  changeDescription: string;
}

export interface Configuration {
  componentId: string;
  id: string;
  name: string;
  description: string;
  configuration: JsonObject;
  state: JsonObject;
  isDisabled: boolean;
  isDeleted: boolean;
  created: string;
  creatorToken: CreatorToken;
  /** The current version: its number, time, author and change description. */
  current: VersionInfo;
}

/** A configuration together with its rows (rows in creation order). */
export interface ConfigurationWithRows extends Configuration {
  rows: ConfigurationRow[];
}

/** A stored snapshot of a configuration version: what rollback restores. */
export interface ConfigurationVersion extends VersionInfo {
  name: string;
  description: string;
  configuration: JsonObject;
  isDisabled: boolean;
  isDeleted: boolean;
  rows: ConfigurationRow[];
}

/** Fields a create or update may set; undefined leaves a field as it is (or its default). */
export interface ConfigurationInput {
  name?: string;
  description?: string;
  configuration?: JsonObject;
  state?: JsonObject;
  isDisabled?: boolean;
  changeDescription?: string;
}

export interface NewConfiguration extends ConfigurationInput {
  name: string;
  /** A custom id; generated when absent. */
  configurationId?: string;
}

export interface RowInput {
  name?: string;
  description?: string;
  configuration?: JsonObject;
  state?: JsonObject;
  isDisabled?: boolean;
  changeDescription?: string;
}

export interface NewRow extends RowInput {
  rowId?: string;
}
