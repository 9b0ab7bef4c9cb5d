/**
 * Request headers as a record keeps them: Go's canonical names (`content-type` ->
 * `Content-Type`), first value of each, and the two renderings the columns and templates use:
 * compact JSON sorted by name (`headers` column, `Header()`), and `HeaderStr()` lines.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { goJsonString } from './columns/json.js';

/**
 * Headers the test endpoint leaves out: Go's net/http moves `Host` out of the header map, and
 * the API strips the Storage API token before mapping.
 */
export const TEST_ENDPOINT_OMITTED_HEADERS: ReadonlySet<string> = new Set(['Host', 'X-Storageapi-Token']);

// RFC 7230 tchar: the bytes Go accepts in a header name.
const TCHAR = (() => {
  const t = new Uint8Array(128);
  for (const c of "!#$%&'*+-.^_`|~") t[c.charCodeAt(0)] = 1;
  for (let c = 0x30; c <= 0x39; c++) t[c] = 1;
  for (let c = 0x41; c <= 0x5a; c++) t[c] = 1;
  for (let c = 0x61; c <= 0x7a; c++) t[c] = 1;
  return t;
})();

/** Go's http.CanonicalHeaderKey, without its cache. */
function canonicalize(name: string): string {
  for (let i = 0; i < name.length; i++) {
    const c = name.charCodeAt(i);
    // Names with a byte that is not a token character are returned unchanged.
    if (c >= 0x80 || TCHAR[c] === 0) return name;
  }
  let out = '';
  let upper = true;
  for (let i = 0; i < name.length; i++) {
    let c = name.charCodeAt(i);
    if (upper && c >= 0x61 && c <= 0x7a) c -= 0x20;
    else if (!upper && c >= 0x41 && c <= 0x5a) c += 0x20;
    out += String.fromCharCode(c);
    upper = c === 0x2d;
  }
  return out;
}

const canonicalCache = new Map<string, string>();
const CACHE_LIMIT = 4096;

/** Go's http.CanonicalHeaderKey: `x-forwarded-for` -> `X-Forwarded-For`; invalid names unchanged. */
export function canonicalHeaderKey(name: string): string {
  let c = canonicalCache.get(name);
  if (c === undefined) {
    c = canonicalize(name);
    if (canonicalCache.size >= CACHE_LIMIT) canonicalCache.clear();
    canonicalCache.set(name, c);
  }
  return c;
}

/** Node decodes header bytes as latin1; Go keeps the bytes, which clients send as UTF-8. */
function headerValue(v: string): string {
  return /[\u0080-\u00ff]/.test(v) ? Buffer.from(v, 'latin1').toString('utf8') : v;
}

/**
 * The record's header map from Node's `req.rawHeaders` ([name, value, name, value, ...]):
 * canonical names, first value of a repeated header. Preferred over `req.headers`, where Node
 * joins repeated values with ", ".
 */
export function headersFromRaw(rawHeaders: readonly string[], omit?: ReadonlySet<string>): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (let i = 0; i + 1 < rawHeaders.length; i += 2) {
    const name = canonicalHeaderKey(rawHeaders[i]);
    if (omit?.has(name) || name in out) continue;
    out[name] = headerValue(rawHeaders[i + 1]);
  }
  return out;
}

/** The record's header map from Node's `req.headers` (array values: the first one). */
export function headersFromIncoming(headers: IncomingHttpHeaders, omit?: ReadonlySet<string>): Record<string, string> {
  const out: Record<string, string> = Object.create(null);
  for (const key of Object.keys(headers)) {
    const v = headers[key];
    const first = Array.isArray(v) ? v[0] : v;
    if (first === undefined) continue;
    const name = canonicalHeaderKey(key);
    if (omit?.has(name) || name in out) continue;
    out[name] = headerValue(first);
  }
  return out;
}

/**
 * [name, value] pairs sorted by canonical name. Keys are canonicalised again, so a map from
 * another source (a Kafka record, an older log entry) renders the same; on a clash the first
 * key in the map's order wins.
 */
export function sortedHeaderEntries(headers: Readonly<Record<string, string>>): Array<[string, string]> {
  const seen = new Set<string>();
  const entries: Array<[string, string]> = [];
  for (const key of Object.keys(headers)) {
    const name = canonicalHeaderKey(key);
    if (seen.has(name)) continue;
    seen.add(name);
    entries.push([name, headers[key]]);
  }
  entries.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  return entries;
}

/** The `headers` column: `{"Accept":"*\/*","Content-Type":"application/json"}` (Go JSON escaping). */
export function headersJson(entries: ReadonlyArray<readonly [string, string]>): string {
  let out = '{';
  for (let i = 0; i < entries.length; i++) {
    if (i > 0) out += ',';
    out += goJsonString(entries[i][0]) + ':' + goJsonString(entries[i][1]);
  }
  return out + '}';
}

/** `HeaderStr()`: one `Name: value\n` line per header, lines sorted. */
export function headerStr(entries: ReadonlyArray<readonly [string, string]>): string {
  const lines = entries.map(([k, v]) => `${k}: ${v}\n`);
  lines.sort();
  return lines.join('');
}

/** Headers that carry the sender's credentials (lower case): never answered as they came. */
const CREDENTIAL_HEADERS: ReadonlySet<string> = new Set(['authorization', 'cookie', 'proxy-authorization', 'x-storageapi-token']);

/** What a credential header's value is answered as. */
export const MASKED_HEADER_VALUE = '*****';

/**
 * The headers with the values of `Authorization`, `Cookie`, `Proxy-Authorization` and
 * `X-StorageApi-Token` replaced by MASKED_HEADER_VALUE, for answers that show raw records (recent
 * records, mapping failures). The record itself, and what its mapping renders, keep the value.
 * Names are compared without regard to case: a map from an older log entry may not be canonical.
 */
export function maskCredentialHeaders(headers: Readonly<Record<string, string>>): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(headers)) out[name] = CREDENTIAL_HEADERS.has(name.toLowerCase()) ? MASKED_HEADER_VALUE : value;
  return out;
}
