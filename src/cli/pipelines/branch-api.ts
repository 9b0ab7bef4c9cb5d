/**
 * The server's side of pull, diff and push, through the public Stream API (/v1) only: reading a
 * branch's sources and sinks (with their overridden settings) into definitions, and the calls a
 * push makes, each waiting for its asynchronous task and failing with the API's message.
 */
import type { SettingsAnswer, SettingsPatch, SettingView } from '../../contract/settings.js';
import type { SinkCreate, SinksAnswer, SinkUpdate, SinkView, SourceCreate, SourcesAnswer, SourceUpdate, SourceView } from '../../contract/stream-sources.js';
import type { Task } from '../../contract/tasks.js';
import type { SettingFloor } from '../../pipeline/settings.js';
import { parseDuration } from '../../pipeline/units.js';
import { allPages } from '../resources.js';
import { CliError } from '../errors.js';
import { waitForTask, type TaskTimeoutMessage } from '../tasks.js';
import type { StorageClient } from '../client.js';
import { sinkFromApi, sourceFromApi, type Settings, type SinkDefinition, type SourceDefinition } from './definition.js';
import type { CurrentBranch } from './plan.js';

/** What every change made by a push records in the versions it makes. */
const CHANGE_DESCRIPTION = 'sluice push';

const enc = encodeURIComponent;

export interface ReadBranch extends CurrentBranch {
  sources: Map<string, SourceDefinition>;
  /**
   * The server's duration minima (its --upload-min-interval, --import-min-interval), from the
   * settings it answered; 'lenient' when it has no source to ask (the server checks them then).
   */
  floors: SettingFloor[] | 'lenient';
}

export class BranchApi {
  private readonly base: string;

  constructor(
    private readonly client: StorageClient,
    branch: string,
    /** How long a push waits for one task (--task-timeout). */
    private readonly taskTimeoutMs = 120_000,
  ) {
    this.base = `/v1/branches/${enc(branch)}`;
  }

  private sourcePath(sourceId: string): string {
    return `${this.base}/sources/${enc(sourceId)}`;
  }

  private sinkPath(sourceId: string, sinkId: string): string {
    return `${this.sourcePath(sourceId)}/sinks/${enc(sinkId)}`;
  }

  private async settings(path: string, seen: SettingView[]): Promise<SettingView[]> {
    const answer = await this.client.json<SettingsAnswer>('GET', `${path}/settings`);
    seen.push(...answer.settings);
    return answer.settings;
  }

  /** One source and its sinks as definitions. */
  async readSource(sourceId: string, seen: SettingView[] = []): Promise<SourceDefinition> {
    const view = await this.client.json<SourceView>('GET', this.sourcePath(sourceId));
    return this.sourceOf(view, seen);
  }

  private async sourceOf(view: SourceView, seen: SettingView[]): Promise<SourceDefinition> {
    const path = this.sourcePath(view.sourceId);
    const sinkViews = await allPages<SinkView>(this.client, `${path}/sinks`, (a: SinksAnswer) => a.sinks);
    const sinks: SinkDefinition[] = [];
    for (const s of sinkViews) sinks.push(sinkFromApi(s, await this.settings(this.sinkPath(s.sourceId, s.sinkId), seen)));
    return sourceFromApi(view, await this.settings(path, seen), sinks);
  }

  /** The branch: every source with its sinks, and the deleted sources' ids. */
  async readBranch(): Promise<ReadBranch> {
    const seen: SettingView[] = [];
    const views = await allPages<SourceView>(this.client, `${this.base}/sources`, (a: SourcesAnswer) => a.sources);
    const sources = new Map<string, SourceDefinition>();
    for (const v of views) sources.set(v.sourceId, await this.sourceOf(v, seen));
    const deleted = await allPages<SourceView>(this.client, `${this.base}/sources/deleted`, (a: SourcesAnswer) => a.sources);
    return { sources, deletedSources: new Set(deleted.map((s) => s.sourceId)), deletedSinks: new Map(), floors: seen.length > 0 ? floorsOf(seen) : 'lenient' };
  }

  /** The ids of a source's deleted sinks. */
  async deletedSinkIds(sourceId: string): Promise<Set<string>> {
    const sinks = await allPages<SinkView>(this.client, `${this.sourcePath(sourceId)}/sinks/deleted`, (a: SinksAnswer) => a.sinks);
    return new Set(sinks.map((s) => s.sinkId));
  }

  async createSource(s: SourceDefinition): Promise<void> {
    const body: SourceCreate = { sourceId: s.sourceId, name: s.name, type: s.type, ...(s.description ? { description: s.description } : {}) };
    await this.task('POST', `${this.base}/sources`, body, `creating source "${s.sourceId}"`);
  }

  async updateSource(sourceId: string, body: Omit<SourceUpdate, 'changeDescription'>): Promise<void> {
    await this.task('PATCH', this.sourcePath(sourceId), { ...body, changeDescription: CHANGE_DESCRIPTION }, `updating source "${sourceId}"`);
  }

  async createSink(sourceId: string, s: SinkDefinition): Promise<void> {
    const body: SinkCreate = {
      sinkId: s.sinkId,
      name: s.name,
      type: 'table',
      table: { type: 'keboola', tableId: s.table.tableId, mapping: s.table.mapping },
      ...(s.description ? { description: s.description } : {}),
      ...(s.allowedSignals ? { allowedSignals: s.allowedSignals } : {}),
    };
    await this.task('POST', `${this.sourcePath(sourceId)}/sinks`, body, `creating sink "${sourceId}/${s.sinkId}"`);
  }

  async updateSink(sourceId: string, sinkId: string, body: Omit<SinkUpdate, 'changeDescription'>): Promise<void> {
    await this.task('PATCH', this.sinkPath(sourceId, sinkId), { ...body, changeDescription: CHANGE_DESCRIPTION }, `updating sink "${sourceId}/${sinkId}"`);
  }

  /** Sets the keys of `want` and resets (null) the keys only `have` has. */
  async patchSettings(sourceId: string, sinkId: string | undefined, have: Settings | undefined, want: Settings | undefined): Promise<void> {
    const settings = [
      ...Object.entries(want ?? {}).filter(([k, v]) => JSON.stringify(have?.[k]) !== JSON.stringify(v)).map(([key, value]) => ({ key, value })),
      ...Object.keys(have ?? {}).filter((k) => want?.[k] === undefined).map((key) => ({ key, value: null })),
    ];
    if (settings.length === 0) return;
    const body: SettingsPatch = { settings, changeDescription: CHANGE_DESCRIPTION };
    const path = sinkId === undefined ? this.sourcePath(sourceId) : this.sinkPath(sourceId, sinkId);
    await this.task('PATCH', `${path}/settings`, body, `changing the settings of ${sinkId === undefined ? `source "${sourceId}"` : `sink "${sourceId}/${sinkId}"`}`);
  }

  /** enable, disable, undelete, or delete (soft: the tables stay; undelete brings it back). */
  async lifecycle(verb: 'enable' | 'disable' | 'undelete' | 'delete', sourceId: string, sinkId?: string): Promise<void> {
    const path = sinkId === undefined ? this.sourcePath(sourceId) : this.sinkPath(sourceId, sinkId);
    const what = sinkId === undefined ? `source "${sourceId}"` : `sink "${sourceId}/${sinkId}"`;
    const doing = { enable: 'enabling', disable: 'disabling', undelete: 'restoring', delete: 'deleting' }[verb];
    if (verb === 'delete') await this.task('DELETE', path, undefined, `${doing} ${what}`);
    else await this.task('PUT', `${path}/${verb}`, undefined, `${doing} ${what}`);
  }

  async readSink(sourceId: string, sinkId: string): Promise<SinkDefinition> {
    const view = await this.client.json<SinkView>('GET', this.sinkPath(sourceId, sinkId));
    return sinkFromApi(view, await this.settings(this.sinkPath(sourceId, sinkId), []));
  }

  /** A call that answers with a task, and the wait until the task ends; a failed task fails with its message. */
  private async task(method: 'POST' | 'PATCH' | 'PUT' | 'DELETE', path: string, body: unknown, doing: string): Promise<Task> {
    let task: Task;
    try {
      task = await this.client.json<Task>(method, path, body);
    } catch (err) {
      if (err instanceof CliError) throw new CliError(`${doing}: ${err.message}`);
      throw err;
    }
    const done = await waitForTask(this.client, task, this.taskTimeoutMs, pushTimeout);
    if (done.status !== 'success') throw new CliError(`${doing}: the task ${done.taskId} failed: ${done.error ?? done.result ?? done.status}`);
    return done;
  }
}

/** The server's duration minima as its settings answers show them (`validation` minDuration). */
function floorsOf(views: readonly SettingView[]): SettingFloor[] {
  const out = new Map<string, SettingFloor>();
  for (const v of views) {
    const minimum = /minDuration=([^,]+)/.exec(v.validation ?? '')?.[1];
    const ms = minimum === undefined ? undefined : parseDuration(minimum);
    if (ms !== undefined) out.set(v.key, { key: v.key, ms, flag: 'the server\'s minimum' });
  }
  return [...out.values()];
}

const pushTimeout: TaskTimeoutMessage = (task, path, seconds) =>
  `the task ${task.taskId} was still running after ${seconds} s (--task-timeout); GET ${path} tells when it ends, and a second push goes on from there`;
