/**
 * JSON manifestation byte-identical to libjsonnet v0.20:
 * - `manifestJson`: the top-level output of `jsonnet` (`Interpreter::manifestJson`
 *   with multiline = true in core/vm.cpp), without the final newline the CLI and
 *   `jsonnet_evaluate_snippet` append;
 * - `manifestJsonInline`: the single-line form used by `std.toString`, `'' + v`
 *   and `%s` (`manifestJson` with multiline = false);
 * - `manifestJsonEx` / `manifestJsonMinified` / `manifestJsonStd`: the std.jsonnet
 *   functions of the same names (`std.manifestJson` uses a 4-space indent and
 *   prints empty containers as `[\n\n    ]`-style, unlike the CLI).
 *
 * Keys are sorted by Unicode code point (libjsonnet compares UTF-32 strings), not
 * by UTF-16 code unit as `Array.prototype.sort` does.
 *
 * Within an evaluation, each element written ticks the time budget and the text may not grow
 * past the string length limit (limits.ts): an indentation repeated on every line of a large
 * value makes a text far longer than the value's own strings.
 */
import { budget, checkStringLength, tick } from './limits.js';
import { formatNumber } from './numbers.js';

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

/**
 * Compares two strings by Unicode code point (UTF-32 order), as libjsonnet's
 * `std::map<UString, …>`, `std.objectFields`, `std.sort` and `<` do.
 */
export function compareCodePoints(a: string, b: string): number {
  if (a === b) return 0;
  const n = a.length < b.length ? a.length : b.length;
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x !== y) {
      // Surrogates (0xD800–0xDFFF) encode code points ≥ 0x10000: move them above 0xE000–0xFFFF.
      if (x >= 0xd800) x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      if (y >= 0xd800) y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
      return x - y;
    }
  }
  return a.length - b.length;
}

/** Own keys of an object, sorted by code point. */
export function sortedKeys(o: { [k: string]: unknown }): string[] {
  const keys = Object.keys(o);
  // UTF-16 order is code-point order unless a key has a character at or above U+D800; the
  // native comparison is much faster, so the exact one runs only when it matters.
  if (keys.length > 1) keys.sort(keys.some((k) => HIGH_CHAR.test(k)) ? compareCodePoints : undefined);
  return keys;
}

const HIGH_CHAR = /[\ud800-\uffff]/;

const HEX = '0123456789abcdef';

/** After each element: the time budget, and the text so far against the string length limit. */
function grown(out: string): void {
  tick();
  if (out.length > budget.maxStringLength) checkStringLength(out.length);
}

function needsEscape(c: number): boolean {
  return c < 0x20 || c === 0x22 || c === 0x5c || (c >= 0x7f && c <= 0x9f);
}

/**
 * Body of a JSON string literal as `jsonnet_string_escape(str, false)` writes it
 * (no surrounding quotes): `\"`, `\\`, `\b`, `\f`, `\n`, `\r`, `\t`, and `\u00xx`
 * (lowercase hex) for other code points below 0x20 and for 0x7F–0x9F. Everything
 * else, including `/`, `'`, U+2028 and non-BMP characters, is written verbatim.
 * `std.escapeStringJson` gives the same characters.
 */
export function escapeJsonStringBody(s: string): string {
  const len = s.length;
  let i = 0;
  while (i < len && !needsEscape(s.charCodeAt(i))) i++;
  if (i === len) return s;
  let out = s.slice(0, i);
  let start = i;
  for (; i < len; i++) {
    const c = s.charCodeAt(i);
    if (!needsEscape(c)) continue;
    if (start < i) out += s.slice(start, i);
    start = i + 1;
    switch (c) {
      case 0x22:
        out += '\\"';
        break;
      case 0x5c:
        out += '\\\\';
        break;
      case 0x08:
        out += '\\b';
        break;
      case 0x0c:
        out += '\\f';
        break;
      case 0x0a:
        out += '\\n';
        break;
      case 0x0d:
        out += '\\r';
        break;
      case 0x09:
        out += '\\t';
        break;
      default:
        out += '\\u00' + HEX[c >> 4] + HEX[c & 15];
    }
  }
  if (start < len) out += s.slice(start);
  return out;
}

/** A quoted JSON string as libjsonnet prints it (= `std.escapeStringJson(s)`). */
export function escapeJsonString(s: string): string {
  return '"' + escapeJsonStringBody(s) + '"';
}

/**
 * Error raised where libjsonnet v0.20 raises a runtime error while manifesting
 * through std.jsonnet code. Its message is libjsonnet's (without `RUNTIME ERROR: `).
 */
export class ManifestError extends Error {
  override name = 'ManifestError';
}

/**
 * `std.escapeStringJson(s)` of std.jsonnet v0.20 for a string argument: the same
 * output as `escapeJsonString`, except that a U+0000 anywhere in the string is a
 * runtime error in libjsonnet 0.20 (`str[i]` of a NUL yields `""`, and
 * `std.codepoint("")` fails), reproduced here as a `ManifestError`. Affects
 * `std.manifestJsonEx`, `std.manifestJsonMinified` and `std.manifestJson` (keys
 * and string values), but not the CLI output nor `std.toString`.
 */
export function stdEscapeStringJson(s: string): string {
  if (s.indexOf('\0') !== -1) throw new ManifestError('codepoint takes a string of length 1, got length 0');
  return escapeJsonString(s);
}

function scalar(v: null | boolean | number | string): string {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'boolean':
      return v ? 'true' : 'false';
    case 'number':
      return formatNumber(v);
    case 'string':
      return escapeJsonString(v);
    default:
      throw new TypeError(`cannot manifest ${typeof v} as JSON`);
  }
}

/**
 * Compact JSON with the CLI's escaping and numbers, keys in code-point order, no whitespace:
 * what a template column writes (the reference compacts go-jsonnet's output).
 */
export function manifestJsonCompact(v: Json): string {
  if (v === null || typeof v !== 'object') return scalar(v);
  tick();
  const out = Array.isArray(v)
    ? `[${v.map(manifestJsonCompact).join(',')}]`
    : `{${sortedKeys(v).map((k) => `${escapeJsonString(k)}:${manifestJsonCompact(v[k])}`).join(',')}}`;
  if (out.length > budget.maxStringLength) checkStringLength(out.length);
  return out;
}

/**
 * The `jsonnet` output for a materialised value: `indent` per level (libjsonnet:
 * 3 spaces), `[ ]` / `{ }` for empty containers, `"key": value`, keys in code-point
 * order. No trailing newline (the CLI adds one).
 */
export function manifestJson(value: Json, indent = '   '): string {
  return multiline(value, '', indent);
}

function multiline(v: Json, cur: string, step: string): string {
  if (v === null || typeof v !== 'object') return scalar(v);
  if (Array.isArray(v)) {
    if (v.length === 0) return '[ ]';
    const inner = cur + step;
    let out = '[\n' + inner + multiline(v[0], inner, step);
    for (let i = 1; i < v.length; i++) {
      out += ',\n' + inner + multiline(v[i], inner, step);
      grown(out);
    }
    return out + '\n' + cur + ']';
  }
  const keys = sortedKeys(v);
  if (keys.length === 0) return '{ }';
  const inner = cur + step;
  let out = '{';
  let sep = '\n';
  for (const k of keys) {
    out += sep + inner + escapeJsonString(k) + ': ' + multiline(v[k], inner, step);
    sep = ',\n';
    grown(out);
  }
  return out + '\n' + cur + '}';
}

/**
 * Single-line form (libjsonnet `manifestJson` with multiline = false), used by
 * `std.toString(v)` for non-strings, `'' + v` and `%s`: `[1, "x"]`,
 * `{"a": {"c": null}}`, `[ ]`, `{ }`.
 */
export function manifestJsonInline(value: Json): string {
  if (value === null || typeof value !== 'object') return scalar(value);
  if (Array.isArray(value)) {
    if (value.length === 0) return '[ ]';
    let out = '[' + manifestJsonInline(value[0]);
    for (let i = 1; i < value.length; i++) {
      out += ', ' + manifestJsonInline(value[i]);
      grown(out);
    }
    return out + ']';
  }
  const keys = sortedKeys(value);
  if (keys.length === 0) return '{ }';
  let out = '{';
  let sep = '';
  for (const k of keys) {
    out += sep + escapeJsonString(k) + ': ' + manifestJsonInline(value[k]);
    sep = ', ';
    grown(out);
  }
  return out + '}';
}

/** `std.toString(v)`: strings unchanged, everything else in the single-line form. */
export function jsonnetToString(value: Json): string {
  return typeof value === 'string' ? value : manifestJsonInline(value);
}

/**
 * `std.manifestJsonEx(value, indent, newline, key_val_sep)` of std.jsonnet v0.20.
 * Empty containers print as `'[' + newline + newline + cindent + ']'`
 * (`[\n\n  ]` pretty, `[]` minified). Throws `ManifestError` for a string or key
 * containing U+0000, as libjsonnet 0.20 does (see `stdEscapeStringJson`).
 */
export function manifestJsonEx(value: Json, indent: string, newline = '\n', keyValSep = ': '): string {
  const aux = (v: Json, cindent: string): string => {
    if (typeof v === 'string') return stdEscapeStringJson(v);
    if (v === null || typeof v !== 'object') return scalar(v);
    const newIndent = cindent + indent;
    if (Array.isArray(v)) {
      let out = '[' + newline;
      for (let i = 0; i < v.length; i++) {
        if (i > 0) out += ',' + newline;
        out += newIndent + aux(v[i], newIndent);
        grown(out);
      }
      return out + newline + cindent + ']';
    }
    let out = '{' + newline;
    let first = true;
    for (const k of sortedKeys(v)) {
      if (!first) out += ',' + newline;
      first = false;
      out += newIndent + stdEscapeStringJson(k) + keyValSep + aux(v[k], newIndent);
      grown(out);
    }
    return out + newline + cindent + '}';
  };
  return aux(value, '');
}

/** `std.manifestJsonMinified(value)`: `{"a":[1,{}],"b":1}`. */
export function manifestJsonMinified(value: Json): string {
  return manifestJsonEx(value, '', '', ':');
}

/** `std.manifestJson(value)` (4-space indent, std.jsonnet's layout). */
export function manifestJsonStd(value: Json): string {
  return manifestJsonEx(value, '    ');
}
