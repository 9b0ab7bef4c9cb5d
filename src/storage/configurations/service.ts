import { v7 as uuidv7 } from 'uuid';
import type { KeySpace, MetadataReader, MetadataStore, MetadataTx } from '../../ports/metadata-store.js';
import { DomainError } from '../../domain-errors.js';
import type { Token } from '../token-model.js';
import type { Secrets } from '../secrets.js';
import { sequenceIds } from '../id-sequence.js';
import type { IdAllocator } from '../../ports/id-allocator.js';
import { canonicalJson } from './canonical-json.js';
import {
  configurationAlreadyExists, configurationNotFound, rowAlreadyExists, rowNotFound, versionNotFound,
} from './errors.js';
import type {
  Configuration, ConfigurationInput, ConfigurationRow, ConfigurationVersion, ConfigurationWithRows, CreatorToken,
  JsonObject, NewConfiguration, NewRow, RowInput, VersionInfo,
} from './model.js';

const CONFIG = 'storage/configs/';
const ROW = 'storage/configRows/';
const VERSION = 'storage/configVersions/';
/** Configurations, their rows and versions, shared by the cluster's nodes. */
export const CONFIGURATION_KEY_SPACES: readonly KeySpace[] = [
  { prefix: CONFIG, shared: true },
  { prefix: ROW, shared: true },
  { prefix: VERSION, shared: true },
];

/** Component ids as Keboola writes them: "keboola.ex-generic-v2", "keboola.variables". */
const COMPONENT_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
/** Custom configuration and row ids ("main-1"); never "/" (they are key segments). */
const OBJECT_ID = /^[A-Za-z0-9_.-]{1,128}$/;

/** A stored row keeps its creation order; `seq` is internal and never shown. */
type StoredRow = ConfigurationRow & { seq: number };

const configKey = (componentId: string, id: string) => `${CONFIG}${componentId}/${id}`;
const rowPrefix = (componentId: string, id: string) => `${ROW}${componentId}/${id}/`;
const versionPrefix = (componentId: string, id: string) => `${VERSION}${componentId}/${id}/`;
const versionKey = (componentId: string, id: string, version: number) =>
  versionPrefix(componentId, id) + String(version).padStart(10, '0');

export function validateComponentId(componentId: string): void {
  if (!COMPONENT_ID.test(componentId)) {
    throw new DomainError('invalid', 'storage.components.validation',
      `Invalid component id "${componentId}": use letters, digits, ".", "_" and "-" (e.g. "keboola.ex-generic-v2").`);
  }
}

function validateObjectId(kind: 'configurationId' | 'rowId', id: string): void {
  if (!OBJECT_ID.test(id)) {
    throw new DomainError('invalid', kind === 'rowId' ? 'storage.componentsRows.validation' : 'storage.components.validation',
      `Invalid parameters - ${kind}: "${id}" is not a valid id; use 1 to 128 letters, digits, ".", "_" or "-".`);
  }
}

function creator(token: Token): CreatorToken {
  return { id: Number(token.id), description: token.description };
}

/**
 * Component configurations and their rows in the metadata store, with Keboola's versioning:
 * create is version 1, every effective change (of the configuration or one of its rows) adds a
 * version with a snapshot of the configuration and its rows, a no-op update adds none. Delete is
 * soft (a version); deleting a deleted configuration purges it. Only the default branch exists.
 * The `#` values of configurations, rows and state are stored encrypted (`secrets`): whatever is
 * read back, versions included, holds only their ciphertext.
 */
export class ConfigurationService {
  constructor(
    private readonly store: MetadataStore,
    private readonly secrets: Secrets,
    private readonly ids: IdAllocator = sequenceIds,
  ) {}

  /** Ids of the components that have at least one configuration (deleted ones count when asked). */
  componentIds(isDeleted = false): string[] {
    const ids = new Set<string>();
    for (const { value } of this.store.list<Configuration>(CONFIG)) {
      if (value.isDeleted === isDeleted) ids.add(value.componentId);
    }
    return [...ids].sort();
  }

  /** The configurations of a component (or all), with rows, oldest first. */
  list(componentId?: string, isDeleted = false): ConfigurationWithRows[] {
    const prefix = componentId === undefined ? CONFIG : `${CONFIG}${componentId}/`;
    return this.store.list<Configuration>(prefix)
      .map((e) => e.value)
      .filter((c) => c.isDeleted === isDeleted)
      .sort((a, b) => a.created.localeCompare(b.created) || a.id.localeCompare(b.id))
      .map((c) => ({ ...c, rows: this.rows(this.store, c.componentId, c.id) }));
  }

  /** The live (not deleted) configuration with its rows; 404 when missing or deleted. */
  get(componentId: string, id: string): ConfigurationWithRows {
    const config = this.live(this.store, componentId, id);
    return { ...config, rows: this.rows(this.store, componentId, id) };
  }

  /** Like get, but undefined instead of 404 (job creation and variables use it). */
  find(componentId: string, id: string): ConfigurationWithRows | undefined {
    const config = this.store.get<Configuration>(configKey(componentId, id));
    if (!config || config.isDeleted) return undefined;
    return { ...config, rows: this.rows(this.store, componentId, id) };
  }

  create(componentId: string, input: NewConfiguration, token: Token): ConfigurationWithRows {
    validateComponentId(componentId);
    if (input.configurationId !== undefined) validateObjectId('configurationId', input.configurationId);
    return this.store.transact((tx) => {
      let id = input.configurationId;
      if (id === undefined) {
        do id = this.ids.next(tx, 'storage'); while (tx.get(configKey(componentId, id)) !== undefined);
      }
      const existing = tx.get<Configuration>(configKey(componentId, id));
      if (existing && !existing.isDeleted) throw configurationAlreadyExists(id);
      // A deleted configuration's id may be reused: the old one is purged first.
      if (existing) this.purge(tx, componentId, id);
      const now = new Date().toISOString();
      const config: Configuration = {
        componentId,
        id,
        name: input.name,
        description: input.description ?? '',
        configuration: this.secrets.seal(input.configuration ?? {}, 'configuration'),
        state: this.secrets.seal(input.state ?? {}, 'state'),
        isDisabled: input.isDisabled ?? false,
        isDeleted: false,
        created: now,
        creatorToken: creator(token),
        current: this.versionInfo(1, token, input.changeDescription || 'Configuration created', now),
      };
      this.commitVersion(tx, config, []);
      return { ...config, rows: [] };
    });
  }

  /** Applies the changed fields; a new version only when something versioned changed. */
  update(componentId: string, id: string, input: ConfigurationInput, token: Token): ConfigurationWithRows {
    return this.store.transact((tx) => {
      const config = this.live(tx, componentId, id);
      const rows = this.rows(tx, componentId, id);
      const next: Configuration = {
        ...config,
        name: input.name ?? config.name,
        description: input.description ?? config.description,
        configuration: this.sealed(input.configuration, 'configuration', config.configuration),
        isDisabled: input.isDisabled ?? config.isDisabled,
        // State is not versioned (it is the component's, not the user's).
        state: this.sealed(input.state, 'state', config.state),
      };
      if (versionedContent(next) !== versionedContent(config)) {
        next.current = this.versionInfo(config.current.version + 1, token, input.changeDescription || 'Configuration updated');
        this.commitVersion(tx, next, rows);
      } else {
        tx.put(configKey(componentId, id), next);
      }
      return { ...next, rows };
    });
  }

  /** Replaces the component's state; state is not versioned. */
  updateState(componentId: string, id: string, state: Record<string, unknown>): ConfigurationWithRows {
    return this.store.transact((tx) => {
      const current = this.live(tx, componentId, id);
      const next = { ...current, state: this.secrets.seal(state, 'state', current.state) };
      tx.put(configKey(componentId, id), next);
      return { ...next, rows: this.rows(tx, componentId, id) };
    });
  }

  /** Soft delete (a new version); a configuration already deleted is purged for good. */
  delete(componentId: string, id: string, token: Token): void {
    this.store.transact((tx) => {
      const config = tx.get<Configuration>(configKey(componentId, id));
      if (!config) throw configurationNotFound(id);
      if (config.isDeleted) {
        this.purge(tx, componentId, id);
        return;
      }
      const next: Configuration = {
        ...config,
        isDeleted: true,
        current: this.versionInfo(config.current.version + 1, token, 'Configuration deleted'),
      };
      this.commitVersion(tx, next, this.rows(tx, componentId, id));
    });
  }

  restore(componentId: string, id: string, token: Token): ConfigurationWithRows {
    return this.store.transact((tx) => {
      const config = tx.get<Configuration>(configKey(componentId, id));
      if (!config || !config.isDeleted) throw new DomainError('notFound', 'storage.configuration.notFound', `Deleted configuration "${id}" not found`);
      const next: Configuration = {
        ...config,
        isDeleted: false,
        current: this.versionInfo(config.current.version + 1, token, 'Configuration restored'),
      };
      const rows = this.rows(tx, componentId, id);
      this.commitVersion(tx, next, rows);
      return { ...next, rows };
    });
  }

  /** Versions, newest first. */
  versions(componentId: string, id: string): ConfigurationVersion[] {
    this.live(this.store, componentId, id);
    return this.store.list<ConfigurationVersion>(versionPrefix(componentId, id)).map((e) => e.value).reverse();
  }

  version(componentId: string, id: string, version: string): ConfigurationVersion {
    this.live(this.store, componentId, id);
    const n = Number(version);
    const found = Number.isInteger(n) && n > 0 ? this.store.get<ConfigurationVersion>(versionKey(componentId, id, n)) : undefined;
    if (!found) throw versionNotFound(version);
    return found;
  }

  /** Restores the content and rows of version `version` as a new version. */
  rollback(componentId: string, id: string, version: string, token: Token, changeDescription?: string): ConfigurationWithRows {
    return this.store.transact((tx) => {
      const config = this.live(tx, componentId, id);
      const n = Number(version);
      const snapshot = Number.isInteger(n) && n > 0 ? tx.get<ConfigurationVersion>(versionKey(componentId, id, n)) : undefined;
      if (!snapshot) throw versionNotFound(version);
      const next: Configuration = {
        ...config,
        name: snapshot.name,
        description: snapshot.description,
        configuration: snapshot.configuration,
        isDisabled: snapshot.isDisabled,
        current: this.versionInfo(config.current.version + 1, token, changeDescription || `Rollback to version ${n}`),
      };
      for (const { key } of tx.list(rowPrefix(componentId, id))) tx.delete(key);
      snapshot.rows.forEach((row, i) => tx.put(rowPrefix(componentId, id) + row.id, { ...row, seq: i + 1 }));
      this.commitVersion(tx, next, snapshot.rows);
      return { ...next, rows: snapshot.rows };
    });
  }

  /** A new configuration with the content and rows of a version of this one. */
  copyVersion(componentId: string, id: string, version: string, input: ConfigurationInput, token: Token): ConfigurationWithRows {
    return this.store.transact((tx) => {
      const source = this.live(tx, componentId, id);
      const n = Number(version);
      const snapshot = Number.isInteger(n) && n > 0 ? tx.get<ConfigurationVersion>(versionKey(componentId, id, n)) : undefined;
      if (!snapshot) throw versionNotFound(version);
      let copyId: string;
      do copyId = this.ids.next(tx, 'storage'); while (tx.get(configKey(componentId, copyId)) !== undefined);
      const now = new Date().toISOString();
      const changeDescription = input.changeDescription || `Copied from configuration "${source.name}" (${id}) version ${n}`;
      const copy: Configuration = {
        componentId,
        id: copyId,
        name: input.name ?? snapshot.name,
        description: input.description ?? snapshot.description,
        configuration: snapshot.configuration,
        state: {},
        isDisabled: snapshot.isDisabled,
        isDeleted: false,
        created: now,
        creatorToken: creator(token),
        current: this.versionInfo(1, token, changeDescription, now),
      };
      const rows = snapshot.rows.map((row) => ({ ...row, state: {} }));
      rows.forEach((row, i) => tx.put(rowPrefix(componentId, copyId) + row.id, { ...row, seq: i + 1 }));
      this.commitVersion(tx, copy, rows);
      return { ...copy, rows };
    });
  }

  listRows(componentId: string, id: string): ConfigurationRow[] {
    this.live(this.store, componentId, id);
    return this.rows(this.store, componentId, id);
  }

  getRow(componentId: string, id: string, rowId: string): ConfigurationRow {
    this.live(this.store, componentId, id);
    const row = this.store.get<StoredRow>(rowPrefix(componentId, id) + rowId);
    if (!row) throw rowNotFound(rowId);
    return row;
  }

  /** A row of a live configuration, or undefined (variables read their values rows this way). */
  findRow(componentId: string, id: string, rowId: string): ConfigurationRow | undefined {
    if (!this.find(componentId, id)) return undefined;
    return this.store.get<StoredRow>(rowPrefix(componentId, id) + rowId);
  }

  createRow(componentId: string, id: string, input: NewRow, token: Token): { row: ConfigurationRow; config: Configuration } {
    if (input.rowId !== undefined) validateObjectId('rowId', input.rowId);
    return this.store.transact((tx) => {
      const config = this.live(tx, componentId, id);
      let rowId = input.rowId;
      if (rowId === undefined) {
        do rowId = this.ids.next(tx, 'storage'); while (tx.get(rowPrefix(componentId, id) + rowId) !== undefined);
      } else if (tx.get(rowPrefix(componentId, id) + rowId) !== undefined) {
        throw rowAlreadyExists(rowId);
      }
      const existing = this.rows(tx, componentId, id) as StoredRow[];
      const now = new Date().toISOString();
      const changeDescription = input.changeDescription || `Row ${rowId} added`;
      const row: StoredRow = {
        id: rowId,
        name: input.name ?? '',
        description: input.description ?? '',
        configuration: this.secrets.seal(input.configuration ?? {}, 'configuration'),
        state: this.secrets.seal(input.state ?? {}, 'state'),
        isDisabled: input.isDisabled ?? false,
        version: 1,
        created: now,
        creatorToken: creator(token),
        changeDescription,
        seq: existing.reduce((max, r) => Math.max(max, r.seq ?? 0), 0) + 1,
      };
      tx.put(rowPrefix(componentId, id) + rowId, row);
      const next = { ...config, current: this.versionInfo(config.current.version + 1, token, changeDescription, now) };
      this.commitVersion(tx, next, [...existing, row]);
      return { row, config: next };
    });
  }

  updateRow(componentId: string, id: string, rowId: string, input: RowInput, token: Token): ConfigurationRow {
    return this.store.transact((tx) => {
      const config = this.live(tx, componentId, id);
      const row = tx.get<StoredRow>(rowPrefix(componentId, id) + rowId);
      if (!row) throw rowNotFound(rowId);
      const next: StoredRow = {
        ...row,
        name: input.name ?? row.name,
        description: input.description ?? row.description,
        configuration: this.sealed(input.configuration, 'configuration', row.configuration),
        isDisabled: input.isDisabled ?? row.isDisabled,
        state: this.sealed(input.state, 'state', row.state),
      };
      if (versionedContent(next) === versionedContent(row)) {
        tx.put(rowPrefix(componentId, id) + rowId, next);
        return next;
      }
      const changeDescription = input.changeDescription || `Row ${rowId} changed`;
      next.version = row.version + 1;
      next.changeDescription = changeDescription;
      next.creatorToken = creator(token);
      tx.put(rowPrefix(componentId, id) + rowId, next);
      const nextConfig = { ...config, current: this.versionInfo(config.current.version + 1, token, changeDescription) };
      this.commitVersion(tx, nextConfig, this.rows(tx, componentId, id));
      return next;
    });
  }

  /** Replaces a row's state; state is not versioned. */
  updateRowState(componentId: string, id: string, rowId: string, state: Record<string, unknown>): ConfigurationRow {
    return this.store.transact((tx) => {
      this.live(tx, componentId, id);
      const row = tx.get<StoredRow>(rowPrefix(componentId, id) + rowId);
      if (!row) throw rowNotFound(rowId);
      const next = { ...row, state: this.secrets.seal(state, 'state', row.state) };
      tx.put(rowPrefix(componentId, id) + rowId, next);
      return next;
    });
  }

  /** Deletes a row for good; the configuration gets a new version. */
  deleteRow(componentId: string, id: string, rowId: string, token: Token): void {
    this.store.transact((tx) => {
      const config = this.live(tx, componentId, id);
      if (tx.get(rowPrefix(componentId, id) + rowId) === undefined) throw rowNotFound(rowId);
      tx.delete(rowPrefix(componentId, id) + rowId);
      const next = { ...config, current: this.versionInfo(config.current.version + 1, token, `Row ${rowId} deleted`) };
      this.commitVersion(tx, next, this.rows(tx, componentId, id));
    });
  }

  /**
   * Applies `fn` to the configuration and state of every configuration, row and version (deleted
   * ones included) in one transaction, and stores what it changed: the pass that encrypts what
   * was saved before encryption, and re-encrypts with a new key. `fn` gets a label of the value
   * (`configs/<component>/<id>/configuration`) and returns the same object when nothing changed.
   * Returns how many entries changed; with `apply` false nothing is written.
   */
  rewriteSecrets(fn: (value: JsonObject, label: string) => JsonObject, apply = true): number {
    return this.store.transact((tx) => {
      let changed = 0;
      const update = <T extends object>(key: string, value: T, next: T) => {
        if (next === value) return;
        if (apply) tx.put(key, next);
        changed++;
      };
      const label = (key: string, field: string) => `${key.replace(/^storage\//, '')}/${field}`;
      const ofRow = <R extends ConfigurationRow>(key: string, row: R): R => {
        const configuration = fn(row.configuration, label(key, 'configuration'));
        const state = fn(row.state, label(key, 'state'));
        return configuration === row.configuration && state === row.state ? row : { ...row, configuration, state };
      };
      for (const { key, value } of tx.list<Configuration>(CONFIG)) {
        const configuration = fn(value.configuration, label(key, 'configuration'));
        const state = fn(value.state, label(key, 'state'));
        update(key, value, configuration === value.configuration && state === value.state ? value : { ...value, configuration, state });
      }
      for (const { key, value } of tx.list<StoredRow>(ROW)) update(key, value, ofRow(key, value));
      for (const { key, value } of tx.list<ConfigurationVersion>(VERSION)) {
        const configuration = fn(value.configuration, label(key, 'configuration'));
        const rows = value.rows.map((row) => ofRow(`${key}/rows/${row.id}`, row));
        const same = configuration === value.configuration && rows.every((r, i) => r === value.rows[i]);
        update(key, value, same ? value : { ...value, configuration, rows });
      }
      return changed;
    });
  }

  /** A new value of a field, sealed against the stored one; the stored one when none is given. */
  private sealed(value: JsonObject | undefined, what: string, stored: JsonObject): JsonObject {
    return value === undefined ? stored : this.secrets.seal(value, what, stored);
  }

  private live(reader: MetadataReader, componentId: string, id: string): Configuration {
    const config = reader.get<Configuration>(configKey(componentId, id));
    if (!config || config.isDeleted) throw configurationNotFound(id);
    return config;
  }

  private rows(reader: MetadataReader, componentId: string, id: string): ConfigurationRow[] {
    return reader.list<StoredRow>(rowPrefix(componentId, id)).map((e) => e.value).sort((a, b) => (a.seq ?? 0) - (b.seq ?? 0));
  }

  private versionInfo(version: number, token: Token, changeDescription: string, now = new Date().toISOString()): VersionInfo {
    return { version, created: now, creatorToken: creator(token), changeDescription, versionIdentifier: uuidv7() };
  }

  /** Stores the configuration and a snapshot of it with its rows as its current version. */
  private commitVersion(tx: MetadataTx, config: Configuration, rows: ConfigurationRow[]): void {
    tx.put(configKey(config.componentId, config.id), config);
    const snapshot: ConfigurationVersion = {
      ...config.current,
      name: config.name,
      description: config.description,
      configuration: config.configuration,
      isDisabled: config.isDisabled,
      isDeleted: config.isDeleted,
      rows: rows.map(({ seq: _seq, ...row }: ConfigurationRow & { seq?: number }) => row),
    };
    tx.put(versionKey(config.componentId, config.id, config.current.version), snapshot);
  }

  private purge(tx: MetadataTx, componentId: string, id: string): void {
    tx.delete(configKey(componentId, id));
    for (const prefix of [rowPrefix(componentId, id), versionPrefix(componentId, id)]) {
      for (const { key } of tx.list(prefix)) tx.delete(key);
    }
  }
}

/** What a version records: an update that changes none of it is a no-op. */
function versionedContent(c: { name: string; description: string; configuration: unknown; isDisabled: boolean }): string {
  return canonicalJson([c.name, c.description, c.configuration, c.isDisabled]);
}
