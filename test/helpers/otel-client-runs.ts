/**
 * What the tests with the real OpenTelemetry clients share: telemetrygen's three signals sent to an
 * endpoint (Sluice's, or a Collector's receiver), a Collector configuration that forwards every
 * signal to Sluice through one exporter, and the check that every record sent is a row.
 */
import { expect } from 'vitest';
import type { ChildService } from './child-service.js';
import { runTelemetrygen, type OtelTools } from './otel-tools.js';
import { rowsOfService, type OtlpSource } from './otlp-child.js';

export interface Sent {
  logs: number;
  spans: number;
  dataPoints: number;
  /** The body of every log record. */
  body: string;
}

const WORKERS = 2;
const LOGS_PER_WORKER = 25;
const TRACES_PER_WORKER = 5;
/** telemetrygen's traces: a parent span and this many children each. */
const CHILD_SPANS = 1;
const METRICS_PER_WORKER = 15;

export interface TelemetrygenTarget {
  /** host:port. */
  endpoint: string;
  /** OTLP/HTTP with this path before /v1/<signal>; without it, OTLP/gRPC. */
  http?: { pathPrefix: string };
  /** Sent as `authorization: Bearer <secret>` (a header on HTTP, metadata on gRPC). */
  secret?: string;
  /** The resource's service.name, which tells this run's rows apart. */
  service: string;
}

/** Runs telemetrygen logs, traces and metrics (unthrottled, two workers) one after the other; each must exit 0. */
export async function telemetrygenRuns(tools: OtelTools, target: TelemetrygenTarget): Promise<Sent> {
  const body = `order placed by ${target.service}`;
  const common = (signal: string): string[] => [
    '--otlp-endpoint', target.endpoint,
    '--otlp-insecure',
    '--service', target.service,
    '--workers', String(WORKERS),
    '--rate', '0',
    ...(target.http ? ['--otlp-http', '--otlp-http-url-path', `${target.http.pathPrefix}/v1/${signal}`] : []),
    // telemetrygen reads key="value" (the inner quotes are its syntax, not a shell's).
    ...(target.secret ? ['--otlp-header', `authorization="Bearer ${target.secret}"`] : []),
  ];
  const runs: Array<[string, string[]]> = [
    ['logs', [...common('logs'), '--logs', String(LOGS_PER_WORKER), '--body', body, '--severity-text', 'Warn', '--severity-number', '13']],
    ['traces', [...common('traces'), '--traces', String(TRACES_PER_WORKER), '--child-spans', String(CHILD_SPANS)]],
    ['metrics', [...common('metrics'), '--metrics', String(METRICS_PER_WORKER), '--metric-type', 'Sum', '--otlp-metric-name', 'orders']],
  ];
  for (const [signal, args] of runs) {
    const run = await runTelemetrygen(tools, [signal, ...args]);
    expect(run.code, `telemetrygen ${signal}: ${run.output.slice(-3000)}`).toBe(0);
  }
  return {
    logs: WORKERS * LOGS_PER_WORKER,
    spans: WORKERS * TRACES_PER_WORKER * (1 + CHILD_SPANS),
    dataPoints: WORKERS * METRICS_PER_WORKER,
    body,
  };
}

/** Every record of `sent` is a row of its signal's default table, with telemetrygen's values. */
export async function expectRecordsOfEachSignal(svc: ChildService, source: OtlpSource, service: string, sent: Sent): Promise<void> {
  const bucket = `in.c-${source.sourceId}`;
  const logs = await rowsOfService(svc, `${bucket}.logs`, service, sent.logs);
  expect(logs).toHaveLength(sent.logs);
  for (const row of logs) {
    expect(row).toMatchObject({ body: sent.body, severity_text: 'Warn', severity_number: '13' });
    expect(row.timestamp).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{9}Z$/);
  }

  const spans = await rowsOfService(svc, `${bucket}.traces`, service, sent.spans);
  expect(spans).toHaveLength(sent.spans);
  // Each trace: one root span and its children, under the root's trace id.
  const roots = spans.filter((s) => s.parent_span_id === '');
  expect(roots).toHaveLength(sent.spans / (1 + CHILD_SPANS));
  for (const span of spans) {
    expect(span.trace_id).toMatch(/^[0-9a-f]{32}$/);
    expect(span.span_id).toMatch(/^[0-9a-f]{16}$/);
  }
  expect(new Set(spans.map((s) => s.span_id)).size).toBe(sent.spans);

  const points = await rowsOfService(svc, `${bucket}.metrics`, service, sent.dataPoints);
  expect(points).toHaveLength(sent.dataPoints);
  for (const point of points) expect(point).toMatchObject({ metric_name: 'orders', metric_type: 'sum' });
}

export interface CollectorForward {
  /** host:port of the Collector's otlp receiver (gRPC). */
  receiverGrpc: string;
  /** The exporter's type (`otlp_http`, `otlp_grpc`) and its settings. */
  exporter: string;
  exporterSettings: Record<string, unknown>;
}

/**
 * A Collector that takes OTLP over gRPC and forwards logs, traces and metrics through the batch
 * processor (a short timeout, so a test waits little) and one exporter. Its own telemetry is off:
 * its metrics listener (:8888 by default) would clash with another Collector on the machine.
 */
export function collectorConfig(forward: CollectorForward): object {
  const pipeline = { receivers: ['otlp'], processors: ['batch'], exporters: [forward.exporter] };
  return {
    receivers: { otlp: { protocols: { grpc: { endpoint: forward.receiverGrpc } } } },
    processors: { batch: { timeout: '200ms' } },
    exporters: { [forward.exporter]: forward.exporterSettings },
    service: {
      telemetry: { metrics: { level: 'none' } },
      pipelines: { logs: pipeline, traces: pipeline, metrics: pipeline },
    },
  };
}

/** The headers a record of the source's log keeps (GET .../records), by lower-case name. */
export function recordHeaders(record: { headers: Record<string, string | string[]> }): Record<string, string> {
  return Object.fromEntries(Object.entries(record.headers).map(([k, v]) => [k.toLowerCase(), Array.isArray(v) ? v.join(', ') : v]));
}
