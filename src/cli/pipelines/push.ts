/**
 * `sluice push` carried out: for each source of the files, in id order, make the server's match
 * it, one API call (and its task) at a time. A source or sink that is not there is created (or
 * undeleted, when the server has a deleted one of that id) with what its create request takes;
 * it is then read back and updated like any other, so the settings and the disabled state go
 * through one path. Deletes (sinks and sources no file has) only with --delete, and soft: the
 * tables stay, and undelete brings them back.
 */
import { canonicalSink, canonicalSource, type SinkDefinition, type SourceDefinition } from './definition.js';
import type { BranchApi, ReadBranch } from './branch-api.js';
import type { DesiredSource } from './plan.js';
import type { SinkUpdate, SourceUpdate } from '../../contract/stream-sources.js';

export interface PushOptions {
  delete: boolean;
  /** One line per change made. */
  log: (line: string) => void;
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** Makes the server match the files; resolves to the number of changes made (0: it matched). */
export async function push(api: BranchApi, desired: readonly DesiredSource[], current: ReadBranch, options: PushOptions): Promise<number> {
  let changes = 0;
  const sorted = [...desired].sort((a, b) => (a.definition.sourceId < b.definition.sourceId ? -1 : 1));
  for (const d of sorted) changes += await pushSource(api, canonicalSource(d.definition), current, options);
  if (options.delete) {
    const inFiles = new Set(desired.map((d) => d.definition.sourceId));
    for (const id of [...current.sources.keys()].sort()) {
      if (inFiles.has(id)) continue;
      await api.lifecycle('delete', id);
      options.log(`deleted source ${id} (no file has it; its tables stay, PUT .../sources/${id}/undelete brings it back)`);
      changes++;
    }
  }
  return changes;
}

async function pushSource(api: BranchApi, want: SourceDefinition, branch: ReadBranch, options: PushOptions): Promise<number> {
  const id = want.sourceId;
  let changes = 0;
  let now = branch.sources.get(id);
  if (!now) {
    if (branch.deletedSources.has(id)) {
      await api.lifecycle('undelete', id);
      options.log(`restored source ${id} (it was deleted on the server)`);
    } else {
      await api.createSource(want);
      options.log(`created source ${id}`);
    }
    changes++;
    now = await api.readSource(id);
  }

  const body: Omit<SourceUpdate, 'changeDescription'> = {};
  if (now.name !== want.name) body.name = want.name;
  if ((now.description ?? '') !== (want.description ?? '')) body.description = want.description ?? '';
  if (now.type !== want.type) body.type = want.type;
  const fields = Object.keys(body);
  if (fields.length > 0) await api.updateSource(id, body);
  if (!same(now.settings, want.settings)) {
    await api.patchSettings(id, undefined, now.settings, want.settings);
    fields.push('settings');
  }
  // Enabled before its sinks change, disabled after them.
  if (now.disabled && !want.disabled) {
    await api.lifecycle('enable', id);
    fields.push('enabled');
  }
  if (fields.length > 0) {
    options.log(`updated source ${id}: ${fields.join(', ')}`);
    changes++;
  }

  const have = new Map(now.sinks.map((s) => [s.sinkId, s]));
  const wanted = new Set(want.sinks.map((s) => s.sinkId));
  if (options.delete) {
    for (const s of now.sinks) {
      if (wanted.has(s.sinkId)) continue;
      await api.lifecycle('delete', id, s.sinkId);
      options.log(`deleted sink ${id}/${s.sinkId} (not in the file; its table stays)`);
      changes++;
    }
  }
  let deletedSinks: Set<string> | undefined;
  for (const s of want.sinks) {
    let current = have.get(s.sinkId);
    if (!current) {
      deletedSinks ??= await api.deletedSinkIds(id);
      if (deletedSinks.has(s.sinkId)) {
        await api.lifecycle('undelete', id, s.sinkId);
        options.log(`restored sink ${id}/${s.sinkId} (it was deleted on the server)`);
      } else {
        await api.createSink(id, s);
        options.log(`created sink ${id}/${s.sinkId}`);
      }
      changes++;
      current = await api.readSink(id, s.sinkId);
    }
    changes += await updateSink(api, id, current, s, options);
  }

  if (!now.disabled && want.disabled) {
    await api.lifecycle('disable', id);
    options.log(`updated source ${id}: disabled`);
    changes++;
  }
  return changes;
}

async function updateSink(api: BranchApi, sourceId: string, current: SinkDefinition, wanted: SinkDefinition, options: PushOptions): Promise<number> {
  const now = canonicalSink(current);
  const want = canonicalSink(wanted);
  const body: Omit<SinkUpdate, 'changeDescription'> = {};
  if (now.name !== want.name) body.name = want.name;
  if ((now.description ?? '') !== (want.description ?? '')) body.description = want.description ?? '';
  if (now.table.tableId !== want.table.tableId) body.table = { tableId: want.table.tableId };
  // A mapping replaces the whole mapping, its filter too.
  if (!same(now.table.mapping, want.table.mapping)) body.table = { ...body.table, mapping: want.table.mapping };
  if (!same(now.allowedSignals, want.allowedSignals)) body.allowedSignals = want.allowedSignals ?? [];
  const fields: string[] = Object.keys(body).flatMap((k) => (k === 'table' ? Object.keys(body.table!).map((t) => `table.${t}`) : [k]));
  if (fields.length > 0) await api.updateSink(sourceId, want.sinkId, body);
  if (!same(now.settings, want.settings)) {
    await api.patchSettings(sourceId, want.sinkId, now.settings, want.settings);
    fields.push('settings');
  }
  if (Boolean(now.disabled) !== Boolean(want.disabled)) {
    await api.lifecycle(want.disabled ? 'disable' : 'enable', sourceId, want.sinkId);
    fields.push(want.disabled ? 'disabled' : 'enabled');
  }
  if (fields.length === 0) return 0;
  options.log(`updated sink ${sourceId}/${want.sinkId}: ${fields.join(', ')}`);
  return 1;
}
