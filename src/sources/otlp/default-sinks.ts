/**
 * The usual three sinks of an OTLP source, one per signal, with columns that cover every
 * flattened field (flatten.ts): string fields unquoted (rawString), numbers as they are,
 * maps and lists as JSON. Every path column has a default, so a record that lacks an optional
 * field (a histogram without `sum`, a log without `trace_id`) still maps. `service_name` reads
 * the dotted resource key with a template, as path columns split keys at dots.
 */
import type { Column, Signal } from '../../model/definition.js';

const field = (name: string, path = name): Column => ({ type: 'path', name, path, defaultValue: '', rawString: true });

const COMMON_HEAD: Column[] = [
  { type: 'uuid', name: 'id' },
  { type: 'datetime', name: 'received_at' },
];

const SERVICE_NAME: Column = {
  type: 'template',
  name: 'service_name',
  rawString: true,
  template: { language: 'jsonnet', content: 'std.get(Body("resource", {}), "service.name", "")' },
};

const SCOPE_TAIL: Column[] = [field('resource'), field('scope_name', 'scope.name'), field('scope_version', 'scope.version'), SERVICE_NAME];

export const DEFAULT_COLUMNS: Record<Signal, Column[]> = {
  logs: [
    ...COMMON_HEAD,
    ...['timestamp', 'observed_timestamp', 'severity_number', 'severity_text', 'body', 'flags', 'trace_id', 'span_id', 'attributes'].map((f) => field(f)),
    ...SCOPE_TAIL,
  ],
  metrics: [
    ...COMMON_HEAD,
    ...[
      'metric_name', 'metric_description', 'metric_unit', 'metric_type', 'start_timestamp', 'timestamp', 'attributes',
      'value', 'is_monotonic', 'aggregation_temporality',
      'count', 'sum', 'min', 'max', 'bucket_counts', 'explicit_bounds', 'scale', 'zero_count', 'positive', 'negative', 'quantile_values',
    ].map((f) => field(f)),
    ...SCOPE_TAIL,
  ],
  traces: [
    ...COMMON_HEAD,
    ...[
      'timestamp', 'end_timestamp', 'trace_id', 'span_id', 'parent_span_id', 'trace_state', 'name', 'kind', 'flags',
      'status_code', 'status_message', 'attributes', 'events', 'links',
    ].map((f) => field(f)),
    ...SCOPE_TAIL,
  ],
};

export interface DefaultSink {
  sinkId: string;
  name: string;
  tableId: string;
  allowedSignals: Signal[];
  columns: Column[];
}

/** The default bucket of a source's OTLP tables: `in.c-<sourceId>`. */
export function defaultBucket(sourceId: string): string {
  return `in.c-${sourceId}`;
}

/** The default sink of a signal: sink id and table name = the signal, in `bucket`. */
export function defaultSink(signal: Signal, bucket: string): DefaultSink {
  return { sinkId: signal, name: signal[0].toUpperCase() + signal.slice(1), tableId: `${bucket}.${signal}`, allowedSignals: [signal], columns: DEFAULT_COLUMNS[signal] };
}
