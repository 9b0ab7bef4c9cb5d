/**
 * Value conversions of the flattening, each returning JSON text: attributes
 * and AnyValues as nested JSON, ids as hex, timestamps as RFC 3339 with nanoseconds, 64-bit
 * integers exactly (no detour through doubles), uint64 saturated to int64. The flattened
 * record is written as text directly, so that 64-bit integers keep every digit and keys keep
 * the reference's order.
 */
import { goJsonString } from '../../pipeline/columns/json.js';
import type { AnyValue, Int64, KeyValue } from './model.js';

const INT64_MAX = (1n << 63n) - 1n;
const NS_PER_SEC = 1_000_000_000n;

/** Nested AnyValues deeper than this are cut (written as null) instead of recursing further. */
export const MAX_VALUE_DEPTH = 64;

/** A 64-bit integer of any representation as a bigint; absent = 0. */
export function toBigInt(v: Int64 | null | undefined): bigint {
  if (v === undefined || v === null) return 0n;
  if (typeof v === 'bigint') return v;
  if (typeof v === 'number') return Number.isFinite(v) ? BigInt(Math.trunc(v)) : 0n;
  if (typeof v === 'string') {
    try {
      return BigInt(v);
    } catch {
      return 0n;
    }
  }
  // protobufjs' long: two 32-bit halves.
  const u = (BigInt(v.high >>> 0) << 32n) | BigInt(v.low >>> 0);
  return v.unsigned ? u : BigInt.asIntN(64, u);
}

/** A signed 64-bit integer as JSON text. */
export function int64Json(v: Int64 | null | undefined): string {
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  // Fast path for protobufjs longs that fit in a double exactly.
  if (v !== null && typeof v === 'object' && (v.high === 0 || (v.high === -1 && !v.unsigned && v.low < 0))) {
    return String(v.high === 0 ? v.low >>> 0 : v.low);
  }
  return BigInt.asIntN(64, toBigInt(v)).toString();
}

/** An unsigned 64-bit integer as JSON text, saturated to the int64 maximum (reference: "uint64 values saturate to int64"). */
export function uint64Json(v: Int64 | null | undefined): string {
  if (typeof v === 'number' && Number.isSafeInteger(v) && v >= 0) return String(v);
  if (v !== null && typeof v === 'object' && v.high === 0) return String(v.low >>> 0);
  let b = toBigInt(v);
  if (b < 0n) b = BigInt.asUintN(64, b);
  return (b > INT64_MAX ? INT64_MAX : b).toString();
}

/** A double as JSON text; NaN and infinities, which JSON cannot hold, as the strings protojson uses. */
export function doubleJson(v: number | null | undefined): string {
  if (v === undefined || v === null) return '0';
  if (Number.isFinite(v)) return String(v);
  return Number.isNaN(v) ? '"NaN"' : v > 0 ? '"Infinity"' : '"-Infinity"';
}

/**
 * Nanoseconds since the epoch as RFC 3339 in UTC with exactly nine fraction digits (Go's
 * RFC3339Nano without its trimming of trailing zeros), or "" when 0 (unset).
 */
export function timestampJson(v: Int64 | null | undefined): string {
  // protobufjs' long of a time before 2262 (high word non-negative): no bigint.
  if (v !== null && typeof v === 'object' && v.high > 0) return longTimestampJson(v.high, v.low >>> 0);
  let ns = toBigInt(v);
  if (ns === 0n) return '""';
  if (ns < 0n) ns = BigInt.asUintN(64, ns);
  if (ns > INT64_MAX) ns = INT64_MAX;
  return timestampText(Number(ns / NS_PER_SEC), Number(ns % NS_PER_SEC));
}

/**
 * The records of one request carry times within seconds of each other, so the flattening
 * (two or more times a record) caches the split of the last high word into seconds and
 * nanoseconds, and the text of the last second: one bigint division per 4.3 s of times and one
 * Date per second instead of both per time. The arithmetic stays exact: the low word and the
 * cached nanoseconds add up below 2^53.
 */
let cachedHigh = -1;
let highSeconds = 0;
let highNanos = 0;
let cachedSecond = NaN;
let secondText = '';

function longTimestampJson(high: number, low: number): string {
  if (high !== cachedHigh) {
    const base = BigInt(high) << 32n;
    highSeconds = Number(base / NS_PER_SEC);
    highNanos = Number(base % NS_PER_SEC);
    cachedHigh = high;
  }
  const nanos = highNanos + low;
  const carry = Math.floor(nanos / 1e9);
  return timestampText(highSeconds + carry, nanos - carry * 1e9);
}

function timestampText(seconds: number, fraction: number): string {
  if (seconds !== cachedSecond) {
    secondText = new Date(seconds * 1000).toISOString().slice(0, 19);
    cachedSecond = seconds;
  }
  // Always nine fraction digits: Go's RFC3339Nano (the reference) trims trailing zeros, so
  // "…56.576Z" sorted after "…56.576199635Z" as text; fixed width sorts as time.
  return `"${secondText}.${String(fraction).padStart(9, '0')}Z"`;
}

const HEX_ZERO = /^0*$/;

/** Bytes as lowercase hex; "" for none. */
export function hex(b: Uint8Array | null | undefined): string {
  if (!b || b.length === 0) return '';
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex');
}

/** A trace or span id as hex, or undefined when empty or all zeros (an invalid id, i.e. unset). */
export function idHex(b: Uint8Array | null | undefined): string | undefined {
  const h = hex(b);
  return h === '' || HEX_ZERO.test(h) ? undefined : h;
}

export function stringJson(s: string | null | undefined): string {
  return s ? goJsonString(s) : '""';
}

const has = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k);

/**
 * An AnyValue as JSON: string, bool, int (exact), double, array, key-value list as an object,
 * bytes as base64; an empty AnyValue as null. A oneof member counts only when set on the
 * message itself (protobufjs keeps defaults on the prototype).
 */
export function anyValueJson(v: AnyValue | null | undefined, depth = 0): string {
  if (!v || depth > MAX_VALUE_DEPTH) return 'null';
  if (has(v, 'stringValue') && v.stringValue !== null) return stringJson(v.stringValue);
  if (has(v, 'intValue') && v.intValue !== null) return int64Json(v.intValue);
  if (has(v, 'boolValue') && v.boolValue !== null) return v.boolValue ? 'true' : 'false';
  if (has(v, 'doubleValue') && v.doubleValue !== null) return doubleJson(v.doubleValue);
  if (has(v, 'kvlistValue') && v.kvlistValue) return attributesJson(v.kvlistValue.values, depth + 1);
  if (has(v, 'arrayValue') && v.arrayValue) {
    const values = v.arrayValue.values ?? [];
    let out = '[';
    for (let i = 0; i < values.length; i++) {
      if (i > 0) out += ',';
      out += anyValueJson(values[i], depth + 1);
    }
    return out + ']';
  }
  if (has(v, 'bytesValue') && v.bytesValue) {
    const b = v.bytesValue;
    return `"${Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64')}"`;
  }
  return 'null';
}

/**
 * Attributes as one JSON object; dotted keys stay whole (`{"service.name": ...}`). A key that
 * repeats keeps its last value at its first position, as a map would.
 */
export function attributesJson(attrs: KeyValue[] | null | undefined, depth = 0): string {
  if (!attrs || attrs.length === 0) return '{}';
  if (depth > MAX_VALUE_DEPTH) return 'null';
  if (attrs.length <= FEW_ATTRIBUTES && !repeatsKey(attrs)) {
    // The usual case, a few keys none of which repeats: written in one pass, no map.
    let out = '{';
    for (let i = 0; i < attrs.length; i++) {
      if (i > 0) out += ',';
      out += goJsonString(attrs[i].key ?? '') + ':' + anyValueJson(attrs[i].value, depth);
    }
    return out + '}';
  }
  const keys: string[] = [];
  const values = new Map<string, string>();
  for (const kv of attrs) {
    const key = kv.key ?? '';
    if (!values.has(key)) keys.push(key);
    values.set(key, anyValueJson(kv.value, depth));
  }
  let out = '{';
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) out += ',';
    out += goJsonString(keys[i]) + ':' + values.get(keys[i])!;
  }
  return out + '}';
}

/** Up to this many attributes, a repeated key is looked for pair by pair (cheaper than a map). */
const FEW_ATTRIBUTES = 16;

function repeatsKey(attrs: KeyValue[]): boolean {
  for (let i = 1; i < attrs.length; i++) {
    const key = attrs[i].key ?? '';
    for (let j = 0; j < i; j++) if ((attrs[j].key ?? '') === key) return true;
  }
  return false;
}
