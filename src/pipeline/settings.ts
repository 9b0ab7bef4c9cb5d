/**
 * Settings of sources and sinks: every key the reference exposes, with its type, default,
 * validation rule and whether users may change it, and Sluice's own keys (the per-source
 * quotas). Values are stored per entity as overrides ({key, value}[]); the effective
 * configuration of a sink is defaults, then the source's overrides, then the sink's (later wins).
 */
import type { SettingValue } from '../model/definition.js';
import { parseByteSize, parseDuration, formatBytes, formatDuration, goDurationString } from './units.js';
import type { SettingType, SettingView } from '../contract/settings.js';

/** The GET .../settings answer's shapes are the API contract's (src/contract/settings.ts). */
export type { SettingType, SettingView };

interface Rule {
  required?: boolean;
  min?: number;
  max?: number;
  minBytes?: string;
  maxBytes?: string;
  minDuration?: string;
  maxDuration?: string;
  oneOf?: string[];
}

export interface SettingDefinition {
  key: string;
  type: SettingType;
  description: string;
  defaultValue: unknown;
  /** Users may not change protected keys. */
  protected: boolean;
  /** The validation rule as the reference prints it (e.g. "required,min=1,max=100"). */
  validation?: string;
  rule: Rule;
  /** Value kind for strings that carry a unit. */
  unit?: 'bytes' | 'duration';
  /** `source`: a key of the source only (sinks neither list nor take it); default: both. */
  scope?: 'source';
  /**
   * Sluice's own key, not the reference's: GET .../settings lists it only when it matters (the
   * entity sets it, or the node gives it a default of its own) or when asked for every key
   * (`?all=true`), so that the reference's answer stays the reference's (its clients and the
   * conformance suite compare the whole list).
   */
  own?: true;
}

/** Whose settings a list or a change is: a sink has no source-only keys. */
export type SettingScope = 'source' | 'sink';

/** The per-source quota keys (sources/ingest/source-quotas.ts enforces them): 0 is no quota. */
export const QUOTA_RECORDS_KEY = 'source.quota.recordsPerSecond';
export const QUOTA_BYTES_KEY = 'source.quota.bytesPerSecond';

const L = 'storage.level.local.';
const UP = 'storage.level.staging.upload.trigger.';
const IMP = 'storage.level.target.import.trigger.';

type Def = Omit<SettingDefinition, 'rule' | 'validation'> & { validation?: string };

/** Listed in the order the reference validates them (its config structs' field order). */
const DEFS: Def[] = [
  { key: L + 'encoding.encoder.type', type: 'string', description: 'Encoder type.', defaultValue: 'csv', protected: true, validation: 'required,oneof=csv' },
  { key: L + 'encoding.encoder.concurrency', type: 'int', description: 'Concurrency of the format writer for the specified file type. 0 = auto = num of CPU cores', defaultValue: 0, protected: true, validation: 'min=0,max=256' },
  { key: L + 'encoding.inputBuffer', type: 'string', unit: 'bytes', description: 'Max size of the buffer before compression, if compression is enabled. 0 = disabled', defaultValue: '2MB', protected: true, validation: 'maxBytes=16MB' },
  { key: L + 'encoding.maxChunkSize', type: 'string', unit: 'bytes', description: 'Max size of a chunk sent over the network to a disk writer node.', defaultValue: '512KB', protected: true, validation: 'required,minBytes=64kB,maxBytes=1MB' },
  { key: L + 'encoding.failedChunksThreshold', type: 'int', description: 'If the defined number of chunks cannot be sent, the pipeline is marked as not ready.', defaultValue: 3, protected: true, validation: 'required,min=1,max=100' },
  { key: L + 'encoding.compression.type', type: 'string', description: 'Compression type.', defaultValue: 'gzip', protected: true, validation: 'required,oneof=none gzip' },
  { key: L + 'encoding.compression.gzip.level', type: 'int', description: 'GZIP compression level: 1-9.', defaultValue: 1, protected: true, validation: 'min=1,max=9' },
  { key: L + 'encoding.compression.gzip.implementation', type: 'string', description: 'GZIP implementation: standard, fast, parallel.', defaultValue: 'parallel', protected: true, validation: 'required,oneof=standard fast parallel' },
  { key: L + 'encoding.compression.gzip.blockSize', type: 'string', unit: 'bytes', description: 'GZIP parallel block size.', defaultValue: '256KB', protected: true, validation: 'required,minBytes=16kB,maxBytes=100MB' },
  { key: L + 'encoding.compression.gzip.concurrency', type: 'int', description: 'GZIP parallel concurrency, 0 = auto.', defaultValue: 0, protected: true },
  { key: L + 'encoding.sync.mode', type: 'string', description: 'Sync mode: "cache" or "disk".', defaultValue: 'disk', protected: true, validation: 'required,oneof=disk cache' },
  { key: L + 'encoding.sync.wait', type: 'bool', description: 'Wait for sync to disk OS cache or to disk hardware, depending on the mode.', defaultValue: true, protected: false },
  { key: L + 'encoding.sync.checkInterval', type: 'string', unit: 'duration', description: 'Minimal interval between syncs to disk.', defaultValue: '5ms', protected: true, validation: 'required,minDuration=1ms,maxDuration=30s' },
  { key: L + 'encoding.sync.countTrigger', type: 'int', description: 'Written records count to trigger sync.', defaultValue: 10000, protected: true, validation: 'required,min=1,max=1000000' },
  { key: L + 'encoding.sync.uncompressedBytesTrigger', type: 'string', unit: 'bytes', description: 'Size of buffered uncompressed data to trigger sync.', defaultValue: '1MB', protected: true, validation: 'required,minBytes=100B,maxBytes=500MB' },
  { key: L + 'encoding.sync.compressedBytesTrigger', type: 'string', unit: 'bytes', description: 'Size of buffered compressed data to trigger sync.', defaultValue: '256KB', protected: true, validation: 'required,minBytes=100B,maxBytes=100MB' },
  { key: L + 'encoding.sync.intervalTrigger', type: 'string', unit: 'duration', description: 'Interval from the last sync to trigger sync.', defaultValue: '50ms', protected: true, validation: 'required,minDuration=10ms,maxDuration=30s' },
  { key: L + 'volume.assignment.count', type: 'int', description: 'Volumes count simultaneously utilized per sink.', defaultValue: 1, protected: true, validation: 'required,min=1,max=100' },
  { key: L + 'volume.assignment.preferredTypes', type: '[]string', description: 'List of preferred volume types, start with the most preferred.', defaultValue: ['default'], protected: true, validation: 'required,min=1' },
  { key: UP + 'count', type: 'int', description: 'Records count to trigger slice upload.', defaultValue: 10000, protected: false, validation: 'required,min=1,max=10000000' },
  { key: UP + 'size', type: 'string', unit: 'bytes', description: 'Records size to trigger slice upload.', defaultValue: '5MB', protected: false, validation: 'required,minBytes=100B,maxBytes=50MB' },
  { key: UP + 'interval', type: 'string', unit: 'duration', description: 'Duration from the last slice upload to trigger the next upload.', defaultValue: '30s', protected: false, validation: 'required,minDuration=1s,maxDuration=30m' },
  { key: IMP + 'count', type: 'int', description: 'Records count to trigger file import.', defaultValue: 50000, protected: false, validation: 'required,min=1,max=10000000' },
  { key: IMP + 'size', type: 'string', unit: 'bytes', description: 'Records size to trigger file import.', defaultValue: '50MB', protected: false, validation: 'required,minBytes=100B,maxBytes=500MB' },
  { key: IMP + 'interval', type: 'string', unit: 'duration', description: 'Duration from the last import to trigger the next import.', defaultValue: '1m0s', protected: false, validation: 'required,minDuration=30s,maxDuration=24h' },
  { key: IMP + 'slicesCount', type: 'int', description: 'Number of slices in the file to trigger file import.', defaultValue: 100, protected: true, validation: 'required,min=1,max=200' },
  { key: IMP + 'expiration', type: 'string', unit: 'duration', description: 'Min remaining expiration to trigger file import.', defaultValue: '30m0s', protected: true, validation: 'required,minDuration=5m,maxDuration=45m' },
  // Sluice's own: per-source quotas on this node (a token bucket each; docs/ingestion.md, "Per-source quotas").
  { key: QUOTA_RECORDS_KEY, type: 'int', description: 'Records a second the source may send to this node (each node enforces it on its own); 0 = no quota.', defaultValue: 0, protected: false, validation: 'min=0,max=10000000', scope: 'source', own: true },
  { key: QUOTA_BYTES_KEY, type: 'string', unit: 'bytes', description: 'Record bytes a second (bodies after decompression) the source may send to this node (each node enforces it on its own); 0B = no quota.', defaultValue: '0B', protected: false, validation: 'maxBytes=10GB', scope: 'source', own: true },
];

function parseRule(validation: string | undefined): Rule {
  const rule: Rule = {};
  for (const part of (validation ?? '').split(',').filter(Boolean)) {
    const [name, arg] = part.split('=');
    if (name === 'required') rule.required = true;
    else if (name === 'min') rule.min = Number(arg);
    else if (name === 'max') rule.max = Number(arg);
    else if (name === 'minBytes') rule.minBytes = arg;
    else if (name === 'maxBytes') rule.maxBytes = arg;
    else if (name === 'minDuration') rule.minDuration = arg;
    else if (name === 'maxDuration') rule.maxDuration = arg;
    else if (name === 'oneof') rule.oneOf = arg.split(' ');
  }
  return rule;
}

export const SETTINGS: SettingDefinition[] = DEFS.map((d) => ({ ...d, rule: parseRule(d.validation) }));
const BY_KEY = new Map(SETTINGS.map((d) => [d.key, d]));

export function settingDefinition(key: string): SettingDefinition | undefined {
  return BY_KEY.get(key);
}

/**
 * A server-wide lower bound on a duration setting (the operator's --upload-min-interval and
 * --import-min-interval): a value below it takes effect as the floor.
 */
export interface SettingFloor {
  key: string;
  ms: number;
  /** The flag that sets it, named in the setting's description. */
  flag: string;
}

/** A node's own default of a key (the quota flags): shown as the key's default. */
export interface SettingDefault {
  key: string;
  value: unknown;
  /** The flag that sets it, named in the key's description. */
  flag: string;
}

export interface SettingsViewOptions {
  /** Whose list: a sink's has no source-only keys (default: a source's). */
  scope?: SettingScope;
  /** The node's floors of the interval keys. */
  floors?: readonly SettingFloor[];
  /** The node's own defaults (the quota flags), in place of the keys' built-in ones. */
  defaults?: readonly SettingDefault[];
  /** Sluice's own keys too when they do not matter (`?all=true`). */
  all?: boolean;
}

/**
 * The GET .../settings list: every key sorted, with the entity's own overrides applied. A floor
 * above a key's own minimum is made visible (`serverMinimum` and a sentence in the description),
 * so a value the API accepts is never silently lengthened; a floor below a key's own minimum
 * lowers the minimum the API accepts, and is shown the same way. At the default floors (the
 * keys' minima), without quotas, the answer is the reference's.
 */
export function settingsView(overrides: SettingValue[] | undefined, options: SettingsViewOptions = {}): SettingView[] {
  const { scope = 'source', floors = [], defaults = [], all = false } = options;
  const own = new Map((overrides ?? []).map((o) => [o.key, o.value]));
  return [...SETTINGS]
    .filter((d) => (scope === 'source' || d.scope !== 'source') && (!d.own || all || own.has(d.key) || defaults.some((n) => n.key === d.key)))
    .sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : 0))
    .map((d) => {
      const nodeDefault = defaults.find((n) => n.key === d.key);
      const defaultValue = nodeDefault ? nodeDefault.value : d.defaultValue;
      const view: SettingView = {
        key: d.key,
        type: d.type,
        description: d.description,
        value: own.has(d.key) ? own.get(d.key) : defaultValue,
        defaultValue,
        overwritten: own.has(d.key),
        protected: d.protected,
        ...(d.validation ? { validation: d.validation } : {}),
      };
      if (nodeDefault) view.description += ` This node's default: ${typeof defaultValue === 'string' ? defaultValue : JSON.stringify(defaultValue)} (${nodeDefault.flag}).`;
      const floor = floors.find((f) => f.key === d.key);
      const ownMinimum = d.rule.minDuration ? parseDuration(d.rule.minDuration) ?? 0 : 0;
      if (floor && floor.ms > ownMinimum) {
        const text = goDurationString(floor.ms);
        view.serverMinimum = text;
        view.description += ` This server waits at least ${text} (${floor.flag}): a shorter interval takes effect as ${text}.`;
      } else if (floor && floor.ms < ownMinimum) {
        // The operator allows shorter intervals than the reference (rows within seconds): the
        // answer's minimum is this server's, so that clients reading `validation` offer it.
        const text = goDurationString(floor.ms);
        view.serverMinimum = text;
        view.validation = d.validation?.replace(/minDuration=[^,]+/, `minDuration=${text}`);
        view.description += ` This server accepts intervals down to ${text} (${floor.flag}).`;
      }
      return view;
    });
}

export class SettingsError extends Error {
  constructor(
    readonly kind: 'invalid' | 'protected',
    message: string,
  ) {
    super(message);
  }
}

/**
 * Applies a PATCH: `null` resets a key to its default. Throws SettingsError('protected') when
 * a protected key is touched and SettingsError('invalid') listing one line per invalid key,
 * in the reference's validation order (a source-only key on a sink is invalid). Returns the
 * new overrides.
 */
export function patchSettings(current: SettingValue[] | undefined, patch: { key: string; value: unknown }[], floors: readonly SettingFloor[] = [], scope: SettingScope = 'source'): SettingValue[] {
  const unknown = patch.filter((p) => !BY_KEY.has(p.key)).map((p) => `"${p.key}"`);
  if (unknown.length > 0) throw new SettingsError('invalid', `- Unknown keys: ${unknown.join(', ')}.`);
  const sourceOnly = scope === 'sink' ? patch.filter((p) => BY_KEY.get(p.key)!.scope === 'source').map((p) => `"${p.key}"`) : [];
  if (sourceOnly.length > 0) throw new SettingsError('invalid', `- Settings of the source, not of its sinks: ${sourceOnly.join(', ')}; set them on the source.`);
  const protectedKeys = patch.filter((p) => BY_KEY.get(p.key)!.protected).map((p) => `"${p.key}"`);
  if (protectedKeys.length > 0) throw new SettingsError('protected', `Cannot modify protected keys: ${protectedKeys.join(', ')}.`);

  const values = new Map((current ?? []).map((o) => [o.key, o.value]));
  for (const p of patch) {
    if (p.value === null) values.delete(p.key);
    else values.set(p.key, p.value);
  }
  const problems: string[] = [];
  for (const def of SETTINGS) {
    const p = patch.find((x) => x.key === def.key);
    if (!p || p.value === null) continue;
    const problem = validateValue(def, p.value, floors.find((f) => f.key === def.key));
    if (problem) problems.push(`- ${problem}`);
  }
  if (problems.length > 0) throw new SettingsError('invalid', problems.join('\n'));
  return SETTINGS.filter((d) => values.has(d.key)).map((d) => ({ key: d.key, value: values.get(d.key) }));
}

/** `floor`: the server's floor of the key; one below the key's own minimum is the minimum. */
function validateValue(def: SettingDefinition, value: unknown, floor?: SettingFloor): string | undefined {
  const k = `"${def.key}"`;
  const shown = typeof value === 'string' ? value : JSON.stringify(value);
  switch (def.type) {
    case 'bool':
      if (typeof value !== 'boolean') return `Invalid ${k} value "${shown}": expected bool.`;
      return undefined;
    case 'int':
    case 'float': {
      if (typeof value !== 'number' || (def.type === 'int' && !Number.isInteger(value))) {
        return `Invalid ${k} value "${shown}": expected ${def.type}.`;
      }
      const outOfRange = (def.rule.min !== undefined && value < def.rule.min) || (def.rule.max !== undefined && value > def.rule.max);
      // Sluice's own keys name the whole range (the reference's messages name the bound passed).
      if (outOfRange && def.own) return `${k} must be from ${def.rule.min ?? 0} to ${def.rule.max}, got ${shown} (0: no quota).`;
      if (def.rule.min !== undefined && value < def.rule.min) return `${k} must be ${def.rule.min} or greater.`;
      if (def.rule.max !== undefined && value > def.rule.max) return `${k} must be ${def.rule.max} or less.`;
      return undefined;
    }
    case '[]string':
      if (!Array.isArray(value) || value.some((v) => typeof v !== 'string')) return `Invalid ${k} value "${shown}": expected []string.`;
      if (def.rule.min !== undefined && value.length < def.rule.min) return `${k} must contain at least ${def.rule.min} item(s).`;
      return undefined;
    case 'string': {
      if (typeof value !== 'string') return `Invalid ${k} value "${shown}": expected string.`;
      if (def.rule.required && value === '') return `${k} is a required field.`;
      if (def.rule.oneOf && !def.rule.oneOf.includes(value)) return `${k} must be one of [${def.rule.oneOf.join(' ')}].`;
      if (def.unit === 'bytes') {
        const bytes = parseByteSize(value);
        if (bytes === undefined) return `Invalid ${k} value "${value}": invalid syntax.`;
        if (def.own && def.rule.maxBytes && bytes > parseByteSize(def.rule.maxBytes)!) return `${k} must be from 0B to ${formatBytes(def.rule.maxBytes)}, got ${value} (0B: no quota).`;
        if (def.rule.minBytes && bytes < parseByteSize(def.rule.minBytes)!) return `${k} must be ${formatBytes(def.rule.minBytes)} or greater.`;
        if (def.rule.maxBytes && bytes > parseByteSize(def.rule.maxBytes)!) return `${k} must be ${formatBytes(def.rule.maxBytes)} or less.`;
      }
      if (def.unit === 'duration') {
        const ms = parseDuration(value);
        if (ms === undefined) return `Invalid ${k}: time: invalid duration "${value}".`;
        if (def.rule.minDuration) {
          const own = parseDuration(def.rule.minDuration)!;
          const minimum = floor && floor.ms < own ? floor.ms : own;
          if (ms < minimum) return `${k} must be ${minimum === own ? formatDuration(def.rule.minDuration) : goDurationString(minimum)} or greater.`;
        }
        if (def.rule.maxDuration && ms > parseDuration(def.rule.maxDuration)!) return `${k} must be ${formatDuration(def.rule.maxDuration)} or less.`;
      }
      return undefined;
    }
    default:
      return undefined;
  }
}

/** Effective value of a key: defaults, then source overrides, then sink overrides. */
export function effectiveSetting(key: string, ...layers: (SettingValue[] | undefined)[]): unknown {
  let value = BY_KEY.get(key)?.defaultValue;
  for (const layer of layers) {
    const hit = layer?.find((o) => o.key === key);
    if (hit) value = hit.value;
  }
  return value;
}
