/**
 * Validation of the variables configuration and of stored variable values, with the messages of
 * the reference's Symfony config trees: root node "configuration" with a single
 * child ("variables" of {name, type}, or "values" of {name, value}), both fields required,
 * non-empty scalars, no other keys.
 */

export interface VariableDeclaration {
  name: string;
  type: string;
}

export interface VariableValue {
  name: string;
  value: string;
}

class ConfigTreeError extends Error {}

function phpType(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  if (typeof v === 'object') return 'array';
  if (typeof v === 'number') return Number.isInteger(v) ? 'int' : 'float';
  if (typeof v === 'boolean') return 'bool';
  return 'string';
}

const quoteList = (keys: string[]) => keys.map((k) => `"${k}"`).join(', ');

function rejectUnknownKeys(node: Record<string, unknown>, path: string, allowed: string[]): void {
  const unknown = Object.keys(node).filter((k) => !allowed.includes(k));
  if (unknown.length === 0) return;
  const available = allowed.length === 1 ? `Available option is ${quoteList(allowed)}.` : `Available options are ${quoteList(allowed)}.`;
  throw new ConfigTreeError(`Unrecognized option${unknown.length > 1 ? 's' : ''} ${quoteList(unknown)} under "${path}". ${available}`);
}

function asObject(v: unknown, path: string): Record<string, unknown> {
  if (v === null || v === undefined) return {};
  if (typeof v !== 'object') throw new ConfigTreeError(`Invalid type for path "${path}". Expected "array", but got "${phpType(v)}"`);
  // A JSON list is a PHP array too; its keys are the indexes.
  return Array.isArray(v) ? Object.fromEntries(v.map((x, i) => [String(i), x])) : (v as Record<string, unknown>);
}

/** A required, non-empty scalar; numbers and booleans become strings as PHP casts them. */
function scalar(node: Record<string, unknown>, key: string, path: string): string {
  if (!(key in node) || node[key] === null) throw new ConfigTreeError(`The child config "${key}" under "${path}" must be configured.`);
  const v = node[key];
  if (typeof v === 'object') throw new ConfigTreeError(`Invalid type for path "${path}.${key}". Expected "scalar", but got "array".`);
  const s = typeof v === 'boolean' ? (v ? '1' : '') : String(v);
  if (s === '') throw new ConfigTreeError(`The path "${path}.${key}" cannot contain an empty value, but got "".`);
  return s;
}

function list<T>(configuration: unknown, child: string, fields: [string, string], build: (a: string, b: string) => T): T[] {
  const root = asObject(configuration, 'configuration');
  rejectUnknownKeys(root, 'configuration', [child]);
  if (!(child in root) || root[child] === null) throw new ConfigTreeError(`The child config "${child}" under "configuration" must be configured.`);
  const items = root[child];
  if (typeof items !== 'object') throw new ConfigTreeError(`Invalid type for path "configuration.${child}". Expected "array", but got "${phpType(items)}"`);
  return Object.entries(asObject(items, `configuration.${child}`)).map(([index, item]) => {
    const path = `configuration.${child}.${index}`;
    const node = asObject(item, path);
    rejectUnknownKeys(node, path, fields);
    return build(scalar(node, fields[0], path), scalar(node, fields[1], path));
  });
}

export class InvalidVariablesError extends Error {}

/** `{"variables":[{"name","type"}]}`; throws "Variable configuration is invalid: ...". */
export function validateVariablesConfiguration(configuration: unknown): VariableDeclaration[] {
  try {
    return list(configuration, 'variables', ['name', 'type'], (name, type) => ({ name, type }));
  } catch (err) {
    if (err instanceof ConfigTreeError) throw new InvalidVariablesError(`Variable configuration is invalid: ${err.message}`);
    throw err;
  }
}

/** `{"values":[{"name","value"}]}`; throws "Variable values configuration is invalid: ...". */
export function validateVariableValues(configuration: unknown): VariableValue[] {
  try {
    return list(configuration, 'values', ['name', 'value'], (name, value) => ({ name, value }));
  } catch (err) {
    if (err instanceof ConfigTreeError) throw new InvalidVariablesError(`Variable values configuration is invalid: ${err.message}`);
    throw err;
  }
}

/**
 * The Queue API's check of inline `variableValuesData` at job creation: name and value required
 * and non-empty, e.g. `The child config "value" under "job.variableValuesData.values.0" must be configured.`
 */
export function validateInlineValues(data: unknown): VariableValue[] {
  const base = 'job.variableValuesData';
  try {
    const root = asObject(data, base);
    rejectUnknownKeys(root, base, ['values']);
    const values = root.values ?? [];
    if (typeof values !== 'object') throw new ConfigTreeError(`Invalid type for path "${base}.values". Expected "array", but got "${phpType(values)}"`);
    return Object.entries(asObject(values, `${base}.values`)).map(([index, item]) => {
      const path = `${base}.values.${index}`;
      const node = asObject(item, path);
      rejectUnknownKeys(node, path, ['name', 'value']);
      return { name: scalar(node, 'name', path), value: scalar(node, 'value', path) };
    });
  } catch (err) {
    if (err instanceof ConfigTreeError) throw new InvalidVariablesError(err.message);
    throw err;
  }
}
