/**
 * Ingestion answers counted where they are written: the fast path calls `answered` when it
 * answers, the fastify ingestion and OTLP plugins from an onResponse hook. (A 'finish' listener
 * on every response at the HTTP listener cost the plain request 14 % of its throughput in the
 * ingest bench: no listener per request here.) Route (record, batch, otlp), status class, time
 * to the answer; a 503 of a stopping node is a refusal of reason "shutdown" (the log's own
 * refusals are counted by MeteredEventLog). OTLP/gRPC calls are the route otlp-grpc, their status
 * the gRPC code's name (OK, INVALID_ARGUMENT, UNAVAILABLE, ...): a code says more than a class,
 * and there are few of them; UNAVAILABLE of a stopping node is the refusal "shutdown" too.
 */
import type { IngestRoute, Metrics } from './metrics.js';

/** Called once per ingestion answer. */
export type IngestAnswered = (route: IngestRoute, status: number, seconds: number) => void;

/** Called once per answered OTLP/gRPC call, with its gRPC status code. */
export type GrpcAnswered = (code: number, seconds: number) => void;

/** The route of an ingestion path, by the plugins' prefixes (/stream, /otlp). */
export function ingestRoute(url: string): IngestRoute {
  if (url.startsWith('/otlp/')) return 'otlp';
  const q = url.indexOf('?');
  return (q < 0 ? url : url.slice(0, q)).endsWith('/batch') ? 'batch' : 'record';
}

const STATUS_CLASSES = ['0xx', '1xx', '2xx', '3xx', '4xx', '5xx'];

export function ingestAnswerCounter(metrics: Metrics, isShuttingDown: () => boolean): IngestAnswered {
  // The cells of the common answers, looked up once; others on their first use.
  const ok = { record: metrics.ingestRequests.cell({ route: 'record', status: '2xx' }) };
  const durations = {
    record: metrics.ingestDuration.cell({ route: 'record' }),
    batch: metrics.ingestDuration.cell({ route: 'batch' }),
    otlp: metrics.ingestDuration.cell({ route: 'otlp' }),
    'otlp-grpc': metrics.ingestDuration.cell({ route: 'otlp-grpc' }),
  };
  return (route, status, seconds) => {
    if (route === 'record' && status < 300 && status >= 200) ok.record.value++;
    else metrics.ingestRequests.cell({ route, status: STATUS_CLASSES[Math.floor(status / 100)] ?? `${Math.floor(status / 100)}xx` }).value++;
    durations[route].observe(seconds);
    if (status === 503 && isShuttingDown()) metrics.ingestRefused.inc({ reason: 'shutdown' });
  };
}

/** gRPC status codes by number (grpc/doc/statuscodes.md): the status label of otlp-grpc calls. */
const GRPC_CODE_NAMES = [
  'OK', 'CANCELLED', 'UNKNOWN', 'INVALID_ARGUMENT', 'DEADLINE_EXCEEDED', 'NOT_FOUND', 'ALREADY_EXISTS', 'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED', 'FAILED_PRECONDITION', 'ABORTED', 'OUT_OF_RANGE', 'UNIMPLEMENTED', 'INTERNAL', 'UNAVAILABLE', 'DATA_LOSS',
  'UNAUTHENTICATED',
];
const UNAVAILABLE = 14;

export function grpcAnswerCounter(metrics: Metrics, isShuttingDown: () => boolean): GrpcAnswered {
  const ok = metrics.ingestRequests.cell({ route: 'otlp-grpc', status: 'OK' });
  const duration = metrics.ingestDuration.cell({ route: 'otlp-grpc' });
  return (code, seconds) => {
    if (code === 0) ok.value++;
    else metrics.ingestRequests.cell({ route: 'otlp-grpc', status: GRPC_CODE_NAMES[code] ?? String(code) }).value++;
    duration.observe(seconds);
    if (code === UNAVAILABLE && isShuttingDown()) metrics.ingestRefused.inc({ reason: 'shutdown' });
  };
}

/** The throttled records and bytes of a source (sources/ingest/source-quotas.ts counts into them). */
export function throttleCounters(metrics: Metrics): { cellsOf(source: string): { records: { value: number }; bytes: { value: number } } } {
  return {
    cellsOf: (source) => ({ records: metrics.ingestThrottledRecords.cell({ source }), bytes: metrics.ingestThrottledBytes.cell({ source }) }),
  };
}
