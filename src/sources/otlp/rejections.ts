/**
 * Which records of an OTLP request the sinks will not be able to map, known at ingest time.
 *
 * Sinks map records after the event log, asynchronously; but an OTLP client expects to learn
 * in the answer (partial_success) how many of its records were rejected. So ingestion renders
 * the flattened records through the current mapping of every enabled sink that takes the
 * signal, as the sink writers will a moment later, and counts a record as rejected when at
 * least one of those sinks cannot map it. The answer is exact unless a sink's mapping changes
 * between the request and the write (the sink's failures list is the authoritative record).
 * Rejected records are still appended to the log: the sinks that can map them write them, the
 * others keep them as mapping failures, which can be replayed once the mapping is fixed.
 */
import type { Column, Signal } from '../../model/definition.js';
import type { RowMapping } from '../../pipeline/row-mapping.js';
import { MappingError } from '../../pipeline/columns/errors.js';
import type { RecordContext } from '../../pipeline/template-engine.js';
import { cachedPath } from '../../pipeline/columns/path.js';
import { ALWAYS_WRITTEN } from './flatten.js';

export interface SinkMapping {
  sinkId: string;
  /** Its filter, then its columns: a record the filter skips is not rejected. */
  mapping: RowMapping;
}

export interface Rejections {
  /** Records at least one sink cannot map. */
  rejected: number;
  /** The error of the first rejected record (in request order), naming its sink. */
  firstError?: string;
}

/** Whether a template can fail on a flattened record of the signal (the engine's side reads its syntax: template-can-fail.ts). */
export type TemplateCanFail = (content: string, signal: Signal) => boolean;

/**
 * Whether a mapping can fail on a flattened OTLP record of the signal at all. The body is JSON
 * Sluice wrote itself, so only templates and `path` columns without a default can fail, and of
 * those only paths that can miss (pathCanMiss) and templates that `templateCanFail` cannot
 * clear; and typed path and template columns, whose value may not convert (STRING and JSON
 * take any value), and primary key columns (a key needs a value of a bounded size). Sinks with
 * none need no check, which saves a full parse and mapping of every record on the ingestion
 * thread.
 */
export function mappingCanFail(columns: readonly Column[], signal: Signal, templateCanFail: TemplateCanFail = () => true): boolean {
  return columns.some((c) => {
    if (c.primaryKey === true) return true;
    if ((c.type === 'path' || c.type === 'template') && c.dataType !== undefined && c.dataType !== 'STRING' && c.dataType !== 'JSON') return true;
    if (c.type === 'template') return c.template?.language !== 'jsonnet' || templateCanFail(c.template.content ?? '', signal);
    // A typed path column writes NULL for a missing path: only an untyped one fails.
    return c.type === 'path' && c.dataType === undefined && (c.defaultValue === undefined || c.defaultValue === null) && pathCanMiss(c.path ?? '', signal);
  });
}

/** Whether a body path can miss on a flattened record of the signal: not the whole body, nor a top-level key the flattening always writes (ALWAYS_WRITTEN). */
export function pathCanMiss(path: string, signal: Signal): boolean {
  const steps = cachedPath(path);
  if (steps.length === 0) return false;
  return steps.length > 1 || !ALWAYS_WRITTEN[signal].has(steps[0].key);
}

export async function findRejections(ctxs: readonly RecordContext[], sinks: readonly SinkMapping[]): Promise<Rejections> {
  if (ctxs.length === 0 || sinks.length === 0) return { rejected: 0 };
  const failed = new Array<string | undefined>(ctxs.length);
  const results = await Promise.all(sinks.map((s) => s.mapping.renderMany(ctxs)));
  results.forEach((rows, k) => {
    rows.forEach((row, i) => {
      if (row instanceof MappingError && failed[i] === undefined) failed[i] = `sink "${sinks[k].sinkId}": ${row.message}`;
    });
  });
  let rejected = 0;
  let firstError: string | undefined;
  for (const f of failed) {
    if (f === undefined) continue;
    rejected++;
    firstError ??= f;
  }
  return firstError === undefined ? { rejected } : { rejected, firstError };
}

/** The partial_success error message of the reference: `N of M records rejected; first error: ...`. */
export function rejectionMessage(r: Rejections, total: number): string {
  return `${r.rejected} of ${total} records rejected; first error: ${r.firstError ?? ''}`;
}
