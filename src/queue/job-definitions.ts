/**
 * What a job runs: one definition per enabled row (or per row chosen by
 * `configRowIds`), its configuration the configuration's with the row's merged over it as PHP's
 * array_replace_recursive does; with no rows, the configuration once; with `configData`, that.
 */
import type { ConfigurationWithRows } from '../storage/configurations/model.js';

export type JsonObject = Record<string, unknown>;

export interface JobDefinition {
  rowId: string | null;
  configuration: JsonObject;
  /** The component's state kept from the previous run (`in/state.json`). */
  state: JsonObject;
}

const isObject = (v: unknown): v is JsonObject => v !== null && typeof v === 'object' && !Array.isArray(v);

/**
 * PHP array_replace_recursive: keys of `replacement` replace those of `base`; where both are
 * arrays (objects or lists) they are merged recursively, lists by index.
 */
export function arrayReplaceRecursive(base: unknown, replacement: unknown): unknown {
  if (Array.isArray(base) && Array.isArray(replacement)) {
    const out = [...base];
    replacement.forEach((v, i) => { out[i] = i < base.length ? arrayReplaceRecursive(base[i], v) : v; });
    return out;
  }
  if (isObject(base) && isObject(replacement)) {
    const out: JsonObject = { ...base };
    for (const [k, v] of Object.entries(replacement)) out[k] = k in base ? arrayReplaceRecursive(base[k], v) : v;
    return out;
  }
  return replacement;
}

function componentState(state: JsonObject | undefined): JsonObject {
  const s = state?.component;
  return isObject(s) ? s : {};
}

export function jobDefinitions(config: ConfigurationWithRows | undefined, configData: JsonObject | null, configRowIds: string[]): JobDefinition[] {
  if (configData !== null) return [{ rowId: null, configuration: configData, state: componentState(config?.state) }];
  if (!config) return [];
  if (config.rows.length === 0) return [{ rowId: null, configuration: config.configuration, state: componentState(config.state) }];
  const rows = configRowIds.length > 0
    ? config.rows.filter((r) => configRowIds.includes(r.id))
    : config.rows.filter((r) => !r.isDisabled);
  return rows.map((row) => ({
    rowId: row.id,
    configuration: arrayReplaceRecursive(config.configuration, row.configuration) as JsonObject,
    state: componentState(row.state),
  }));
}
