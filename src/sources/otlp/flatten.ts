/**
 * Flattening of OTLP export requests: one record per log record, per
 * metric data point and per span, each a JSON object carrying its resource and scope. The
 * records are JSON text (the body the sinks map; see values.ts for why text), in request order.
 *
 * Key order follows the reference's tables. Sluice additions, documented in docs/otlp.md: the
 * exponential histogram's `positive` and `negative` buckets (`{offset, bucket_counts}`), without
 * which its data points cannot be reconstructed.
 */
import type { Signal } from '../../model/definition.js';
import type {
  ExponentialHistogramDataPoint,
  ExportLogsRequest,
  ExportMetricsRequest,
  ExportRequest,
  ExportTraceRequest,
  HistogramDataPoint,
  InstrumentationScope,
  KeyValue,
  LogRecord,
  Metric,
  NumberDataPoint,
  Resource,
  Span,
  SummaryDataPoint,
} from './model.js';
import { anyValueJson, attributesJson, doubleJson, idHex, int64Json, stringJson, timestampJson, uint64Json } from './values.js';

/** pdata's names of AggregationTemporality. */
const TEMPORALITY = ['Unspecified', 'Delta', 'Cumulative'];
/** pdata's names of SpanKind. */
const SPAN_KIND = ['Unspecified', 'Internal', 'Server', 'Client', 'Producer', 'Consumer'];
/** pdata's names of StatusCode. */
const STATUS_CODE = ['Unset', 'Ok', 'Error'];

function enumName(names: string[], v: number | null | undefined): string {
  const n = v ?? 0;
  return names[n] ?? String(n);
}

/** An int32 field as JSON; anything not a finite number (a lenient JSON decode may give one) as 0. */
const int = (v: number | null | undefined): string => (typeof v === 'number' && Number.isFinite(v) ? String(Math.trunc(v)) : '0');
const has = (o: object, k: string): boolean => Object.prototype.hasOwnProperty.call(o, k) && (o as Record<string, unknown>)[k] !== null;

function resourceJson(r: Resource | null | undefined): string {
  return attributesJson(r?.attributes);
}

function scopeJson(s: InstrumentationScope | null | undefined): string {
  return `{"name":${stringJson(s?.name)},"version":${stringJson(s?.version)}}`;
}

/**
 * The flattened records exceed the limit. Flattening copies the resource and scope into every
 * record, so a small request of many tiny records with a large resource would otherwise grow
 * by orders of magnitude in memory.
 */
export class FlattenLimitError extends Error {}

/** Collects records and stops at `maxBytes` (UTF-16 code units, close enough to bytes for a bound). */
class Records {
  readonly list: string[] = [];
  private size = 0;

  constructor(private readonly maxBytes: number) {}

  push(record: string): void {
    this.size += record.length;
    if (this.size > this.maxBytes) {
      throw new FlattenLimitError(`the flattened records of the request exceed ${this.maxBytes} bytes (${this.list.length} records so far)`);
    }
    this.list.push(record);
  }
}

/**
 * The top-level keys every flattened record of a signal has, whatever its message held (the
 * writers below write them unconditionally): a `path` column naming one of them cannot miss.
 * The unit test flattens empty messages of each signal to keep this list true.
 */
export const ALWAYS_WRITTEN: Readonly<Record<Signal, ReadonlySet<string>>> = {
  logs: new Set(['timestamp', 'observed_timestamp', 'severity_number', 'severity_text', 'body', 'flags', 'attributes', 'resource', 'scope']),
  metrics: new Set(['metric_name', 'metric_description', 'metric_unit', 'metric_type', 'resource', 'scope', 'start_timestamp', 'timestamp', 'attributes']),
  traces: new Set([
    'timestamp', 'end_timestamp', 'trace_id', 'span_id', 'trace_state', 'name', 'kind', 'flags', 'status_code', 'status_message',
    'attributes', 'events', 'links', 'resource', 'scope',
  ]),
};

/**
 * The top-level keys of ALWAYS_WRITTEN whose value is always a JSON object (attributes as a
 * map, resource, scope): `std.get(Body("resource", {}), "service.name", "")` cannot fail.
 */
export const ALWAYS_OBJECTS: Readonly<Record<Signal, ReadonlySet<string>>> = {
  logs: new Set(['attributes', 'resource', 'scope']),
  metrics: new Set(['attributes', 'resource', 'scope']),
  traces: new Set(['attributes', 'resource', 'scope']),
};

/** The flattened records of a request of the given signal; throws FlattenLimitError beyond `maxBytes`. */
export function flatten(signal: Signal, request: ExportRequest, maxBytes = Infinity): string[] {
  if (signal === 'logs') return flattenLogs(request as ExportLogsRequest, maxBytes);
  if (signal === 'metrics') return flattenMetrics(request as ExportMetricsRequest, maxBytes);
  return flattenTraces(request as ExportTraceRequest, maxBytes);
}

export function flattenLogs(req: ExportLogsRequest, maxBytes = Infinity): string[] {
  const out = new Records(maxBytes);
  for (const rl of req.resourceLogs ?? []) {
    const resource = resourceJson(rl.resource);
    for (const sl of rl.scopeLogs ?? []) {
      const scope = scopeJson(sl.scope);
      for (const lr of sl.logRecords ?? []) out.push(logRecordJson(lr, resource, scope));
    }
  }
  return out.list;
}

function logRecordJson(lr: LogRecord, resource: string, scope: string): string {
  let s = `{"timestamp":${timestampJson(lr.timeUnixNano)}`;
  s += `,"observed_timestamp":${timestampJson(lr.observedTimeUnixNano)}`;
  s += `,"severity_number":${int(lr.severityNumber)}`;
  s += `,"severity_text":${stringJson(lr.severityText)}`;
  s += `,"body":${anyValueJson(lr.body)}`;
  s += `,"flags":${String((lr.flags ?? 0) >>> 0)}`;
  const traceId = idHex(lr.traceId);
  if (traceId !== undefined) s += `,"trace_id":"${traceId}"`;
  const spanId = idHex(lr.spanId);
  if (spanId !== undefined) s += `,"span_id":"${spanId}"`;
  s += `,"attributes":${attributesJson(lr.attributes)}`;
  return s + `,"resource":${resource},"scope":${scope}}`;
}

export function flattenMetrics(req: ExportMetricsRequest, maxBytes = Infinity): string[] {
  const out = new Records(maxBytes);
  for (const rm of req.resourceMetrics ?? []) {
    const resource = resourceJson(rm.resource);
    for (const sm of rm.scopeMetrics ?? []) {
      const scope = scopeJson(sm.scope);
      for (const m of sm.metrics ?? []) flattenMetric(m, resource, scope, out);
    }
  }
  return out.list;
}

/** The fields every data point shares: metric identity, type, resource, scope, times, attributes. */
function pointHead(m: Metric, type: string, resource: string, scope: string, p: { startTimeUnixNano?: unknown; timeUnixNano?: unknown; attributes?: KeyValue[] | null }): string {
  let s = `{"metric_name":${stringJson(m.name)},"metric_description":${stringJson(m.description)},"metric_unit":${stringJson(m.unit)}`;
  s += `,"metric_type":"${type}","resource":${resource},"scope":${scope}`;
  s += `,"start_timestamp":${timestampJson(p.startTimeUnixNano as never)},"timestamp":${timestampJson(p.timeUnixNano as never)}`;
  return s + `,"attributes":${attributesJson(p.attributes)}`;
}

function numberValue(p: NumberDataPoint): string {
  if (has(p, 'asInt')) return int64Json(p.asInt);
  if (has(p, 'asDouble')) return doubleJson(p.asDouble);
  return 'null';
}

function optionalDouble(p: object, key: 'sum' | 'min' | 'max'): string {
  return has(p, key) ? `,"${key}":${doubleJson((p as Record<string, number>)[key])}` : '';
}

function uintArray(xs: readonly unknown[] | null | undefined): string {
  return '[' + (xs ?? []).map((x) => uint64Json(x as never)).join(',') + ']';
}

function doubleArray(xs: readonly number[] | null | undefined): string {
  return '[' + (xs ?? []).map(doubleJson).join(',') + ']';
}

function flattenMetric(m: Metric, resource: string, scope: string, out: Records): void {
  // The data oneof: the first member set on the message itself.
  if (has(m, 'gauge')) {
    for (const p of m.gauge!.dataPoints ?? []) out.push(pointHead(m, 'gauge', resource, scope, p) + `,"value":${numberValue(p)}}`);
  } else if (has(m, 'sum')) {
    const sum = m.sum!;
    const tail = `,"is_monotonic":${sum.isMonotonic ? 'true' : 'false'},"aggregation_temporality":"${enumName(TEMPORALITY, sum.aggregationTemporality)}"}`;
    for (const p of sum.dataPoints ?? []) out.push(pointHead(m, 'sum', resource, scope, p) + `,"value":${numberValue(p)}` + tail);
  } else if (has(m, 'histogram')) {
    const h = m.histogram!;
    const temporality = `,"aggregation_temporality":"${enumName(TEMPORALITY, h.aggregationTemporality)}"}`;
    for (const p of h.dataPoints ?? []) out.push(pointHead(m, 'histogram', resource, scope, p) + histogramFields(p) + temporality);
  } else if (has(m, 'exponentialHistogram')) {
    const h = m.exponentialHistogram!;
    const temporality = `,"aggregation_temporality":"${enumName(TEMPORALITY, h.aggregationTemporality)}"}`;
    for (const p of h.dataPoints ?? []) out.push(pointHead(m, 'exponential_histogram', resource, scope, p) + exponentialFields(p) + temporality);
  } else if (has(m, 'summary')) {
    for (const p of m.summary!.dataPoints ?? []) out.push(pointHead(m, 'summary', resource, scope, p) + summaryFields(p) + '}');
  }
  // A metric without data (none of the oneof set) has no data point, hence no record.
}

function histogramFields(p: HistogramDataPoint): string {
  let s = `,"count":${uint64Json(p.count)}` + optionalDouble(p, 'sum') + optionalDouble(p, 'min') + optionalDouble(p, 'max');
  s += `,"bucket_counts":${uintArray(p.bucketCounts)},"explicit_bounds":${doubleArray(p.explicitBounds)}`;
  return s;
}

function bucketsJson(b: ExponentialHistogramDataPoint['positive']): string {
  return `{"offset":${int(b?.offset)},"bucket_counts":${uintArray(b?.bucketCounts)}}`;
}

function exponentialFields(p: ExponentialHistogramDataPoint): string {
  let s = `,"count":${uint64Json(p.count)}` + optionalDouble(p, 'sum') + optionalDouble(p, 'min') + optionalDouble(p, 'max');
  s += `,"scale":${int(p.scale)},"zero_count":${uint64Json(p.zeroCount)}`;
  s += `,"positive":${bucketsJson(p.positive)},"negative":${bucketsJson(p.negative)}`;
  return s;
}

function summaryFields(p: SummaryDataPoint): string {
  const quantiles = (p.quantileValues ?? []).map((q) => `{"quantile":${doubleJson(q.quantile)},"value":${doubleJson(q.value)}}`);
  return `,"count":${uint64Json(p.count)},"sum":${doubleJson(p.sum)},"quantile_values":[${quantiles.join(',')}]`;
}

export function flattenTraces(req: ExportTraceRequest, maxBytes = Infinity): string[] {
  const out = new Records(maxBytes);
  for (const rs of req.resourceSpans ?? []) {
    const resource = resourceJson(rs.resource);
    for (const ss of rs.scopeSpans ?? []) {
      const scope = scopeJson(ss.scope);
      for (const span of ss.spans ?? []) out.push(spanJson(span, resource, scope));
    }
  }
  return out.list;
}

function spanJson(span: Span, resource: string, scope: string): string {
  let s = `{"timestamp":${timestampJson(span.startTimeUnixNano)},"end_timestamp":${timestampJson(span.endTimeUnixNano)}`;
  s += `,"trace_id":"${idHex(span.traceId) ?? ''}","span_id":"${idHex(span.spanId) ?? ''}"`;
  const parent = idHex(span.parentSpanId);
  if (parent !== undefined) s += `,"parent_span_id":"${parent}"`;
  s += `,"trace_state":${stringJson(span.traceState)},"name":${stringJson(span.name)}`;
  s += `,"kind":"${enumName(SPAN_KIND, span.kind)}","flags":${String((span.flags ?? 0) >>> 0)}`;
  s += `,"status_code":"${enumName(STATUS_CODE, span.status?.code)}","status_message":${stringJson(span.status?.message)}`;
  s += `,"attributes":${attributesJson(span.attributes)}`;
  const events = (span.events ?? []).map((e) => `{"timestamp":${timestampJson(e.timeUnixNano)},"name":${stringJson(e.name)},"attributes":${attributesJson(e.attributes)}}`);
  s += `,"events":[${events.join(',')}]`;
  const links = (span.links ?? []).map(
    (l) =>
      `{"trace_id":"${idHex(l.traceId) ?? ''}","span_id":"${idHex(l.spanId) ?? ''}","trace_state":${stringJson(l.traceState)}` +
      `,"attributes":${attributesJson(l.attributes)},"flags":${String((l.flags ?? 0) >>> 0)}}`,
  );
  s += `,"links":[${links.join(',')}]`;
  return s + `,"resource":${resource},"scope":${scope}}`;
}
