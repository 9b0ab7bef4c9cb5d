/**
 * `responseFilter`: values at the given paths of each item are replaced by their
 * JSON encoding, so that they land in one column instead of being flattened. `key[]` walks into
 * each element of an array. compatLevel ≥ 3 encodes scalars too (`"green"` with quotes); lower
 * levels leave scalars as they are. Floats are encoded with PHP's `serialize_precision`: 17 as
 * the current JSON parser sets it, -1 (PHP's default) when the legacy parser is in use.
 * Pure: returns new items, the input is not modified.
 */
import { UserError } from '../errors.js';
import { isObject, isScalar, phpJsonEncode, type Json } from '../php.js';

interface FilterOptions {
  compatLevel: number;
  precision: number;
}

function encode(value: Json, opts: FilterOptions): Json {
  if (opts.compatLevel <= 2 && isScalar(value)) return value;
  return phpJsonEncode(value, opts.precision);
}

function filterItem(item: Json, path: string, delimiter: string, opts: FilterOptions): Json {
  const at = path.indexOf(delimiter);
  const head = at >= 0 ? path.slice(0, at) : path;
  const rest = at >= 0 ? path.slice(at + delimiter.length) : null;
  const isArray = head.endsWith('[]');
  const key = isArray ? head.slice(0, -2) : head;
  // isset(): a missing or null value is left alone; an empty array is still encoded ("[]").
  if (!isObject(item) || item[key] === undefined || item[key] === null) return item;
  const value = item[key];
  if (isArray) {
    if (!Array.isArray(value)) throw new UserError(`Error filtering response. '${key}' is not an array.`);
    const mapped = value.map((sub) => (rest === null ? encode(sub, opts) : filterItem(sub, rest, delimiter, opts)));
    return { ...item, [key]: mapped };
  }
  return { ...item, [key]: rest === null ? encode(value, opts) : filterItem(value, rest, delimiter, opts) };
}

export function applyResponseFilter(data: Json[], filters: string[], delimiter: string, compatLevel: number, precision = 17): Json[] {
  if (filters.length === 0) return data;
  const opts: FilterOptions = { compatLevel, precision };
  let out = data;
  for (const path of filters) out = out.map((item) => filterItem(item, path, delimiter, opts));
  return out;
}
