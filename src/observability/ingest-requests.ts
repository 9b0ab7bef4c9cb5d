/**
 * Ingestion answers counted where they are written: the fast path calls `answered` when it
 * answers, the fastify ingestion and OTLP plugins from an onResponse hook. (A 'finish' listener
 * on every response at the HTTP listener cost the plain request 14 % of its throughput in the
 * ingest bench: no listener per request here.) Route (record, batch, otlp), status class, time
 * to the answer; a 503 of a stopping node is a refusal of reason "shutdown" (the log's own
 * refusals are counted by MeteredEventLog).
 */
import type { IngestRoute, Metrics } from './metrics.js';

/** Called once per ingestion answer. */
export type IngestAnswered = (route: IngestRoute, status: number, seconds: number) => void;

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
  const durations = { record: metrics.ingestDuration.cell({ route: 'record' }), batch: metrics.ingestDuration.cell({ route: 'batch' }), otlp: metrics.ingestDuration.cell({ route: 'otlp' }) };
  return (route, status, seconds) => {
    if (route === 'record' && status < 300 && status >= 200) ok.record.value++;
    else metrics.ingestRequests.cell({ route, status: STATUS_CLASSES[Math.floor(status / 100)] ?? `${Math.floor(status / 100)}xx` }).value++;
    durations[route].observe(seconds);
    if (status === 503 && isShuttingDown()) metrics.ingestRefused.inc({ reason: 'shutdown' });
  };
}

/** The throttled records and bytes of a source (sources/ingest/source-quotas.ts counts into them). */
export function throttleCounters(metrics: Metrics): { cellsOf(source: string): { records: { value: number }; bytes: { value: number } } } {
  return {
    cellsOf: (source) => ({ records: metrics.ingestThrottledRecords.cell({ source }), bytes: metrics.ingestThrottledBytes.cell({ source }) }),
  };
}
