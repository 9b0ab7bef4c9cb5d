import type { MetadataStore } from '../ports/metadata-store.js';
import type { TaskRunner, Task } from './tasks.js';
import { DomainError } from '../domain-errors.js';
import { patchSettings, SettingsError, type SettingFloor, type SettingScope } from '../pipeline/settings.js';
import type { By, SettingValue, Sink, Source } from '../model/definition.js';
import { keys, padVersion, readSinks, readSources, saveNewVersion, sourceSpec } from './repository.js';
import { newSourceSecret } from '../model/secret.js';
import { normalizeId } from '../model/ids.js';
import type { SinkLifecycle } from './sink-lifecycle.js';
import type { SourceCreate, SourceUpdate } from '../contract/stream-sources.js';

export const MAX_SOURCES_PER_BRANCH = 100;

/** The request bodies: the API contract's (src/contract/stream-sources.ts). */
export type { SourceCreate, SourceUpdate };

/**
 * Sources: validation and existence checks run synchronously (so a duplicate gets 409 before
 * any task exists), the change itself runs as a task serialised per source.
 */
export class SourceService {
  /** Sources whose create task is queued or running: they already "exist" for new creates. */
  private readonly pendingCreates = new Set<string>();

  constructor(
    private readonly store: MetadataStore,
    private readonly tasks: TaskRunner,
    private readonly projectId: number,
    private readonly sinks: SinkLifecycle,
  ) {}

  outputs(branchId: number, sourceId: string, apiUrl: string): Record<string, unknown> {
    return { url: `${apiUrl}/v1/branches/${branchId}/sources/${sourceId}`, projectId: this.projectId, branchId, sourceId };
  }

  get(branchId: number, sourceId: string): Source {
    const source = this.store.get<Source>(keys.source(branchId, sourceId));
    if (!source || source.deleted) throw sourceNotFound(sourceId);
    return source;
  }

  getDeleted(branchId: number, sourceId: string): Source {
    const source = this.store.get<Source>(keys.source(branchId, sourceId));
    if (!source || !source.deleted) throw new DomainError('notFound', 'deletedSourceNotFound', `Deleted source "${sourceId}" not found in the branch.`);
    return source;
  }

  list(branchId: number, deleted: boolean): Source[] {
    return readSources(this.store, branchId).filter((s) => Boolean(s.deleted) === deleted);
  }

  create(branchId: number, req: SourceCreate, by: By, apiUrl: string): Task {
    const sourceId = normalizeId(req.sourceId ?? req.name);
    if (sourceId === '') throw new DomainError('invalid', 'badRequest', 'Source id cannot be empty: use letters or digits in "sourceId" or "name".');
    const lock = lockKey(branchId, sourceId);
    const existing = this.store.get<Source>(keys.source(branchId, sourceId));
    if (existing || this.pendingCreates.has(lock)) {
      // A deleted source keeps its id (GET answers 404): say how to get it back.
      const hint = existing?.deleted ? ` It is deleted: PUT .../sources/${sourceId}/undelete brings it back (GET .../sources/deleted lists them), or choose another id.` : '';
      throw new DomainError('alreadyExists', 'sourceAlreadyExists', `Source "${sourceId}" already exists in the branch.${hint}`);
    }
    if (this.list(branchId, false).length + this.pendingCount(branchId) >= MAX_SOURCES_PER_BRANCH) {
      throw new DomainError('limitReached', 'resourceLimitReached', `Maximum number of sources per branch is ${MAX_SOURCES_PER_BRANCH}.`);
    }
    this.pendingCreates.add(lock);
    return this.tasks.start('api.create.source', `${branchId}/${sourceId}`, lock, async () => {
      try {
        const at = new Date().toISOString();
        this.store.transact((tx) => {
          const source: Source = {
            projectId: this.projectId,
            branchId,
            sourceId,
            type: req.type,
            name: req.name,
            description: req.description ?? '',
            secret: newSourceSecret(),
            created: { at, by },
          } as Source;
          saveNewVersion(tx, keys.source(branchId, sourceId), keys.sourceVersions(branchId, sourceId), source, sourceSpec(source), 'New source.', by, at);
        });
        return { result: 'Source has been created successfully.', outputs: this.outputs(branchId, sourceId, apiUrl) };
      } finally {
        this.pendingCreates.delete(lock);
      }
    });
  }

  update(branchId: number, sourceId: string, req: SourceUpdate, by: By, apiUrl: string): Task {
    this.get(branchId, sourceId);
    return this.change(branchId, sourceId, 'api.update.source', 'Source has been updated successfully.', apiUrl, (source) => {
      const next: Source = { ...source };
      if (req.name !== undefined) next.name = req.name;
      if (req.description !== undefined) next.description = req.description;
      if (req.type !== undefined && req.type !== source.type) {
        next.type = req.type;
        // Secrets are namespaced by transport: switching type issues a new one.
        next.secret = newSourceSecret();
      }
      // As the reference: a given changeDescription is the description, even when empty.
      return { next, description: req.changeDescription ?? 'Updated.' };
    }, by);
  }

  /** `floors`: the server's floors of the interval keys (one below a key's minimum lowers it). */
  patchSettings(branchId: number, sourceId: string, settings: { key: string; value: unknown }[], changeDescription: string | undefined, by: By, apiUrl: string, floors: readonly SettingFloor[] = []): Task {
    // Validated now for the answer, applied in the task on the then-current overrides.
    validatedSettings(this.get(branchId, sourceId).config, settings, floors);
    return this.change(branchId, sourceId, 'api.update.sourceSettings', 'Source settings have been updated successfully.', apiUrl, (s) => ({
      next: { ...s, config: validatedSettings(s.config, settings, floors) },
      description: changeDescription ?? 'Updated settings.',
    }), by);
  }

  disable(branchId: number, sourceId: string, by: By, apiUrl: string): Task {
    this.get(branchId, sourceId);
    // A source that is disabled already stays as it is, without a new version (as the reference).
    return this.change(branchId, sourceId, 'api.disable.source', 'Source has been disabled successfully.', apiUrl, (s) => (s.disabled ? undefined : {
      next: { ...s, disabled: { at: new Date().toISOString(), by, reason: 'API' } },
      description: 'Disabled.',
    }), by);
  }

  enable(branchId: number, sourceId: string, by: By, apiUrl: string): Task {
    this.get(branchId, sourceId);
    return this.change(branchId, sourceId, 'api.enable.source', 'Source has been enabled successfully.', apiUrl, (s) => {
      // Enabling a source that is not disabled changes nothing and makes no version (as the reference).
      if (!s.disabled) return undefined;
      const next = { ...s };
      delete next.disabled;
      return { next, description: 'Enabled.' };
    }, by);
  }

  rollback(branchId: number, sourceId: string, versionNumber: number, by: By, apiUrl: string): Task {
    this.get(branchId, sourceId);
    const target = this.version(branchId, sourceId, versionNumber);
    return this.change(branchId, sourceId, 'api.rollback.sourceVersion', 'Source version was rolled back successfully.', apiUrl, (s) => ({
      next: { ...s, name: target.name, description: target.description, type: target.type, config: target.config, secret: target.type === s.type ? s.secret : newSourceSecret() },
      description: `Rollback to version "${versionNumber}".`,
    }), by);
  }

  version(branchId: number, sourceId: string, versionNumber: number): Source {
    const v = this.store.get<Source>(keys.sourceVersions(branchId, sourceId) + padVersion(versionNumber));
    if (!v) throw new DomainError('notFound', 'sourceVersionNotFound', `Source version "${sourceId}/${padVersion(versionNumber)}" not found in the branch.`);
    return v;
  }

  versions(branchId: number, sourceId: string): Source[] {
    return this.store.list<Source>(keys.sourceVersions(branchId, sourceId)).map((e) => e.value);
  }

  /** Soft delete (restorable) or, with cascade, removal with its sinks, tables and bucket. */
  delete(branchId: number, sourceId: string, cascade: boolean, by: By, apiUrl: string): Task {
    this.get(branchId, sourceId);
    return this.tasks.start('api.delete.source', `${branchId}/${sourceId}`, lockKey(branchId, sourceId), async () => {
      const source = this.get(branchId, sourceId);
      const sinks = readSinks(this.store, branchId, sourceId).filter((s) => !s.deleted);
      if (cascade) {
        const all = readSinks(this.store, branchId, sourceId);
        await this.sinks.purgeSinksOfSource(branchId, source, all);
        this.store.transact((tx) => {
          this.sinks.deleteSinkDefinitions(tx, branchId, sourceId, all);
          tx.delete(keys.source(branchId, sourceId));
          for (const v of tx.list(keys.sourceVersions(branchId, sourceId))) tx.delete(v.key);
        });
        return { result: 'Source and its destination tables and bucket have been deleted.', outputs: this.outputs(branchId, sourceId, apiUrl) };
      }
      const at = { at: new Date().toISOString(), by };
      await this.sinks.deactivate(sinks, 'deleted');
      this.store.transact((tx) => {
        tx.put(keys.source(branchId, sourceId), { ...source, deleted: at });
        // Sinks are deleted with their source and come back with it.
        for (const sink of sinks) tx.put(keys.sink(branchId, sourceId, sink.sinkId), { ...sink, deleted: at, deletedWithSource: true });
      });
      return { result: 'Source has been deleted successfully.', outputs: this.outputs(branchId, sourceId, apiUrl) };
    });
  }

  undelete(branchId: number, sourceId: string, by: By, apiUrl: string): Task {
    this.getDeleted(branchId, sourceId);
    return this.tasks.start('api.undelete.source', `${branchId}/${sourceId}`, lockKey(branchId, sourceId), async () => {
      const source = this.getDeleted(branchId, sourceId);
      const restored: Source = { ...source };
      delete restored.deleted;
      const sinks = readSinks(this.store, branchId, sourceId).filter((s) => (s as Sink & { deletedWithSource?: boolean }).deletedWithSource);
      const undeleted = sinks.map((s) => {
        const copy = { ...s } as Sink & { deletedWithSource?: boolean };
        delete copy.deleted;
        delete copy.deletedWithSource;
        return copy as Sink;
      });
      this.store.transact((tx) => {
        saveNewVersion(tx, keys.source(branchId, sourceId), keys.sourceVersions(branchId, sourceId), restored, sourceSpec(restored),
          `Undeleted to version "${source.version.number}".`, by, new Date().toISOString());
        for (const sink of undeleted) tx.put(keys.sink(branchId, sourceId, sink.sinkId), sink);
      });
      await this.sinks.activate(undeleted.filter((s) => !s.disabled));
      return { result: 'Source has been undeleted successfully.', outputs: this.outputs(branchId, sourceId, apiUrl) };
    });
  }

  /**
   * Rotates the ingestion secret at once (synchronously, no task); the old secret stops working
   * immediately. Like any other change it makes a version (`Rotated secret.`, as the reference).
   */
  rotateSecret(branchId: number, sourceId: string, by: By): Source {
    return this.store.transact((tx) => {
      const source = tx.get<Source>(keys.source(branchId, sourceId));
      if (!source || source.deleted) throw sourceNotFound(sourceId);
      const next = { ...source, secret: newSourceSecret() };
      return saveNewVersion(tx, keys.source(branchId, sourceId), keys.sourceVersions(branchId, sourceId), next, sourceSpec(next),
        'Rotated secret.', by, new Date().toISOString());
    });
  }

  private change(
    branchId: number,
    sourceId: string,
    type: string,
    result: string,
    apiUrl: string,
    /** The change and its version description; undefined: nothing to change (no new version). */
    apply: (s: Source) => { next: Source; description: string } | undefined,
    by: By,
  ): Task {
    return this.tasks.start(type, `${branchId}/${sourceId}`, lockKey(branchId, sourceId), async () => {
      const at = new Date().toISOString();
      this.store.transact((tx) => {
        const current = tx.get<Source>(keys.source(branchId, sourceId));
        if (!current || current.deleted) throw sourceNotFound(sourceId);
        const change = apply(current);
        if (!change) return;
        saveNewVersion(tx, keys.source(branchId, sourceId), keys.sourceVersions(branchId, sourceId), change.next, sourceSpec(change.next), change.description, by, at);
      });
      return { result, outputs: this.outputs(branchId, sourceId, apiUrl) };
    });
  }

  private pendingCount(branchId: number): number {
    return [...this.pendingCreates].filter((k) => k.startsWith(`source/${branchId}/`)).length;
  }
}

export function lockKey(branchId: number, sourceId: string, sinkId?: string): string {
  return sinkId === undefined ? `source/${branchId}/${sourceId}` : `sink/${branchId}/${sourceId}/${sinkId}`;
}

export function sourceNotFound(sourceId: string): DomainError {
  return new DomainError('notFound', 'sourceNotFound', `Source "${sourceId}" not found in the branch.`);
}

/** Runs the settings PATCH rules synchronously, mapping failures to domain errors (a protected key: forbidden). */
export function validatedSettings(current: SettingValue[] | undefined, patch: { key: string; value: unknown }[], floors: readonly SettingFloor[] = [], scope: SettingScope = 'source'): SettingValue[] {
  try {
    return patchSettings(current, patch, floors, scope);
  } catch (err) {
    if (err instanceof SettingsError) {
      throw err.kind === 'protected' ? new DomainError('forbidden', 'forbidden', err.message) : new DomainError('invalid', 'badRequest', err.message);
    }
    throw err;
  }
}
