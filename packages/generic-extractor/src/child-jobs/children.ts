/**
 * Child jobs: placeholders take values from the parent item (`path`, or
 * `N:name` for the N-th ancestor), fill `{name}` in the child's endpoint, and become `parent_*`
 * columns of the child's rows. An array value makes one child job per element (cartesian
 * product over placeholders). Pure.
 */
import { UserError } from '../errors.js';
import { getDataFromPath, PathNotFound } from '../response/data-path.js';
import { evaluate } from '../config/functions.js';
import { csvCell, isObject, phpJsonEncode, type Json, type JsonObject } from '../php.js';

export interface PlaceholderValue {
  placeholder: string;
  /** The path in the parent item (column `parent_<field>`). */
  field: string;
  value: Json;
}

function levelOf(placeholder: string): number {
  const colon = placeholder.indexOf(':');
  if (colon < 0) return 0;
  const n = parseInt(placeholder.slice(0, colon), 10);
  return (Number.isNaN(n) ? 0 : n) - 1;
}

/**
 * Placeholder values for one parent item. `parentResults[0]` is the item itself, `[1]` its
 * parent, and so on. Returns one set per child job to run.
 */
export function resolvePlaceholders(
  placeholders: Record<string, string | JsonObject>,
  parentResults: Json[],
  now: () => number = Date.now,
): PlaceholderValue[][] {
  const single: PlaceholderValue[] = [];
  for (const [placeholder, spec] of Object.entries(placeholders)) {
    const field = isObject(spec) ? String(spec.path) : spec;
    const level = levelOf(placeholder);
    if (level < 0 || level >= parentResults.length) {
      throw new UserError(`Level ${level + 1} not found in parent results! Maximum level: ${parentResults.length}`);
    }
    let value: Json;
    try {
      value = getDataFromPath(field, parentResults[level], '.', true) as Json;
    } catch (err) {
      if (err instanceof PathNotFound) {
        throw new UserError(`No value found for ${placeholder} in parent result. (level: ${level + 1})`);
      }
      throw err;
    }
    if (isObject(spec) && 'function' in spec) {
      // `{"path": …, "function": …}`: the value goes through a user function (urlencode allowed).
      const { path: _path, ...fn } = spec;
      const apply = (v: Json) => evaluate(fn, { placeholder: { value: v } }, { allow: ['urlencode'], now });
      value = Array.isArray(value) ? value.map(apply) : apply(value);
    }
    single.push({ placeholder, field, value });
  }
  // Cartesian product over array values.
  let sets: PlaceholderValue[][] = [[]];
  for (const p of single) {
    const values = Array.isArray(p.value) ? p.value : [p.value];
    sets = sets.flatMap((set) => values.map((v) => [...set, { ...p, value: v }]));
  }
  return sets;
}

/** A placeholder value as PHP's str_replace writes it into an endpoint. */
function endpointText(value: Json): string {
  return isObject(value) || Array.isArray(value) ? phpJsonEncode(value) : csvCell(value);
}

/** Fills `{placeholder}` in an endpoint (plain replacement, no URL-encoding, as the reference). */
export function fillEndpoint(endpoint: string, params: PlaceholderValue[]): string {
  let out = endpoint;
  for (const p of params) out = out.split(`{${p.placeholder}}`).join(endpointText(p.value));
  return out;
}

/** Merges the parent's placeholder values under the child's own (same name: child wins). */
export function mergeParentParams(parent: PlaceholderValue[], own: PlaceholderValue[]): PlaceholderValue[] {
  const byName = new Map<string, PlaceholderValue>();
  for (const p of parent) byName.set(p.placeholder, p);
  for (const p of own) byName.set(p.placeholder, p);
  return [...byName.values()];
}

/** The `parent_<field>` columns of a child job's rows. */
export function parentColumns(params: PlaceholderValue[]): JsonObject {
  const out: JsonObject = {};
  for (const p of params) out[p.field.startsWith('parent_') ? p.field : `parent_${p.field}`] = p.value;
  return out;
}
