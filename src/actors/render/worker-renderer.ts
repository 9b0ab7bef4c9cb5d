import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import type { LoggedRecord } from '../../connectors/event-log/event-log.js';
import type { LimitOptions } from '../../jsonnet/limits.js';
import { encodeRecord } from '../../pipeline/record-codec.js';
import type { RecordRenderer, RenderedRows, RenderJob } from './renderer.js';

/** A batch as it crosses to the worker: the encoded records back to back in one transferred buffer. */
export interface RenderRequest {
  id: number;
  data: ArrayBuffer;
  /** End of each record in `data`. */
  ends: Uint32Array;
  offsets: Float64Array;
  jobs: readonly RenderJob[];
}

/** What the worker thread starts with (its workerData). */
export interface RenderWorkerData {
  /** The limits of its template engine's evaluations: the server's, as for templates run elsewhere. */
  limits: LimitOptions;
}

export interface RenderResponse {
  id: number;
  results?: RenderedRows[];
  error?: string;
}

interface Pending {
  resolve: (results: RenderedRows[]) => void;
  reject: (err: Error) => void;
}

/**
 * Renders on one worker thread (render-worker.ts). The event loop only copies each batch's
 * encoded records into one buffer (the embedded log hands them over encoded; other records are
 * encoded here) and writes the CSV it gets back: mapping, template evaluation and CSV encoding,
 * the bulk of a sink's work per record, run beside ingestion instead of between its requests.
 *
 * A worker that dies (an uncaught error, an exit) fails the batches in flight, which the sink
 * actors retry with backoff; the next batch starts a new worker. The worker does not keep the
 * process alive.
 */
export class WorkerRenderer implements RecordRenderer {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  /** `limits`: of the worker's template evaluations (default: the engine's own). */
  constructor(private readonly limits: LimitOptions = {}) {}

  render(records: readonly LoggedRecord[], jobs: readonly RenderJob[]): Promise<RenderedRows[]> {
    if (this.closed) return Promise.reject(new Error('the renderer is closed'));
    if (jobs.length === 0) return Promise.resolve([]);
    const request = pack(this.nextId++, records, jobs);
    return new Promise((resolve, reject) => {
      this.pending.set(request.id, { resolve, reject });
      this.started().postMessage(request, [request.data]);
    });
  }

  async close(): Promise<void> {
    this.closed = true;
    const worker = this.worker;
    this.worker = undefined;
    this.failAll(new Error('the renderer is closed'));
    if (worker) await worker.terminate();
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const [script, options] = workerScript();
    const worker = new Worker(script, { ...options, workerData: { limits: this.limits } satisfies RenderWorkerData });
    worker.unref();
    worker.on('message', (response: RenderResponse) => {
      const p = this.pending.get(response.id);
      if (!p) return;
      this.pending.delete(response.id);
      if (response.results) p.resolve(response.results);
      else p.reject(new Error(`render worker: ${response.error ?? 'no result'}`));
    });
    const lost = (why: string) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.failAll(new Error(`render worker ${why}`));
    };
    worker.on('error', (err) => lost(`failed: ${err.message}`));
    worker.on('exit', (code) => lost(`exited (code ${code})`));
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(err);
  }
}

function pack(id: number, records: readonly LoggedRecord[], jobs: readonly RenderJob[]): RenderRequest {
  const parts = records.map((r) => r.encoded ?? encodeRecord(r.record));
  let total = 0;
  for (const p of parts) total += p.length;
  const bytes = new Uint8Array(total);
  const ends = new Uint32Array(parts.length);
  const offsets = new Float64Array(parts.length);
  let pos = 0;
  for (let i = 0; i < parts.length; i++) {
    bytes.set(parts[i], pos);
    pos += parts[i].length;
    ends[i] = pos;
    offsets[i] = records[i].offset;
  }
  return { id, data: bytes.buffer, ends, offsets, jobs };
}

/**
 * The worker's module: the compiled one next to this file, or, when Sluice runs from its
 * TypeScript sources (tests), the source loaded through tsx's loader in the new thread.
 */
function workerScript(): [string | URL, WorkerOptions] {
  if (!import.meta.url.endsWith('.ts')) return [new URL('./render-worker.js', import.meta.url), {}];
  // tsx's ESM entry (a require() resolution would give its CommonJS one).
  const tsxRoot = dirname(createRequire(import.meta.url).resolve('tsx/package.json'));
  const tsx = pathToFileURL(join(tsxRoot, 'dist/esm/api/index.mjs')).href;
  const entry = new URL('./render-worker.ts', import.meta.url).href;
  return [`import(${JSON.stringify(tsx)}).then(({ tsImport }) => tsImport(${JSON.stringify(entry)}, ${JSON.stringify(import.meta.url)}))`, { eval: true }];
}
