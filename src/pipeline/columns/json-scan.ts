/**
 * JSON text checked in place: where a value ends, and whether it is valid (RFC 8259, as
 * JSON.parse and the exact parser json.ts accept it), without building it. The body's member
 * index (json-index.ts) and the connector batch split (sources/kafka-connect/split.ts) read records
 * with it; on anything invalid they fall back to a parser, which words the error.
 */

/** Nesting followed; deeper values count as invalid here (the callers' parsers then decide). */
const MAX_SCAN_DEPTH = 64;

/** What the last skipString / skipValue saw, beside the position they return (no allocation per call). */
export const scanned = {
  /** The string skipString skipped had an escape. */
  escape: false,
  /** A number with an exponent of three digits or more (past leading zeros); set, never cleared, by skipValue. */
  largeExponent: false,
};

export function skipWs(text: string, i: number): number {
  for (;;) {
    const c = text.charCodeAt(i);
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
    else return i;
  }
}

/** The end of the value starting at i, or -1 when it is not valid JSON (or nests too deep). */
export function skipValue(text: string, i: number, depth: number): number {
  const c = text.charCodeAt(i);
  switch (c) {
    case 0x22:
      return skipString(text, i);
    case 0x7b:
    case 0x5b:
      return depth > MAX_SCAN_DEPTH ? -1 : skipContainer(text, i, depth, c === 0x7b);
    case 0x74:
      return text.startsWith('true', i) ? i + 4 : -1;
    case 0x66:
      return text.startsWith('false', i) ? i + 5 : -1;
    case 0x6e:
      return text.startsWith('null', i) ? i + 4 : -1;
    default:
      return skipNumber(text, i);
  }
}

function skipContainer(text: string, i: number, depth: number, isObject: boolean): number {
  const close = isObject ? 0x7d : 0x5d;
  i = skipWs(text, i + 1);
  if (text.charCodeAt(i) === close) return i + 1;
  for (;;) {
    if (isObject) {
      if (text.charCodeAt(i) !== 0x22) return -1;
      i = skipString(text, i);
      if (i < 0) return -1;
      i = skipWs(text, i);
      if (text.charCodeAt(i) !== 0x3a) return -1;
      i = skipWs(text, i + 1);
    }
    i = skipValue(text, i, depth + 1);
    if (i < 0) return -1;
    i = skipWs(text, i);
    const c = text.charCodeAt(i);
    if (c === close) return i + 1;
    if (c !== 0x2c) return -1;
    i = skipWs(text, i + 1);
  }
}

/** The end of the string literal whose quote is at i, or -1; sets scanned.escape. */
export function skipString(text: string, i: number): number {
  const length = text.length;
  let escaped = false;
  for (let j = i + 1; j < length; j++) {
    const c = text.charCodeAt(j);
    if (c === 0x22) {
      scanned.escape = escaped;
      return j + 1;
    }
    if (c < 0x20) return -1;
    if (c !== 0x5c) continue;
    escaped = true;
    const e = text.charCodeAt(++j);
    if (e === 0x75 /* u */) {
      for (let k = 0; k < 4; k++) if (!isHex(text.charCodeAt(++j))) return -1;
    } else if (!(e === 0x22 || e === 0x5c || e === 0x2f || e === 0x62 || e === 0x66 || e === 0x6e || e === 0x72 || e === 0x74)) {
      return -1;
    }
  }
  return -1;
}

function isHex(c: number): boolean {
  return (c >= 0x30 && c <= 0x39) || (c >= 0x61 && c <= 0x66) || (c >= 0x41 && c <= 0x46);
}

function isDigit(c: number): boolean {
  return c >= 0x30 && c <= 0x39;
}

/** -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?, or -1. */
function skipNumber(text: string, i: number): number {
  if (text.charCodeAt(i) === 0x2d) i++;
  const first = text.charCodeAt(i);
  if (first === 0x30) i++;
  else if (isDigit(first)) while (isDigit(text.charCodeAt(++i)));
  else return -1;
  if (text.charCodeAt(i) === 0x2e) {
    if (!isDigit(text.charCodeAt(++i))) return -1;
    while (isDigit(text.charCodeAt(++i)));
  }
  const e = text.charCodeAt(i);
  if (e === 0x65 || e === 0x45) {
    const sign = text.charCodeAt(++i);
    if (sign === 0x2b || sign === 0x2d) i++;
    while (text.charCodeAt(i) === 0x30) i++;
    const digits = i;
    if (!isDigit(text.charCodeAt(i))) return text.charCodeAt(i - 1) === 0x30 ? i : -1;
    while (isDigit(text.charCodeAt(++i)));
    if (i - digits >= 3) scanned.largeExponent = true;
  }
  return i;
}
