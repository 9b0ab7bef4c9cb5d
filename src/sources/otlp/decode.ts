/**
 * Decoding of OTLP/HTTP export requests: protobuf, or OTLP/JSON
 * (lowerCamelCase keys, trace and span ids in hex, enums as integers, 64-bit integers as strings
 * or numbers, unknown fields ignored). Both give the message shape of model.ts.
 * Anything that cannot be decoded is an OtlpDecodeError (400); no input throws anything else.
 */
import type protobuf from 'protobufjs';
import type { Signal } from '../../model/definition.js';
import type { ExportRequest } from './model.js';
import { JsonNumber, JsonObject, JsonSyntaxError, parseJson, type JsonValue } from '../../pipeline/columns/json.js';
import { otlpTypes } from './schema.js';

export type OtlpEncoding = 'protobuf' | 'json';

export class OtlpDecodeError extends Error {}

/** The encoding of a Content-Type (parameters and case ignored), or undefined when unsupported (415). */
export function encodingOf(contentType: string | undefined): OtlpEncoding | undefined {
  if (!contentType) return undefined;
  const semi = contentType.indexOf(';');
  const media = (semi < 0 ? contentType : contentType.slice(0, semi)).trim().toLowerCase();
  if (media === 'application/x-protobuf' || media === 'application/protobuf') return 'protobuf';
  if (media === 'application/json') return 'json';
  return undefined;
}

export function requestType(signal: Signal): protobuf.Type {
  const t = otlpTypes();
  return signal === 'logs' ? t.logsRequest : signal === 'metrics' ? t.metricsRequest : t.traceRequest;
}

/** Decodes one export request of the signal. */
export function decodeExportRequest(signal: Signal, encoding: OtlpEncoding, body: Uint8Array): ExportRequest {
  const type = requestType(signal);
  try {
    if (encoding === 'protobuf') return type.decode(body) as unknown as ExportRequest;
    return type.fromObject(otlpJsonToProtobufjs(signal, body)) as unknown as ExportRequest;
  } catch (err) {
    if (err instanceof OtlpDecodeError) throw err;
    // protobufjs throws RangeError/Error on truncated or malformed input; very deep nesting
    // overflows the stack (also a RangeError). None of them may escape as a 500.
    throw new OtlpDecodeError(`cannot decode the ${encoding === 'json' ? 'OTLP/JSON' : 'protobuf'} ${signal} export request: ${(err as Error).message}`);
  }
}

/** Deeper JSON than this is refused: OTLP nests values a few levels, never hundreds. */
const MAX_JSON_DEPTH = 128;

/**
 * OTLP/JSON as the plain object protobufjs' fromObject takes: integers outside the double's
 * exact range become strings (fromObject reads 64-bit fields from strings exactly, JSON.parse
 * would round them), and hex trace/span ids become base64 (fromObject's encoding of bytes).
 */
function otlpJsonToProtobufjs(signal: Signal, body: Uint8Array): Record<string, unknown> {
  let parsed: JsonValue;
  try {
    parsed = parseJson(Buffer.from(body.buffer, body.byteOffset, body.byteLength).toString('utf8'));
  } catch (err) {
    if (err instanceof JsonSyntaxError) throw new OtlpDecodeError(`invalid JSON: ${err.message}`);
    throw err;
  }
  const plain = toPlain(parsed, 0);
  if (plain === null || typeof plain !== 'object' || Array.isArray(plain)) throw new OtlpDecodeError('the OTLP/JSON body must be an object');
  const root = plain as Record<string, unknown>;
  if (signal === 'logs') {
    for (const rl of list(root.resourceLogs)) for (const sl of list(rl.scopeLogs)) for (const lr of list(sl.logRecords)) ids(lr, 'traceId', 'spanId');
  } else if (signal === 'traces') {
    for (const rs of list(root.resourceSpans)) {
      for (const ss of list(rs.scopeSpans)) {
        for (const span of list(ss.spans)) {
          ids(span, 'traceId', 'spanId', 'parentSpanId');
          for (const link of list(span.links)) ids(link, 'traceId', 'spanId');
        }
      }
    }
  } else {
    for (const rm of list(root.resourceMetrics)) {
      for (const sm of list(rm.scopeMetrics)) {
        for (const m of list(sm.metrics)) {
          for (const kind of ['gauge', 'sum', 'histogram', 'exponentialHistogram', 'summary']) {
            const data = m[kind];
            if (data && typeof data === 'object') for (const p of list((data as Record<string, unknown>).dataPoints)) for (const e of list(p.exemplars)) ids(e, 'traceId', 'spanId');
          }
        }
      }
    }
  }
  return root;
}

function toPlain(v: JsonValue, depth: number): unknown {
  if (depth > MAX_JSON_DEPTH) throw new OtlpDecodeError(`the OTLP/JSON body nests deeper than ${MAX_JSON_DEPTH} levels`);
  if (v === null || typeof v !== 'object') return v;
  if (v instanceof JsonNumber) {
    const n = Number(v.raw);
    return Number.isInteger(n) && !Number.isSafeInteger(n) && /^-?\d+$/.test(v.raw) ? v.raw : n;
  }
  if (Array.isArray(v)) return v.map((x) => toPlain(x, depth + 1));
  const o: Record<string, unknown> = {};
  const obj = v as JsonObject;
  for (let i = 0; i < obj.keys.length; i++) {
    // "__proto__" as a JSON key must stay data, never become the object's prototype.
    Object.defineProperty(o, obj.keys[i], { value: toPlain(obj.values[i], depth + 1), enumerable: true, writable: true, configurable: true });
  }
  return o;
}

/** The objects of an array field (anything else: none). */
function list(v: unknown): Array<Record<string, unknown>> {
  return Array.isArray(v) ? (v.filter((x) => x !== null && typeof x === 'object' && !Array.isArray(x)) as Array<Record<string, unknown>>) : [];
}

const HEX = /^(?:[0-9a-fA-F]{2})*$/;

/** Hex id fields to base64 in place; a field that is not hex makes the request undecodable. */
function ids(o: Record<string, unknown>, ...fields: string[]): void {
  for (const f of fields) {
    const v = o[f];
    if (v === undefined || v === null) continue;
    if (typeof v !== 'string' || !HEX.test(v)) throw new OtlpDecodeError(`${f} must be a hex string, got ${JSON.stringify(v).slice(0, 80)}`);
    o[f] = Buffer.from(v, 'hex').toString('base64');
  }
}
