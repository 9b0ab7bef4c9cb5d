/**
 * The records of the e2e bench (`bench/e2e.ts`) and the baseline's work on them: the request
 * bodies of both batch paths, the sinks' columns, and the least work a plain loop does to turn
 * a request into the five `path` columns' CSV cells (no Sluice pipeline: the same decoder, the
 * fields picked out directly).
 */
import { decodeExportRequest } from '../src/sources/otlp/decode.js';
import { flattenLogs } from '../src/sources/otlp/flatten.js';
import type { ExportLogsRequest } from '../src/sources/otlp/model.js';
import { anyValueJson, attributesJson, idHex, timestampJson } from '../src/sources/otlp/values.js';
import { logsRequest } from './otlp.js';

export type BatchPath = 'otlp' | 'batch';

/** The five path columns of sink `paths` (as the otlp bench's sink). */
export const PATH_COLUMNS = [
  { type: 'path', name: 'timestamp', path: 'timestamp', rawString: true },
  { type: 'path', name: 'severity', path: 'severity_text', rawString: true },
  { type: 'path', name: 'body', path: 'body', rawString: true },
  { type: 'path', name: 'trace_id', path: 'trace_id', defaultValue: '', rawString: true },
  { type: 'path', name: 'attributes', path: 'attributes' },
];

/** Sink `template`: two path columns and one Jsonnet template column. */
export const TEMPLATE_COLUMNS = [
  { type: 'path', name: 'timestamp', path: 'timestamp', rawString: true },
  { type: 'path', name: 'trace_id', path: 'trace_id', defaultValue: '', rawString: true },
  { type: 'template', name: 'message', template: { language: 'jsonnet', content: 'Body("severity_text") + ": " + Body("body")' } },
];

export const PATH_COLUMN_NAMES = PATH_COLUMNS.map((c) => c.name);

/** OTLP/HTTP protobuf: one ExportLogsServiceRequest of `n` log records (the otlp bench's). */
export function otlpBody(n = 512): Buffer {
  return logsRequest(n);
}

/**
 * The connector batch body (NDJSON with a final newline, Aiven's default framing) of `n`
 * records: the flattened OTLP log records, so that both paths carry the same records and the
 * same columns read them.
 */
export function ndjsonBody(n = 500): Buffer {
  const records = flattenLogs(decodeExportRequest('logs', 'protobuf', logsRequest(n)) as ExportLogsRequest);
  return Buffer.from(records.join('\n') + '\n');
}

/** The five path columns' cells of every record of an OTLP logs request, as the sink renders them. */
export function otlpRows(body: Uint8Array): string[][] {
  const req = decodeExportRequest('logs', 'protobuf', body) as ExportLogsRequest;
  const rows: string[][] = [];
  for (const rl of req.resourceLogs ?? []) {
    for (const sl of rl.scopeLogs ?? []) {
      for (const lr of sl.logRecords ?? []) {
        const body = lr.body?.stringValue;
        rows.push([
          timestampJson(lr.timeUnixNano).slice(1, -1),
          lr.severityText ?? '',
          typeof body === 'string' ? body : anyValueJson(lr.body),
          idHex(lr.traceId) ?? '',
          attributesJson(lr.attributes),
        ]);
      }
    }
  }
  return rows;
}

interface FlatLog {
  timestamp?: string;
  severity_text?: string;
  body?: unknown;
  trace_id?: string;
  attributes?: unknown;
}

/** The same cells from an NDJSON batch: split the lines, parse each, pick the fields. */
export function ndjsonRows(body: Buffer): string[][] {
  const rows: string[][] = [];
  for (const line of body.toString('utf8').split('\n')) {
    if (line === '') continue;
    const r = JSON.parse(line) as FlatLog;
    rows.push([
      r.timestamp ?? '',
      r.severity_text ?? '',
      typeof r.body === 'string' ? r.body : JSON.stringify(r.body ?? null),
      r.trace_id ?? '',
      JSON.stringify(r.attributes ?? null),
    ]);
  }
  return rows;
}

export function rowsOf(path: BatchPath, body: Buffer): string[][] {
  return path === 'otlp' ? otlpRows(body) : ndjsonRows(body);
}
