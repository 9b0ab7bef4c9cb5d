/**
 * The pipeline file: one YAML file per source (`<dir>/<sourceId>.yaml`, its sinks inside), as
 * `sluice pull` writes it and `sluice diff` / `sluice push` read it. Written in one stable form
 * (fixed key order, settings sorted, no line folding), so a second pull of an unchanged server
 * changes no byte. Read strictly: every problem is reported with the file, the path in it and
 * its line (`pipelines/web.yaml: sinks[1].table.mapping.columns[0].type: ... (line 14)`),
 * before anything is sent to a server.
 *
 * Hostile files: the size is checked before reading (`maxBytes`), aliases are limited
 * (`maxAliasCount`, so a "billion laughs" file fails instead of filling the memory), and the
 * parser's errors (a nesting too deep for the stack included) become a problem of the file.
 */
import { isMap, isScalar, LineCounter, parseDocument, stringify, visit, type Document } from 'yaml';
import { closestName } from '../../model/did-you-mean.js';
import { normalizeId } from '../../model/ids.js';
import { BASE_TYPES, COLUMN_TYPES, DATA_TYPES_OF, KEY_COLUMN_TYPES, SIGNALS, SOURCE_TYPES, type Column } from '../../model/definition.js';
import { MAX_PRIMARY_KEY_COLUMNS } from '../../model/columns.js';
import { DomainError } from '../../domain-errors.js';
import { parseTableId, validateColumns } from '../../storage/tables.js';
import { patchSettings, SettingsError, type SettingFloor } from '../../pipeline/settings.js';
import { canonicalSource, type Settings, type SinkDefinition, type SourceDefinition } from './definition.js';

/** The API's own bounds (src/api/stream/schemas.ts), checked here so that a file fails before a push starts. */
const MAX_NAME = 40;
const MAX_DESCRIPTION = 4096;
const MAX_ID = 48;
const MAX_TABLE_ID = 256;
const MAX_COLUMN_NAME = 64;
const MAX_COLUMNS = 100;
const MAX_CODE = 4096;
/** MAX_SINKS_PER_SOURCE of the server (src/definition/sinks.ts). */
const MAX_SINKS = 100;

export const FILE_SUFFIX = '.yaml';

export interface ReadLimits {
  /** Bytes a pipeline file may have (--max-file-size). */
  maxBytes: number;
  /** Aliases (`*name`) a file may use: each is expanded when read, so a few nested ones can build gigabytes. */
  maxAliasCount: number;
}

export const DEFAULT_LIMITS: ReadLimits = { maxBytes: 4 * 1024 * 1024, maxAliasCount: 100 };

/** A pipeline file that did not pass: each line names the file, the path in it and what is wrong. */
export class PipelineFileError extends Error {
  constructor(
    readonly problems: string[],
    /** How many problems there are: more than the lines when some were not listed. */
    readonly count = problems.length,
  ) {
    super(problems.join('\n'));
  }
}

const header = (sourceId: string) => `# Sluice pipeline: the source "${sourceId}" and its sinks, as \`sluice pull\` wrote them.
# \`sluice diff\` shows how a server differs from this file, \`sluice push\` makes the server match it
# (docs/pipelines-as-code.md). Only what a user sets is here: no ids the server derives, versions,
# times or statistics, and never a secret (the ingestion URL and secret stay on each server).
# Settings: only the keys this source or sink overrides; a key left out is the server's default.
`;

/** The file's text: the header, then the canonical definition in a fixed key order. */
export function pipelineYaml(definition: SourceDefinition): string {
  const canonical = canonicalSource(definition);
  // lineWidth 0: no folding, so a long template or description stays one line and diffs well.
  return header(canonical.sourceId) + stringify(canonical, { lineWidth: 0, minContentWidth: 0, indentSeq: true, aliasDuplicateObjects: false });
}

type Segment = string | number;

/** `sinks[1].table.mapping.columns[0].type`, `settings["storage.level.target.import.trigger.interval"]`. */
export function pathText(segments: readonly Segment[]): string {
  let out = '';
  for (const s of segments) {
    if (typeof s === 'number') out += `[${s}]`;
    else if (/^[A-Za-z_][A-Za-z0-9_]*$/.test(s)) out += out === '' ? s : `.${s}`;
    else out += `[${JSON.stringify(s)}]`;
  }
  return out;
}

/** Problems reported of one file at most: a hostile file with a million bad keys is named, not listed (and finding a line is not free). */
const MAX_PROBLEMS = 20;

/** Collects the problems of one file, each with its path and line. */
class Problems {
  private readonly found: string[] = [];
  private more = 0;
  constructor(
    private readonly file: string,
    private readonly doc?: Document,
    private readonly lineCounter?: LineCounter,
  ) {}

  add(path: readonly Segment[], message: string): void {
    if (this.found.length >= MAX_PROBLEMS) {
      this.more++;
      return;
    }
    const where = path.length === 0 ? '' : `${pathText(path)}: `;
    this.found.push(`${this.file}: ${where}${message}${this.lineOf(path)}`);
  }

  get lines(): string[] {
    return this.more === 0 ? this.found : [...this.found, `${this.file}: ${this.more} more problem${this.more === 1 ? '' : 's'} not listed`];
  }

  get count(): number {
    return this.found.length + this.more;
  }

  private lineOf(path: readonly Segment[]): string {
    if (!this.doc || !this.lineCounter || path.length === 0) return '';
    const node = this.doc.getIn(path, true) as { range?: [number, number] } | undefined;
    // A missing key: point at the object that lacks it.
    const holder = node?.range ? node : (this.doc.getIn(path.slice(0, -1), true) as { range?: [number, number] } | undefined);
    return holder?.range ? ` (line ${this.lineCounter.linePos(holder.range[0]).line})` : '';
  }
}

/** What reading one file needs: its value at a path, checked against a shape. */
class Reader {
  constructor(readonly problems: Problems) {}

  /** A mapping with only the allowed keys (a misspelt key is named with the closest one); the missing required keys are reported. */
  object(value: unknown, path: Segment[], allowed: readonly string[], required: readonly string[]): Record<string, unknown> | undefined {
    if (value === null || typeof value !== 'object' || Array.isArray(value)) {
      this.problems.add(path, `must be a mapping (key: value lines), got ${describe(value)}`);
      return undefined;
    }
    const object = value as Record<string, unknown>;
    for (const key of Object.keys(object)) {
      if (allowed.includes(key)) continue;
      const near = closestName(key, allowed);
      this.problems.add([...path, key], `unknown key${near ? `; did you mean "${near}"?` : ''} (known: ${allowed.join(', ')})`);
    }
    for (const key of required) {
      if (object[key] === undefined || object[key] === null) this.problems.add([...path, key], 'is missing');
    }
    return object;
  }

  string(value: unknown, path: Segment[], options: { min?: number; max?: number } = {}): string | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'string') {
      this.problems.add(path, `must be a string, got ${describe(value)}${typeof value === 'number' || typeof value === 'boolean' ? ' (put it in quotes)' : ''}`);
      return undefined;
    }
    const { min = 0, max } = options;
    if (value.length < min) this.problems.add(path, min === 1 ? 'must not be empty' : `must have at least ${min} characters`);
    else if (max !== undefined && value.length > max) this.problems.add(path, `has ${value.length} characters; at most ${max}`);
    return value;
  }

  oneOf<T extends string>(value: unknown, path: Segment[], allowed: readonly T[], what: string): T | undefined {
    const text = this.string(value, path);
    if (text === undefined) return undefined;
    if ((allowed as readonly string[]).includes(text)) return text as T;
    const near = closestName(text, allowed);
    this.problems.add(path, `"${text}" is not ${what}${near ? `; did you mean "${near}"?` : ''} (one of ${allowed.join(', ')})`);
    return undefined;
  }

  boolean(value: unknown, path: Segment[]): boolean | undefined {
    if (value === undefined || value === null) return undefined;
    if (typeof value !== 'boolean') {
      this.problems.add(path, `must be true or false, got ${describe(value)}`);
      return undefined;
    }
    return value;
  }

  /** An id as the API keeps it: `normalizeId` would not change it, so that a push does not create it under another id. */
  id(value: unknown, path: Segment[]): string | undefined {
    const id = this.string(value, path, { min: 1, max: MAX_ID });
    if (id === undefined || id === '') return undefined;
    const normal = normalizeId(id);
    if (normal !== id) {
      this.problems.add(path, `"${id}" is not an id the server keeps as it is: use lowercase letters, digits and "-"${normal ? ` (e.g. "${normal}")` : ''}`);
      return undefined;
    }
    return id;
  }

  list(value: unknown, path: Segment[], max: number): unknown[] | undefined {
    if (value === undefined || value === null) return undefined;
    if (!Array.isArray(value)) {
      this.problems.add(path, `must be a list (lines that start with "- "), got ${describe(value)}`);
      return undefined;
    }
    if (value.length > max) this.problems.add(path, `has ${value.length} items; at most ${max}`);
    return value;
  }
}

function describe(value: unknown): string {
  if (value === null) return 'nothing';
  if (Array.isArray(value)) return 'a list';
  if (typeof value === 'object') return 'a mapping';
  if (typeof value === 'string') return `the string ${JSON.stringify(value.length > 40 ? `${value.slice(0, 40)}…` : value)}`;
  return `${typeof value} ${String(value)}`;
}

const SOURCE_KEYS = ['sourceId', 'type', 'name', 'description', 'disabled', 'settings', 'sinks'] as const;
const SINK_KEYS = ['sinkId', 'type', 'name', 'description', 'disabled', 'table', 'allowedSignals', 'settings'] as const;
const TABLE_KEYS = ['type', 'tableId', 'mapping'] as const;
const MAPPING_KEYS = ['columns', 'filter'] as const;
const COLUMN_KEYS = ['name', 'type', 'path', 'defaultValue', 'rawString', 'template', 'dataType', 'primaryKey'] as const;
const CODE_KEYS = ['language', 'content'] as const;

function code(reader: Reader, value: unknown, path: Segment[]): { language: 'jsonnet'; content: string } | undefined {
  const object = reader.object(value, path, CODE_KEYS, ['language', 'content']);
  if (!object) return undefined;
  const language = reader.oneOf(object.language, [...path, 'language'], ['jsonnet'] as const, 'a template language');
  const content = reader.string(object.content, [...path, 'content'], { min: 1, max: MAX_CODE });
  return language && content ? { language, content } : undefined;
}

function column(reader: Reader, value: unknown, path: Segment[]): Column | undefined {
  const object = reader.object(value, path, COLUMN_KEYS, ['name', 'type']);
  if (!object) return undefined;
  const name = reader.string(object.name, [...path, 'name'], { min: 1, max: MAX_COLUMN_NAME });
  const type = reader.oneOf(object.type, [...path, 'type'], COLUMN_TYPES, 'a column type');
  const out: Column = { name: name ?? '', type: type ?? 'body' };
  const only = (key: string, types: string[]) => {
    if (object[key] === undefined || object[key] === null || type === undefined || types.includes(type)) return true;
    reader.problems.add([...path, key], `is only for columns of type ${types.map((t) => `"${t}"`).join(' or ')}, not "${type}"`);
    return false;
  };
  if (only('path', ['path'])) out.path = reader.string(object.path, [...path, 'path']);
  if (type === 'path' && out.path === undefined && object.path == null) reader.problems.add([...path, 'path'], 'is missing (a column of type "path" needs it; "" is the whole body)');
  if (only('defaultValue', ['path'])) out.defaultValue = reader.string(object.defaultValue, [...path, 'defaultValue']);
  if (only('rawString', ['path', 'template'])) out.rawString = reader.boolean(object.rawString, [...path, 'rawString']);
  if (only('template', ['template']) && object.template != null) out.template = code(reader, object.template, [...path, 'template']);
  if (type === 'template' && object.template == null) reader.problems.add([...path, 'template'], 'is missing (a column of type "template" needs it)');
  const dataType = reader.oneOf(object.dataType, [...path, 'dataType'], BASE_TYPES, 'a data type');
  if (dataType !== undefined && type !== undefined) {
    const allowed = DATA_TYPES_OF[type];
    if (allowed.includes(dataType)) out.dataType = dataType;
    else reader.problems.add([...path, 'dataType'], `a column of type "${type}" cannot be ${dataType}: it may be ${allowed.join(', ')}`);
  }
  out.primaryKey = reader.boolean(object.primaryKey, [...path, 'primaryKey']);
  if (out.primaryKey && type !== undefined && !KEY_COLUMN_TYPES.includes(type)) {
    reader.problems.add([...path, 'primaryKey'], `a column of type "${type}" cannot be part of the primary key (key columns are of type ${KEY_COLUMN_TYPES.join(', ')})`);
  } else if (out.primaryKey && out.dataType === 'JSON') {
    reader.problems.add([...path, 'primaryKey'], 'a JSON column cannot be part of the primary key');
  }
  return name !== undefined && type !== undefined ? out : undefined;
}

/** A Storage error (table id, column names) at a path, in the server's own words. */
function storageCheck(reader: Reader, path: Segment[], check: () => void): void {
  try {
    check();
  } catch (err) {
    if (!(err instanceof DomainError)) throw err;
    reader.problems.add(path, err.message);
  }
}

function sink(reader: Reader, value: unknown, path: Segment[]): SinkDefinition | undefined {
  const object = reader.object(value, path, SINK_KEYS, ['sinkId', 'name', 'table']);
  if (!object) return undefined;
  const sinkId = reader.id(object.sinkId, [...path, 'sinkId']);
  reader.oneOf(object.type, [...path, 'type'], ['table'] as const, 'a sink type');
  const name = reader.string(object.name, [...path, 'name'], { min: 1, max: MAX_NAME });
  const description = reader.string(object.description, [...path, 'description'], { max: MAX_DESCRIPTION });
  const disabled = reader.boolean(object.disabled, [...path, 'disabled']);
  const tablePath = [...path, 'table'];
  const table = object.table == null ? undefined : reader.object(object.table, tablePath, TABLE_KEYS, ['tableId', 'mapping']);
  let tableId: string | undefined;
  let columns: Column[] | undefined;
  let filter: { language: 'jsonnet'; content: string } | undefined;
  if (table) {
    reader.oneOf(table.type, [...tablePath, 'type'], ['keboola'] as const, 'a table type');
    tableId = reader.string(table.tableId, [...tablePath, 'tableId'], { min: 1, max: MAX_TABLE_ID });
    if (tableId) storageCheck(reader, [...tablePath, 'tableId'], () => parseTableId(tableId!));
    const mappingPath = [...tablePath, 'mapping'];
    const mapping = table.mapping == null ? undefined : reader.object(table.mapping, mappingPath, MAPPING_KEYS, ['columns']);
    if (mapping) {
      const items = reader.list(mapping.columns, [...mappingPath, 'columns'], MAX_COLUMNS);
      if (items?.length === 0) reader.problems.add([...mappingPath, 'columns'], 'must have at least one column');
      const read = items?.map((c, i) => column(reader, c, [...mappingPath, 'columns', i]));
      if (read && read.every((c) => c !== undefined)) {
        columns = read as Column[];
        storageCheck(reader, [...mappingPath, 'columns'], () => validateColumns(columns!.map((c) => c.name)));
        const keyColumns = columns.filter((c) => c.primaryKey).length;
        if (keyColumns > MAX_PRIMARY_KEY_COLUMNS) reader.problems.add([...mappingPath, 'columns'], `${keyColumns} columns are part of the primary key; at most ${MAX_PRIMARY_KEY_COLUMNS}`);
      }
      if (mapping.filter != null) filter = code(reader, mapping.filter, [...mappingPath, 'filter']);
    }
  }
  const signals = reader.list(object.allowedSignals, [...path, 'allowedSignals'], SIGNALS.length);
  const allowedSignals = signals?.map((s, i) => reader.oneOf(s, [...path, 'allowedSignals', i], SIGNALS, 'a signal'));
  if (allowedSignals && new Set(allowedSignals).size < allowedSignals.length) reader.problems.add([...path, 'allowedSignals'], 'names a signal twice');
  const settings = settingsMap(reader, object.settings, [...path, 'settings']);
  if (!sinkId || !name || !tableId || !columns) return undefined;
  return {
    sinkId,
    name,
    description,
    disabled: disabled ? true : undefined,
    table: { tableId, mapping: { columns, ...(filter ? { filter } : {}) } },
    allowedSignals: allowedSignals?.filter((s) => s !== undefined),
    settings,
  };
}

function settingsMap(reader: Reader, value: unknown, path: Segment[]): Settings | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'object' || Array.isArray(value)) {
    reader.problems.add(path, `must be a mapping of setting keys to values, got ${describe(value)}`);
    return undefined;
  }
  return value as Settings;
}

/**
 * The settings' keys and values, checked as PATCH .../settings checks them (unknown and
 * protected keys, a source's own keys on a sink, types, ranges). `floors`: the server's duration
 * minima where they differ from the keys' own (its --import-min-interval); without them a
 * duration is checked for its syntax and maximum only, and the server checks its minimum.
 */
export function settingsProblems(definition: SourceDefinition, floors: readonly SettingFloor[] | 'lenient'): { path: Segment[]; message: string }[] {
  const out: { path: Segment[]; message: string }[] = [];
  const check = (settings: Settings | undefined, path: Segment[], scope: 'source' | 'sink') => {
    for (const [key, value] of Object.entries(settings ?? {})) {
      if (value === null) continue;
      try {
        patchSettings([], [{ key, value }], floors === 'lenient' ? [{ key, ms: 0, flag: '' }] : floors, scope);
      } catch (err) {
        if (!(err instanceof SettingsError)) throw err;
        out.push({ path: [...path, 'settings', key], message: err.message.replace(/^- /, '') });
      }
    }
  };
  check(definition.settings, [], 'source');
  definition.sinks.forEach((s, i) => check(s.settings, ['sinks', i], 'sink'));
  return out;
}

export interface ParsedFile {
  definition: SourceDefinition;
  /** The YAML document, to find the line of a path in later problems. */
  problemsAt(problems: { path: Segment[]; message: string }[]): string[];
}

/**
 * Reads one pipeline file's text: YAML (one document, no duplicate keys, aliases within the
 * limit), then the definition with every problem named. `file`: how problems name it
 * (`pipelines/web.yaml`); its base name must be the source id. Throws PipelineFileError.
 */
export function parsePipeline(file: string, text: string, limits: ReadLimits = DEFAULT_LIMITS): ParsedFile {
  const lineCounter = new LineCounter();
  let doc: Document;
  let value: unknown;
  try {
    // uniqueKeys: the library's own check compares each key with every earlier one of its map
    // (200,000 keys take minutes); duplicateKey does it with a set.
    doc = parseDocument(text, { lineCounter, prettyErrors: false, uniqueKeys: false, merge: false, schema: 'core', strict: true, stringKeys: true });
    const firstError = doc.errors[0];
    const duplicate = firstError ? undefined : duplicateKey(doc);
    if (duplicate) {
      const at = lineCounter.linePos(duplicate.offset);
      throw new PipelineFileError([`${file}:${at.line}:${at.col}: not valid YAML: the key "${duplicate.key}" is there twice in one mapping`]);
    }
    if (firstError) {
      const at = lineCounter.linePos(firstError.pos[0]);
      const reason = /call stack/i.test(firstError.message) ? 'it is nested too deeply to read' : firstError.message.split('\n')[0];
      throw new PipelineFileError([`${file}:${at.line}:${at.col}: not valid YAML: ${reason}`]);
    }
    value = doc.toJS({ maxAliasCount: limits.maxAliasCount });
  } catch (err) {
    if (err instanceof PipelineFileError) throw err;
    // The alias limit (ReferenceError "Excessive alias count"), a nesting deeper than the stack.
    const reason = err instanceof RangeError ? 'it is nested too deeply to read' : (err as Error).message;
    throw new PipelineFileError([`${file}: not read: ${reason}`]);
  }
  const problems = new Problems(file, doc, lineCounter);
  const reader = new Reader(problems);
  if (value === null || value === undefined) throw new PipelineFileError([`${file}: is empty (sluice pull writes one file per source)`]);
  const object = reader.object(value, [], SOURCE_KEYS, ['sourceId', 'type', 'name']);
  if (!object) throw new PipelineFileError(problems.lines, problems.count);
  const sourceId = reader.id(object.sourceId, ['sourceId']);
  const expected = baseName(file);
  if (sourceId && sourceId !== expected) problems.add(['sourceId'], `"${sourceId}" is not the file's name: the file of source "${sourceId}" is ${sourceId}${FILE_SUFFIX} (rename the file, or the id)`);
  const type = reader.oneOf(object.type, ['type'], SOURCE_TYPES, 'a source type');
  const name = reader.string(object.name, ['name'], { min: 1, max: MAX_NAME });
  const description = reader.string(object.description, ['description'], { max: MAX_DESCRIPTION });
  const disabled = reader.boolean(object.disabled, ['disabled']);
  const settings = settingsMap(reader, object.settings, ['settings']);
  const items = reader.list(object.sinks, ['sinks'], MAX_SINKS) ?? [];
  const sinks = items.map((s, i) => sink(reader, s, ['sinks', i]));
  const seen = new Map<string, number>();
  sinks.forEach((s, i) => {
    if (!s) return;
    const earlier = seen.get(s.sinkId);
    if (earlier !== undefined) problems.add(['sinks', i, 'sinkId'], `"${s.sinkId}" is the id of sinks[${earlier}] too: sink ids are unique in a source`);
    else seen.set(s.sinkId, i);
  });
  const definition = sourceId && type && name ? { sourceId, type, name, description, disabled: disabled ? true as const : undefined, settings, sinks: sinks.filter((s) => s !== undefined) } : undefined;
  if (definition) for (const p of settingsProblems(definition, 'lenient')) problems.add(p.path, p.message);
  if (problems.count > 0 || !definition) throw new PipelineFileError(problems.lines, problems.count);
  return {
    definition,
    problemsAt: (found) => {
      const more = new Problems(file, doc, lineCounter);
      for (const p of found) more.add(p.path, p.message);
      return more.lines;
    },
  };
}

/** The first key that a mapping of the document has twice, and where its second one is. */
function duplicateKey(doc: Document): { key: string; offset: number } | undefined {
  let found: { key: string; offset: number } | undefined;
  visit(doc, {
    Map(_, map) {
      const seen = new Set<string>();
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? String(pair.key.value) : String(pair.key);
        if (seen.has(key)) {
          found = { key, offset: (pair.key as { range?: [number, number] }).range?.[0] ?? 0 };
          return visit.BREAK;
        }
        seen.add(key);
      }
      return undefined;
    },
  });
  return found;
}

function baseName(file: string): string {
  const name = file.split(/[\\/]/).pop() ?? file;
  return name.endsWith(FILE_SUFFIX) ? name.slice(0, -FILE_SUFFIX.length) : name;
}

/** Whether a YAML text looks like a pipeline file (a mapping with a sourceId), without expanding aliases: pull removes only such files. */
export function looksLikePipeline(text: string): boolean {
  try {
    const doc = parseDocument(text, { schema: 'core', merge: false });
    if (doc.errors.length > 0 || !isMap(doc.contents)) return false;
    const id = doc.contents.get('sourceId', true);
    return isScalar(id) && typeof id.value === 'string';
  } catch {
    return false;
  }
}
