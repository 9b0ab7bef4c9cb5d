import type { MetadataStore } from '../ports/metadata-store.js';
import type { Task, TaskRunner } from './tasks.js';
import { DomainError } from '../domain-errors.js';
import type { By, Column, Sink, SinkMapping } from '../model/definition.js';
import { keys, padVersion, readSinks, saveNewVersion, sinkSpec } from './repository.js';
import { normalizeId } from '../model/ids.js';
import { lockKey, sourceNotFound, validatedSettings } from './sources.js';
import type { SettingFloor } from '../pipeline/settings.js';
import type { SinkLifecycle } from './sink-lifecycle.js';
import { checkColumns, type MappingChecker } from '../model/columns.js';
import { parseTableId, validateColumns } from '../storage/tables.js';
import type { SinkCreate, SinkTableRequest, SinkUpdate } from '../contract/stream-sources.js';

export const MAX_SINKS_PER_SOURCE = 100;

/** The request bodies: the API contract's (src/contract/stream-sources.ts). */
export type { SinkCreate, SinkTableRequest, SinkUpdate };

type StoredSink = Sink & { deletedWithSource?: boolean };

/** Sinks of a source: synchronous checks, then the change as a task serialised per sink. */
export class SinkService {
  private readonly pendingCreates = new Set<string>();

  constructor(
    private readonly store: MetadataStore,
    private readonly tasks: TaskRunner,
    private readonly projectId: number,
    private readonly lifecycle: SinkLifecycle,
    private readonly mapping: MappingChecker,
  ) {}

  outputs(branchId: number, sourceId: string, sinkId: string, apiUrl: string): Record<string, unknown> {
    return {
      url: `${apiUrl}/v1/branches/${branchId}/sources/${sourceId}/sinks/${sinkId}`,
      projectId: this.projectId,
      branchId,
      sourceId,
      sinkId,
    };
  }

  private requireSource(branchId: number, sourceId: string): void {
    const source = this.store.get<{ deleted?: unknown }>(keys.source(branchId, sourceId));
    if (!source || source.deleted) throw sourceNotFound(sourceId);
  }

  get(branchId: number, sourceId: string, sinkId: string): Sink {
    this.requireSource(branchId, sourceId);
    const sink = this.store.get<Sink>(keys.sink(branchId, sourceId, sinkId));
    if (!sink || sink.deleted) throw sinkNotFound(sinkId);
    return sink;
  }

  getDeleted(branchId: number, sourceId: string, sinkId: string): Sink {
    this.requireSource(branchId, sourceId);
    const sink = this.store.get<Sink>(keys.sink(branchId, sourceId, sinkId));
    if (!sink || !sink.deleted) throw new DomainError('notFound', 'deletedSinkNotFound', `Deleted sink "${sinkId}" not found in the source.`);
    return sink;
  }

  list(branchId: number, sourceId: string, deleted: boolean): Sink[] {
    this.requireSource(branchId, sourceId);
    return readSinks(this.store, branchId, sourceId).filter((s) => Boolean(s.deleted) === deleted);
  }

  async create(branchId: number, sourceId: string, req: SinkCreate, by: By, apiUrl: string): Promise<Task> {
    this.requireSource(branchId, sourceId);
    const sinkId = normalizeId(req.sinkId ?? req.name);
    if (sinkId === '') throw new DomainError('invalid', 'badRequest', 'Sink id cannot be empty: use letters or digits in "sinkId" or "name".');
    const lock = lockKey(branchId, sourceId, sinkId);
    if (this.pendingCreates.has(lock)) {
      // The reference reports a conflict with a create in flight by the sink's full key.
      throw new DomainError('alreadyExists', 'sinkAlreadyExists', `Sink "${this.projectId}/${branchId}/${sourceId}/${sinkId}" already exists in the source.`);
    }
    const existing = this.store.get<Sink>(keys.sink(branchId, sourceId, sinkId));
    if (existing) {
      // A deleted sink keeps its id (GET answers 404): say how to get it back.
      const hint = existing.deleted ? ` It is deleted: PUT .../sources/${sourceId}/sinks/${sinkId}/undelete brings it back (GET .../sinks/deleted lists them), or choose another id.` : '';
      throw new DomainError('alreadyExists', 'sinkAlreadyExists', `Sink "${sinkId}" already exists in the source.${hint}`);
    }
    const active = this.list(branchId, sourceId, false).length + [...this.pendingCreates].filter((k) => k.startsWith(`sink/${branchId}/${sourceId}/`)).length;
    if (active >= MAX_SINKS_PER_SOURCE) {
      throw new DomainError('limitReached', 'resourceLimitReached', `Maximum number of sinks per source is ${MAX_SINKS_PER_SOURCE}.`);
    }
    checkSinkTable(req.table.tableId, req.table.mapping.columns);
    await checkColumns(req.table.mapping.columns, this.mapping, req.table.mapping.filter);
    await this.lifecycle.checkTable(req.table.tableId, req.table.mapping.columns);
    // Checked again: the template check above yielded to other requests.
    if (this.pendingCreates.has(lock)) {
      throw new DomainError('alreadyExists', 'sinkAlreadyExists', `Sink "${this.projectId}/${branchId}/${sourceId}/${sinkId}" already exists in the source.`);
    }
    this.pendingCreates.add(lock);
    return this.tasks.start('api.create.sink', `${branchId}/${sourceId}/${sinkId}`, lock, async () => {
      try {
        const at = new Date().toISOString();
        const sink: Sink = {
          projectId: this.projectId,
          branchId,
          sourceId,
          sinkId,
          type: 'table',
          name: req.name,
          description: req.description ?? '',
          table: { type: 'keboola', tableId: req.table.tableId, mapping: sinkMapping(req.table.mapping) },
          ...(req.allowedSignals && req.allowedSignals.length > 0 ? { allowedSignals: req.allowedSignals } : {}),
          created: { at, by },
        } as Sink;
        await this.lifecycle.ensureTable(sink);
        this.store.transact((tx) => {
          if (tx.get(keys.sink(branchId, sourceId, sinkId))) throw new DomainError('alreadyExists', 'sinkAlreadyExists', `Sink "${sinkId}" already exists in the source.`);
          saveNewVersion(tx, keys.sink(branchId, sourceId, sinkId), keys.sinkVersions(branchId, sourceId, sinkId), sink, sinkSpec(sink), 'New sink.', by, at);
        });
        await this.lifecycle.activate([this.store.get<Sink>(keys.sink(branchId, sourceId, sinkId))!]);
        return { result: 'Sink has been created successfully.', outputs: this.outputs(branchId, sourceId, sinkId, apiUrl) };
      } finally {
        this.pendingCreates.delete(lock);
      }
    });
  }

  async update(branchId: number, sourceId: string, sinkId: string, req: SinkUpdate, by: By, apiUrl: string): Promise<Task> {
    const current = this.get(branchId, sourceId, sinkId);
    if (req.table?.tableId !== undefined || req.table?.mapping !== undefined) {
      checkSinkTable(req.table.tableId ?? current.table.tableId, req.table.mapping?.columns ?? current.table.mapping.columns);
    }
    if (req.table?.mapping) await checkColumns(req.table.mapping.columns, this.mapping, req.table.mapping.filter);
    if (req.table?.tableId !== undefined || req.table?.mapping !== undefined) {
      await this.lifecycle.checkTable(req.table.tableId ?? current.table.tableId, req.table.mapping?.columns ?? current.table.mapping.columns);
    }
    return this.change(branchId, sourceId, sinkId, 'api.update.sink', 'Sink has been updated successfully.', apiUrl, by, async (sink) => {
      const next: Sink = { ...sink, table: { ...sink.table, mapping: { ...sink.table.mapping } } };
      if (req.name !== undefined) next.name = req.name;
      if (req.description !== undefined) next.description = req.description;
      if (req.table?.tableId !== undefined) next.table.tableId = req.table.tableId;
      if (req.table?.mapping !== undefined) next.table.mapping = sinkMapping(req.table.mapping);
      if (req.allowedSignals !== undefined) {
        if (req.allowedSignals.length > 0) next.allowedSignals = req.allowedSignals;
        else delete next.allowedSignals;
      }
      const tableChanged = JSON.stringify(next.table) !== JSON.stringify(sink.table);
      if (tableChanged) await this.lifecycle.ensureTable(next);
      return {
        next,
        // As the reference: a given changeDescription is the description, even when empty.
        description: req.changeDescription ?? 'Updated.',
        after: async (saved) => {
          if (saved.table.tableId !== sink.table.tableId && !saved.disabled) await this.lifecycle.activate([saved]);
        },
      };
    });
  }

  /** `floors`: as SourceService.patchSettings. */
  patchSettings(branchId: number, sourceId: string, sinkId: string, settings: { key: string; value: unknown }[], changeDescription: string | undefined, by: By, apiUrl: string, floors: readonly SettingFloor[] = []): Task {
    validatedSettings(this.get(branchId, sourceId, sinkId).config, settings, floors, 'sink');
    return this.change(branchId, sourceId, sinkId, 'api.update.sinkSettings', 'Sink settings have been updated successfully.', apiUrl, by, async (s) => ({
      next: { ...s, config: validatedSettings(s.config, settings, floors, 'sink') },
      description: changeDescription ?? 'Updated settings.',
    }));
  }

  disable(branchId: number, sourceId: string, sinkId: string, by: By, apiUrl: string): Task {
    this.get(branchId, sourceId, sinkId);
    // A sink that is disabled already stays as it is, without a new version (as the reference).
    return this.change(branchId, sourceId, sinkId, 'api.disable.sink', 'Sink has been disabled successfully.', apiUrl, by, async (s) => (s.disabled ? undefined : {
      next: { ...s, disabled: { at: new Date().toISOString(), by, reason: 'API' } },
      description: 'Disabled.',
      after: (saved) => this.lifecycle.deactivate([saved], 'disabled'),
    }));
  }

  enable(branchId: number, sourceId: string, sinkId: string, by: By, apiUrl: string): Task {
    this.get(branchId, sourceId, sinkId);
    return this.change(branchId, sourceId, sinkId, 'api.enable.sink', 'Sink has been enabled successfully.', apiUrl, by, async (s) => {
      // Enabling a sink that is not disabled changes nothing and makes no version (as the reference).
      if (!s.disabled) return undefined;
      const next = { ...s };
      delete next.disabled;
      // Disable + enable is the documented way to refresh a sink's token.
      return { next, description: 'Enabled.', after: (saved) => this.lifecycle.activate([saved]) };
    });
  }

  async rollback(branchId: number, sourceId: string, sinkId: string, versionNumber: number, by: By, apiUrl: string): Promise<Task> {
    this.get(branchId, sourceId, sinkId);
    const target = this.version(branchId, sourceId, sinkId, versionNumber);
    await this.lifecycle.checkTable(target.table.tableId, target.table.mapping.columns);
    return this.change(branchId, sourceId, sinkId, 'api.rollback.sinkVersion', 'Sink version was rolled back successfully.', apiUrl, by, async (s) => {
      const next: Sink = { ...s, name: target.name, description: target.description, type: target.type, table: target.table, config: target.config };
      if (target.allowedSignals) next.allowedSignals = target.allowedSignals;
      else delete next.allowedSignals;
      if (JSON.stringify(next.table) !== JSON.stringify(s.table)) await this.lifecycle.ensureTable(next);
      return {
        next,
        description: `Rollback to version "${versionNumber}".`,
        after: async (saved) => {
          if (saved.table.tableId !== s.table.tableId && !saved.disabled) await this.lifecycle.activate([saved]);
        },
      };
    });
  }

  version(branchId: number, sourceId: string, sinkId: string, versionNumber: number): Sink {
    const v = this.store.get<Sink>(keys.sinkVersions(branchId, sourceId, sinkId) + padVersion(versionNumber));
    if (!v) throw new DomainError('notFound', 'sinkVersionNotFound', `Sink version "${sinkId}/${padVersion(versionNumber)}" not found in the source.`);
    return v;
  }

  versions(branchId: number, sourceId: string, sinkId: string): Sink[] {
    return this.store.list<Sink>(keys.sinkVersions(branchId, sourceId, sinkId)).map((e) => e.value);
  }

  delete(branchId: number, sourceId: string, sinkId: string, by: By, apiUrl: string): Task {
    this.get(branchId, sourceId, sinkId);
    return this.tasks.start('api.delete.sink', `${branchId}/${sourceId}/${sinkId}`, lockKey(branchId, sourceId, sinkId), async () => {
      const sink = this.get(branchId, sourceId, sinkId);
      await this.lifecycle.deactivate([sink], 'deleted');
      // Soft delete does not create a version.
      this.store.transact((tx) => tx.put(keys.sink(branchId, sourceId, sinkId), { ...sink, deleted: { at: new Date().toISOString(), by } }));
      return { result: 'Sink has been deleted successfully.', outputs: this.outputs(branchId, sourceId, sinkId, apiUrl) };
    });
  }

  undelete(branchId: number, sourceId: string, sinkId: string, by: By, apiUrl: string): Task {
    this.getDeleted(branchId, sourceId, sinkId);
    return this.tasks.start('api.undelete.sink', `${branchId}/${sourceId}/${sinkId}`, lockKey(branchId, sourceId, sinkId), async () => {
      const sink = this.getDeleted(branchId, sourceId, sinkId) as StoredSink;
      const restored: StoredSink = { ...sink };
      delete restored.deleted;
      delete restored.deletedWithSource;
      this.store.transact((tx) =>
        saveNewVersion(tx, keys.sink(branchId, sourceId, sinkId), keys.sinkVersions(branchId, sourceId, sinkId), restored, sinkSpec(restored),
          `Undeleted to version "${sink.version.number}".`, by, new Date().toISOString()),
      );
      if (!restored.disabled) await this.lifecycle.activate([restored]);
      return { result: 'Sink has been undeleted successfully.', outputs: this.outputs(branchId, sourceId, sinkId, apiUrl) };
    });
  }

  private change(
    branchId: number,
    sourceId: string,
    sinkId: string,
    type: string,
    result: string,
    apiUrl: string,
    by: By,
    /** The change, its version description and what follows it; undefined: nothing to change (no new version). */
    apply: (s: Sink) => Promise<{ next: Sink; description: string; after?: (saved: Sink) => Promise<void> } | undefined>,
  ): Task {
    return this.tasks.start(type, `${branchId}/${sourceId}/${sinkId}`, lockKey(branchId, sourceId, sinkId), async () => {
      const current = this.get(branchId, sourceId, sinkId);
      const change = await apply(current);
      if (!change) return { result, outputs: this.outputs(branchId, sourceId, sinkId, apiUrl) };
      const { next, description, after } = change;
      const at = new Date().toISOString();
      const saved = this.store.transact((tx) =>
        saveNewVersion(tx, keys.sink(branchId, sourceId, sinkId), keys.sinkVersions(branchId, sourceId, sinkId), next, sinkSpec(next), description, by, at),
      );
      if (after) await after(saved);
      return { result, outputs: this.outputs(branchId, sourceId, sinkId, apiUrl) };
    });
  }
}

/** A request's mapping as stored: the filter only when given (a sink without one stays as the reference's). */
function sinkMapping(mapping: NonNullable<SinkTableRequest['mapping']>): SinkMapping {
  return mapping.filter ? { columns: mapping.columns, filter: { language: mapping.filter.language, content: mapping.filter.content } } : { columns: mapping.columns };
}

/**
 * The table id and the column names, checked as the task's table step checks them (Storage's
 * rules, reserved names): refused with the same message when the request arrives, instead of a
 * task that fails.
 */
function checkSinkTable(tableId: string, columns: readonly Column[]): void {
  try {
    parseTableId(tableId);
    validateColumns(columns.map((c) => c.name));
  } catch (err) {
    if (err instanceof DomainError) throw new DomainError('invalid', 'badRequest', err.message);
    throw err;
  }
}

export function sinkNotFound(sinkId: string): DomainError {
  return new DomainError('notFound', 'sinkNotFound', `Sink "${sinkId}" not found in the source.`);
}
