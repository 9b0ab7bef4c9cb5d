/**
 * PHP semantics the reference extractor's behaviour depends on: truthiness,
 * `empty()`, `serialize()` (link ids hash it), `json_encode()` (response filters, volume limits,
 * POST bodies), `http_build_query()` (query strings are matched byte for byte) and float-to-string
 * conversion (CSV cells). Pure functions, no I/O.
 *
 * JSON values come from `JSON.parse`, so an integral float such as `1.0` is seen as the integer 1
 * (documented limitation); every other number that is not an integer is treated as a PHP float.
 */

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
export type JsonObject = { [key: string]: Json };

export function isObject(v: unknown): v is JsonObject {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** PHP `is_scalar`: bool, int, float, string (not null). */
export function isScalar(v: unknown): v is string | number | boolean {
  return typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean';
}

/** PHP `(bool)`: an object (stdClass) is always true, an empty array false, "0" false. */
export function phpBool(v: unknown): boolean {
  if (v === null || v === undefined || v === false) return false;
  if (typeof v === 'number') return v !== 0;
  if (typeof v === 'string') return v !== '' && v !== '0';
  if (Array.isArray(v)) return v.length > 0;
  return true;
}

/**
 * PHP `empty()`. Objects decoded from JSON are stdClass instances, which are never empty; the
 * few places where the reference uses `empty()` on an object property use this too.
 */
export function phpEmpty(v: unknown): boolean {
  return !phpBool(v);
}

/** PHP `is_numeric` for the values a cursor may hold. */
export function isNumeric(v: unknown): boolean {
  if (typeof v === 'number') return Number.isFinite(v);
  if (typeof v !== 'string') return false;
  return /^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/.test(v);
}

/** PHP `(int)` of a scalar. */
export function phpInt(v: unknown): number {
  if (typeof v === 'number') return Math.trunc(v);
  if (typeof v === 'boolean') return v ? 1 : 0;
  if (typeof v === 'string') {
    const m = /^\s*[+-]?\d+(\.\d+)?([eE][+-]?\d+)?/.exec(v);
    return m ? Math.trunc(Number(m[0])) : 0;
  }
  return 0;
}

function isPhpFloat(n: number): boolean {
  return !Number.isInteger(n) || !Number.isSafeInteger(n);
}

/**
 * A float as PHP prints it with the given precision (`%.<p>G` in zend_gcvt): 14 for string casts
 * (`precision`), 17 for `serialize`/`json_encode` (`serialize_precision`, set by the parser).
 * -1 is PHP's default `serialize_precision`: the shortest digits that read back to the same
 * float (zend_gcvt mode 0), laid out as with precision 17 (the legacy JSON parser leaves the
 * setting at its default).
 */
export function phpFloatToString(x: number, precision: number): string {
  if (Number.isNaN(x)) return 'NAN';
  if (!Number.isFinite(x)) return x > 0 ? 'INF' : '-INF';
  if (x === 0) return Object.is(x, -0) ? '-0' : '0';
  const shortest = precision === -1;
  const layout = shortest ? 17 : precision;
  const [mantissa, e] = (shortest ? x.toExponential() : x.toExponential(precision - 1)).split('e');
  const exponent = Number(e);
  const digits = mantissa.replace(/\.?0+$/, '');
  if (exponent < -4 || exponent >= layout) {
    const m = digits.includes('.') ? digits : `${digits}.0`;
    return `${m}E${exponent < 0 ? '-' : '+'}${Math.abs(exponent)}`;
  }
  // Fixed notation with the same significant digits (JS prints the shortest form in fixed
  // notation for every exponent of this range).
  if (shortest) return String(x);
  const fixed = x.toFixed(Math.max(0, precision - 1 - exponent));
  return fixed.includes('.') ? fixed.replace(/\.?0+$/, '') : fixed;
}

/**
 * PHP `serialize()` of a decoded JSON value (objects are stdClass); floats with
 * `serialize_precision` (17 as the current parser sets it, -1 for PHP's default).
 */
export function phpSerialize(v: unknown, precision = 17): string {
  if (v === null || v === undefined) return 'N;';
  if (typeof v === 'boolean') return v ? 'b:1;' : 'b:0;';
  if (typeof v === 'number') return isPhpFloat(v) ? `d:${phpFloatToString(v, precision)};` : `i:${v};`;
  if (typeof v === 'string') return `s:${Buffer.byteLength(v, 'utf8')}:"${v}";`;
  if (Array.isArray(v)) {
    return `a:${v.length}:{${v.map((item, i) => `i:${i};${phpSerialize(item, precision)}`).join('')}}`;
  }
  const entries = Object.entries(v as Record<string, unknown>);
  const body = entries.map(([k, item]) => `s:${Buffer.byteLength(k, 'utf8')}:"${k}";${phpSerialize(item, precision)}`).join('');
  return `O:8:"stdClass":${entries.length}:{${body}}`;
}

function jsonEncodeString(s: string): string {
  let out = '"';
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    const ch = s[i];
    if (ch === '"') out += '\\"';
    else if (ch === '\\') out += '\\\\';
    else if (ch === '/') out += '\\/';
    else if (c === 0x08) out += '\\b';
    else if (c === 0x0c) out += '\\f';
    else if (c === 0x0a) out += '\\n';
    else if (c === 0x0d) out += '\\r';
    else if (c === 0x09) out += '\\t';
    else if (c < 0x20 || c > 0x7e) out += `\\u${c.toString(16).padStart(4, '0')}`;
    else out += ch;
  }
  return `${out}"`;
}

/**
 * PHP `json_encode()` with default flags: `\/`, `\uXXXX`, floats at `serialize_precision`
 * (17 as the current parser sets it; -1, PHP's default, for the legacy parser).
 */
export function phpJsonEncode(v: unknown, precision = 17): string {
  if (v === null || v === undefined) return 'null';
  if (typeof v === 'boolean') return v ? 'true' : 'false';
  if (typeof v === 'number') {
    if (!isPhpFloat(v)) return String(v);
    const s = phpFloatToString(v, precision);
    return /[.E]/.test(s) ? s.replace('E+', 'e+').replace('E-', 'e-') : `${s}.0`;
  }
  if (typeof v === 'string') return jsonEncodeString(v);
  if (Array.isArray(v)) return `[${v.map((item) => phpJsonEncode(item, precision)).join(',')}]`;
  const entries = Object.entries(v as Record<string, unknown>);
  return `{${entries.map(([k, item]) => `${jsonEncodeString(k)}:${phpJsonEncode(item, precision)}`).join(',')}}`;
}

/** PHP `urlencode()`: everything but `A-Za-z0-9-_.` percent-encoded, space as `+`. */
export function phpUrlencode(s: string): string {
  let out = '';
  for (const byte of Buffer.from(s, 'utf8')) {
    const ch = String.fromCharCode(byte);
    if (/[A-Za-z0-9_.-]/.test(ch)) out += ch;
    else if (byte === 0x20) out += '+';
    else out += `%${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

/** PHP `urldecode()`. */
export function phpUrldecode(s: string): string {
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const ch = s[i];
    if (ch === '+') bytes.push(0x20);
    else if (ch === '%' && /^[0-9a-fA-F]{2}$/.test(s.slice(i + 1, i + 3))) {
      bytes.push(parseInt(s.slice(i + 1, i + 3), 16));
      i += 2;
    } else bytes.push(...Buffer.from(ch, 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}

function queryScalar(v: unknown): string | null {
  if (v === null || v === undefined) return null;
  if (typeof v === 'boolean') return v ? '1' : '0';
  if (typeof v === 'number') return isPhpFloat(v) ? phpFloatToString(v, 17) : String(v);
  return String(v);
}

/** PHP `http_build_query()` (RFC 1738 encoding): nested values as `a%5Bb%5D=…`, null dropped. */
export function httpBuildQuery(params: Record<string, unknown>): string {
  const parts: string[] = [];
  const add = (key: string, v: unknown): void => {
    if (Array.isArray(v) || isObject(v)) {
      const entries: [string, unknown][] = Array.isArray(v) ? v.map((x, i) => [String(i), x]) : Object.entries(v);
      for (const [k, item] of entries) add(`${key}[${k}]`, item);
      return;
    }
    const s = queryScalar(v);
    if (s !== null) parts.push(`${phpUrlencode(key)}=${phpUrlencode(s)}`);
  };
  for (const [k, v] of Object.entries(params)) add(k, v);
  return parts.join('&');
}

/** PHP `array_replace($a, $b)` for string-keyed maps: keys of `a` keep their position. */
export function arrayReplace<T>(a: Record<string, T>, b: Record<string, T>): Record<string, T> {
  return { ...a, ...b };
}

/** PHP `array_replace_recursive()`. */
export function arrayReplaceRecursive(a: unknown, b: unknown): unknown {
  if (!(isObject(a) || Array.isArray(a)) || !(isObject(b) || Array.isArray(b))) return b;
  if (Array.isArray(a) && Array.isArray(b)) {
    const out: unknown[] = [...a];
    b.forEach((v, i) => (out[i] = i < a.length ? arrayReplaceRecursive(a[i], v) : v));
    return out;
  }
  const out: Record<string, unknown> = { ...(a as Record<string, unknown>) };
  for (const [k, v] of Object.entries(b as Record<string, unknown>)) {
    out[k] = k in out ? arrayReplaceRecursive(out[k], v) : v;
  }
  return out;
}

/** A CSV cell as keboola/csv writes it: true → "1", false/null → "", floats at precision 14. */
export function csvCell(v: unknown): string {
  if (v === null || v === undefined || v === false) return '';
  if (v === true) return '1';
  if (typeof v === 'number') return isPhpFloat(v) ? phpFloatToString(v, 14) : String(v);
  return String(v);
}
