/**
 * Where the data is in a response: dotted-path lookup and the `dataField`
 * auto-detection. Pure functions.
 */
import { UserError } from '../errors.js';
import { isObject, phpEmpty, type Json } from '../php.js';

export class PathNotFound extends Error {}

/**
 * `getDataFromPath`: walks `path` split on `sep` through objects (by key) and arrays (by index).
 * PHP `isset` semantics: a `null` value counts as missing. Missing → `null`, or `PathNotFound`
 * when `strict`. A path equal to the separator means the whole value.
 */
export function getDataFromPath(path: string, data: unknown, sep = '.', strict = false): unknown {
  if (path === sep) return data;
  let current: unknown = data;
  for (const key of path.split(sep)) {
    let next: unknown;
    if (isObject(current)) next = Object.prototype.hasOwnProperty.call(current, key) ? current[key] : undefined;
    else if (Array.isArray(current) && /^\d+$/.test(key)) next = current[Number(key)];
    if (next === undefined || next === null) {
      if (strict) throw new PathNotFound(`No data found at '${path}'`);
      return null;
    }
    current = next;
  }
  return current;
}

export interface DataFieldSpec {
  path: string;
  delimiter: string;
}

/** Normalises `dataField` (string or `{path, delimiter}`); `null` means auto-detection. */
export function parseDataField(dataField: unknown): DataFieldSpec | null {
  if (isObject(dataField)) {
    if (typeof dataField.path !== 'string' || dataField.path === '') {
      throw new UserError("'dataField.path' must be a non-empty string");
    }
    const delimiter = typeof dataField.delimiter === 'string' && dataField.delimiter !== '' ? dataField.delimiter : '.';
    return { path: dataField.path, delimiter };
  }
  if (phpEmpty(dataField)) return null;
  if (typeof dataField !== 'string') throw new UserError("'dataField' must be a string or an object {path, delimiter}");
  return { path: dataField, delimiter: '.' };
}

export interface Located {
  data: Json[];
  /** A warning to log (no data found), if any. */
  warning?: string;
}

/** Locates the data array of one response (GE's FindResponseArray). */
export function locateData(response: Json, dataField: DataFieldSpec | null, endpoint: string): Located {
  if (dataField) {
    const value = getDataFromPath(dataField.path, response, dataField.delimiter) as Json;
    if (phpEmpty(value)) return { data: [], warning: `dataField '${dataField.path}' contains no data!` };
    return { data: Array.isArray(value) ? value : [value] };
  }
  if (Array.isArray(response)) return { data: response };
  if (!isObject(response)) throw new UserError('Unknown response from API.');
  const arrays = Object.keys(response).filter((k) => Array.isArray(response[k]));
  if (arrays.length === 0) return { data: [], warning: `No data array found in response! (endpoint: ${endpoint})` };
  if (arrays.length > 1) {
    throw new UserError(
      "More than one array found in response! Use 'dataField' parameter to specify a key to the data array. " +
        `(endpoint: ${endpoint}, arrays in response root: ${arrays.join(', ')})`,
    );
  }
  return { data: response[arrays[0]] as Json[] };
}
