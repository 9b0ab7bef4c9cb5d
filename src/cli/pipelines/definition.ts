/**
 * A pipeline as `sluice pull` writes it and `sluice push` reads it: a source and its sinks, with
 * only what a user sets (names, descriptions, type, mapping, allowed signals, the settings the
 * user overrode, whether it is disabled). Never what the server derives (project and branch ids,
 * versions, times, statistics) and never a secret (the ingestion URL and secret, tokens): the
 * fields are picked one by one from the API's answers, nothing is copied wholesale.
 *
 * Both sides of a comparison go through the canonical form here (`canonicalColumn`, defaults
 * left out, settings sorted), so that a file pulled from a server compares equal to it, and a
 * second pull writes the same bytes.
 */
import { SIGNALS, type Column, type MappingFilter, type Signal, type SourceType } from '../../model/definition.js';
import type { SettingView } from '../../contract/settings.js';
import type { SinkView, SourceView } from '../../contract/stream-sources.js';

/** A setting the user overrode: key -> value (sorted by key). */
export type Settings = Record<string, unknown>;

export interface SinkDefinition {
  sinkId: string;
  name: string;
  description?: string;
  disabled?: true;
  table: { tableId: string; mapping: { columns: Column[]; filter?: MappingFilter } };
  /** OTLP sources: the signals the sink takes; absent: every signal. */
  allowedSignals?: Signal[];
  settings?: Settings;
}

export interface SourceDefinition {
  sourceId: string;
  type: SourceType;
  name: string;
  description?: string;
  disabled?: true;
  settings?: Settings;
  sinks: SinkDefinition[];
}

/**
 * A mapping column as the API echoes it, less its defaults: `rawString` and `primaryKey` only
 * when true, the fields of other column types left out (the API ignores them too).
 */
export function canonicalColumn(c: Column): Column {
  const out: Column = { name: c.name, type: c.type };
  if (c.type === 'path') {
    out.path = c.path ?? '';
    if (c.defaultValue !== undefined) out.defaultValue = c.defaultValue;
  }
  if (c.type === 'template' && c.template) out.template = { language: c.template.language, content: c.template.content };
  if ((c.type === 'path' || c.type === 'template') && c.rawString === true) out.rawString = true;
  if (c.dataType !== undefined) out.dataType = c.dataType;
  if (c.primaryKey === true) out.primaryKey = true;
  return out;
}

/** Settings sorted by key; none: absent. */
export function canonicalSettings(settings: Settings | undefined): Settings | undefined {
  const keys = Object.keys(settings ?? {}).filter((k) => settings![k] !== undefined && settings![k] !== null).sort();
  if (keys.length === 0) return undefined;
  return Object.fromEntries(keys.map((k) => [k, settings![k]]));
}

/** Allowed signals in the API's order, without repeats; none: absent (every signal). */
function canonicalSignals(signals: readonly Signal[] | undefined): Signal[] | undefined {
  const out = SIGNALS.filter((s) => signals?.includes(s));
  return out.length === 0 ? undefined : out;
}

/** The keys in the order the file shows them, without the absent ones. */
function compact<T extends object>(value: T): T {
  return Object.fromEntries(Object.entries(value).filter(([, v]) => v !== undefined)) as T;
}

export function canonicalSink(s: SinkDefinition): SinkDefinition {
  const mapping = s.table.mapping;
  return compact({
    sinkId: s.sinkId,
    name: s.name,
    description: s.description ? s.description : undefined,
    disabled: s.disabled ? true as const : undefined,
    table: {
      tableId: s.table.tableId,
      mapping: compact({
        columns: mapping.columns.map(canonicalColumn),
        filter: mapping.filter ? { language: mapping.filter.language, content: mapping.filter.content } : undefined,
      }),
    },
    allowedSignals: canonicalSignals(s.allowedSignals),
    settings: canonicalSettings(s.settings),
  });
}

/** The canonical source; its sinks sorted by id (the order the API lists them). */
export function canonicalSource(s: SourceDefinition): SourceDefinition {
  return compact({
    sourceId: s.sourceId,
    type: s.type,
    name: s.name,
    description: s.description ? s.description : undefined,
    disabled: s.disabled ? true as const : undefined,
    settings: canonicalSettings(s.settings),
    sinks: [...s.sinks].sort((a, b) => (a.sinkId < b.sinkId ? -1 : a.sinkId > b.sinkId ? 1 : 0)).map(canonicalSink),
  });
}

/** The keys the entity overrode (GET .../settings: `overwritten`), whatever their value. */
export function overriddenSettings(views: readonly SettingView[]): Settings {
  return Object.fromEntries(views.filter((v) => v.overwritten).map((v) => [v.key, v.value]));
}

/** A sink from the API's answers: the fields a user sets, nothing else. */
export function sinkFromApi(view: SinkView, settings: readonly SettingView[]): SinkDefinition {
  return canonicalSink({
    sinkId: view.sinkId,
    name: view.name,
    description: view.description,
    disabled: view.disabled ? true : undefined,
    table: { tableId: view.table.tableId, mapping: view.table.mapping },
    allowedSignals: view.allowedSignals,
    settings: overriddenSettings(settings),
  });
}

/** A source from the API's answers: the fields a user sets, never `http.url` or `otlp.*` (they carry the secret). */
export function sourceFromApi(view: SourceView, settings: readonly SettingView[], sinks: SinkDefinition[]): SourceDefinition {
  return canonicalSource({
    sourceId: view.sourceId,
    type: view.type,
    name: view.name,
    description: view.description,
    disabled: view.disabled ? true : undefined,
    settings: overriddenSettings(settings),
    sinks,
  });
}
