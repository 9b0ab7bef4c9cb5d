/**
 * The decoded OTLP export requests as the flattening reads them: the shape protobufjs gives
 * both for protobuf (`Type.decode`) and for OTLP/JSON (`Type.fromObject`), with lowerCamelCase
 * field names. Fields are optional because proto3 leaves defaults unset; 64-bit integers come
 * as `long` objects (or, from hand-built values in tests, as numbers, strings or bigints).
 */

/** A 64-bit integer as protobufjs hands it over. */
export type Int64 = { low: number; high: number; unsigned?: boolean } | number | string | bigint;

export interface AnyValue {
  stringValue?: string | null;
  boolValue?: boolean | null;
  intValue?: Int64 | null;
  doubleValue?: number | null;
  arrayValue?: { values?: AnyValue[] | null } | null;
  kvlistValue?: { values?: KeyValue[] | null } | null;
  bytesValue?: Uint8Array | null;
}

export interface KeyValue {
  key?: string | null;
  value?: AnyValue | null;
}

export interface Resource {
  attributes?: KeyValue[] | null;
}

export interface InstrumentationScope {
  name?: string | null;
  version?: string | null;
}

export interface LogRecord {
  timeUnixNano?: Int64 | null;
  observedTimeUnixNano?: Int64 | null;
  severityNumber?: number | null;
  severityText?: string | null;
  body?: AnyValue | null;
  attributes?: KeyValue[] | null;
  flags?: number | null;
  traceId?: Uint8Array | null;
  spanId?: Uint8Array | null;
}

export interface ExportLogsRequest {
  resourceLogs?: Array<{
    resource?: Resource | null;
    scopeLogs?: Array<{ scope?: InstrumentationScope | null; logRecords?: LogRecord[] | null }> | null;
  }> | null;
}

export interface NumberDataPoint {
  attributes?: KeyValue[] | null;
  startTimeUnixNano?: Int64 | null;
  timeUnixNano?: Int64 | null;
  asDouble?: number | null;
  asInt?: Int64 | null;
}

export interface HistogramDataPoint {
  attributes?: KeyValue[] | null;
  startTimeUnixNano?: Int64 | null;
  timeUnixNano?: Int64 | null;
  count?: Int64 | null;
  sum?: number | null;
  bucketCounts?: Int64[] | null;
  explicitBounds?: number[] | null;
  min?: number | null;
  max?: number | null;
}

export interface ExponentialHistogramDataPoint {
  attributes?: KeyValue[] | null;
  startTimeUnixNano?: Int64 | null;
  timeUnixNano?: Int64 | null;
  count?: Int64 | null;
  sum?: number | null;
  scale?: number | null;
  zeroCount?: Int64 | null;
  positive?: { offset?: number | null; bucketCounts?: Int64[] | null } | null;
  negative?: { offset?: number | null; bucketCounts?: Int64[] | null } | null;
  min?: number | null;
  max?: number | null;
}

export interface SummaryDataPoint {
  attributes?: KeyValue[] | null;
  startTimeUnixNano?: Int64 | null;
  timeUnixNano?: Int64 | null;
  count?: Int64 | null;
  sum?: number | null;
  quantileValues?: Array<{ quantile?: number | null; value?: number | null }> | null;
}

export interface Metric {
  name?: string | null;
  description?: string | null;
  unit?: string | null;
  gauge?: { dataPoints?: NumberDataPoint[] | null } | null;
  sum?: { dataPoints?: NumberDataPoint[] | null; aggregationTemporality?: number | null; isMonotonic?: boolean | null } | null;
  histogram?: { dataPoints?: HistogramDataPoint[] | null; aggregationTemporality?: number | null } | null;
  exponentialHistogram?: { dataPoints?: ExponentialHistogramDataPoint[] | null; aggregationTemporality?: number | null } | null;
  summary?: { dataPoints?: SummaryDataPoint[] | null } | null;
}

export interface ExportMetricsRequest {
  resourceMetrics?: Array<{
    resource?: Resource | null;
    scopeMetrics?: Array<{ scope?: InstrumentationScope | null; metrics?: Metric[] | null }> | null;
  }> | null;
}

export interface SpanEvent {
  timeUnixNano?: Int64 | null;
  name?: string | null;
  attributes?: KeyValue[] | null;
}

export interface SpanLink {
  traceId?: Uint8Array | null;
  spanId?: Uint8Array | null;
  traceState?: string | null;
  attributes?: KeyValue[] | null;
  flags?: number | null;
}

export interface Span {
  traceId?: Uint8Array | null;
  spanId?: Uint8Array | null;
  traceState?: string | null;
  parentSpanId?: Uint8Array | null;
  flags?: number | null;
  name?: string | null;
  kind?: number | null;
  startTimeUnixNano?: Int64 | null;
  endTimeUnixNano?: Int64 | null;
  attributes?: KeyValue[] | null;
  events?: SpanEvent[] | null;
  links?: SpanLink[] | null;
  status?: { message?: string | null; code?: number | null } | null;
}

export interface ExportTraceRequest {
  resourceSpans?: Array<{
    resource?: Resource | null;
    scopeSpans?: Array<{ scope?: InstrumentationScope | null; spans?: Span[] | null }> | null;
  }> | null;
}

export type ExportRequest = ExportLogsRequest | ExportMetricsRequest | ExportTraceRequest;
