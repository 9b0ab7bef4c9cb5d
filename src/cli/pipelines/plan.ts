/**
 * What a push would do: the files' definitions (desired) against the server's (current), per
 * source and sink: create, update (with each field that differs), restore (deleted on the
 * server: undelete brings it back, then it is updated), or delete (on the server, not in the
 * files: done only with --delete). Pure: values in, the plan out; `sluice diff` prints it,
 * `sluice push` carries it out.
 */
import { canonicalSink, canonicalSource, type SinkDefinition, type SourceDefinition } from './definition.js';
import { pathText } from './file-format.js';

export type Action = 'create' | 'update' | 'restore' | 'delete';

/** One field that differs: `from` absent when the server lacks it, `to` absent when the file does. */
export interface Difference {
  path: string;
  from?: unknown;
  to?: unknown;
}

export interface Change {
  action: Action;
  sourceId: string;
  /** A sink's change; absent: the source's. */
  sinkId?: string;
  /** The file that asks for it (a sink's delete: the file that lacks it; absent for a source's delete). */
  file?: string;
  /** update: the fields that differ. */
  differences: Difference[];
  /** create: what is created, in a few words. */
  summary?: string;
}

/** The server's side: its sources, and the ids of the deleted ones (a file's source of such an id is restored, not created). */
export interface CurrentBranch {
  sources: ReadonlyMap<string, SourceDefinition>;
  deletedSources: ReadonlySet<string>;
  /** The ids of each source's deleted sinks (only the sources asked for). */
  deletedSinks: ReadonlyMap<string, ReadonlySet<string>>;
}

export interface DesiredSource {
  file: string;
  definition: SourceDefinition;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

/** A list of objects with unique names (the mapping's columns) is compared by name; any other list as a whole. */
function byName(list: unknown[]): Map<string, unknown> | undefined {
  if (!list.every((item) => isPlainObject(item) && typeof item.name === 'string')) return undefined;
  const map = new Map(list.map((item) => [(item as { name: string }).name, item]));
  return map.size === list.length ? map : undefined;
}

/** `at` with a key: `.key`, or `["a.b"]` for a key that is not a plain name (settings). */
function joinKey(at: string, key: string): string {
  const name = pathText([key]);
  return at === '' || name.startsWith('[') ? `${at}${name}` : `${at}.${name}`;
}

/** The fields of `to` that differ from `from`, as readable paths (`table.mapping.columns["id"].path`). */
export function differences(from: unknown, to: unknown, at = ''): Difference[] {
  if (same(from, to)) return [];
  if (isPlainObject(from) && isPlainObject(to)) {
    const keys = [...Object.keys(to), ...Object.keys(from).filter((k) => !(k in to))];
    return keys.flatMap((k) => differences(from[k], to[k], joinKey(at, k)));
  }
  if (Array.isArray(from) && Array.isArray(to)) {
    const before = byName(from);
    const after = byName(to);
    if (before && after) {
      const named = (name: string) => `${at}[${JSON.stringify(name)}]`;
      const out: Difference[] = [];
      for (const [name, item] of after) out.push(...differences(before.get(name), item, named(name)));
      for (const [name, item] of before) if (!after.has(name)) out.push({ path: named(name), from: item });
      const order = (m: Map<string, unknown>, other: Map<string, unknown>) => [...m.keys()].filter((k) => other.has(k));
      if (!same(order(before, after), order(after, before))) out.push({ path: `${at} (order)`, from: [...before.keys()], to: [...after.keys()] });
      return out;
    }
  }
  const d: Difference = { path: at };
  if (from !== undefined) d.from = from;
  if (to !== undefined) d.to = to;
  return [d];
}

const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? '' : 's'}`;

function sinkSummary(s: SinkDefinition): string {
  const c = s.table.mapping.columns.length;
  return `into ${s.table.tableId}, ${plural(c, 'column')}${s.disabled ? ', disabled' : ''}`;
}

/** Settings compared key by key: none is an empty mapping. */
function withSettings<T extends { settings?: unknown }>(entity: T): T {
  return { ...entity, settings: entity.settings ?? {} };
}

/** The source's own fields (without its sinks). */
function sourceFields(s: SourceDefinition): Omit<SourceDefinition, 'sinks'> {
  const { sinks: _sinks, ...fields } = canonicalSource(s);
  return withSettings(fields);
}

/** The changes of one source the files define, against the server's (absent: not there). */
export function planSource(desired: DesiredSource, current: SourceDefinition | undefined, branch: Pick<CurrentBranch, 'deletedSources' | 'deletedSinks'>): Change[] {
  const want = canonicalSource(desired.definition);
  const { file } = desired;
  const sourceId = want.sourceId;
  if (!current) {
    if (branch.deletedSources.has(sourceId)) {
      return [{ action: 'restore', sourceId, file, differences: [], summary: 'deleted on the server: undeleted with its sinks, then updated to the file' }];
    }
    return [
      { action: 'create', sourceId, file, differences: [], summary: `${want.type} source "${want.name}", ${plural(want.sinks.length, 'sink')}` },
      ...want.sinks.map((s): Change => ({ action: 'create', sourceId, sinkId: s.sinkId, file, differences: [], summary: sinkSummary(s) })),
    ];
  }
  const out: Change[] = [];
  const fields = differences(sourceFields(current), sourceFields(want));
  if (fields.length > 0) out.push({ action: 'update', sourceId, file, differences: fields });
  const have = new Map(current.sinks.map((s) => [s.sinkId, canonicalSink(s)]));
  for (const s of want.sinks) {
    const now = have.get(s.sinkId);
    if (now) {
      const d = differences(withSettings(now), withSettings(s));
      if (d.length > 0) out.push({ action: 'update', sourceId, sinkId: s.sinkId, file, differences: d });
    } else if (branch.deletedSinks.get(sourceId)?.has(s.sinkId)) {
      out.push({ action: 'restore', sourceId, sinkId: s.sinkId, file, differences: [], summary: 'deleted on the server: undeleted, then updated to the file' });
    } else {
      out.push({ action: 'create', sourceId, sinkId: s.sinkId, file, differences: [], summary: sinkSummary(s) });
    }
  }
  const wanted = new Set(want.sinks.map((s) => s.sinkId));
  for (const s of current.sinks) if (!wanted.has(s.sinkId)) out.push({ action: 'delete', sourceId, sinkId: s.sinkId, file, differences: [] });
  return out;
}

/** Every change: the files' sources in id order, then the server's sources no file has (deletes). */
export function planBranch(desired: readonly DesiredSource[], current: CurrentBranch): Change[] {
  const sorted = [...desired].sort((a, b) => (a.definition.sourceId < b.definition.sourceId ? -1 : 1));
  const out = sorted.flatMap((d) => planSource(d, current.sources.get(d.definition.sourceId), current));
  const inFiles = new Set(desired.map((d) => d.definition.sourceId));
  for (const id of [...current.sources.keys()].sort()) if (!inFiles.has(id)) out.push({ action: 'delete', sourceId: id, differences: [] });
  return out;
}
