import { rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Worker, type WorkerOptions } from 'node:worker_threads';
import type { LoggedRecord } from '../../ports/event-log.js';
import type { Logger } from '../../logger.js';
import type { ParkedRecord } from '../../pipeline/batch-render.js';
import type { LimitOptions } from '@sluice/jsonnet';
import { encodeRecord } from '../../pipeline/record-codec.js';
import { readMark, stoppedWorkerReason, type InflightMark } from './inflight.js';
import type { RecordProber, RecordRenderer, RenderedRows, RenderJob, RenderLane } from './renderer.js';

/** A batch as it crosses to the worker: the encoded records back to back in one transferred buffer. */
export interface RenderRequest {
  id: number;
  data: ArrayBuffer;
  /** End of each record in `data`. */
  ends: Uint32Array;
  offsets: Float64Array;
  jobs: readonly RenderJob[];
}

export interface RenderResponse {
  id: number;
  results?: RenderedRows[];
  error?: string;
}

/** What a render thread is started with. */
export interface RenderWorkerData {
  /** Its slot file (inflight.ts): where it marks the records its template columns are mapping. */
  slot?: string;
  /** Limits of its template evaluations: the server's, as for templates run elsewhere (default: the engine's own). */
  limits?: LimitOptions;
}

export interface WorkerRendererOptions {
  /** A new slot file's path for a thread (inflight.ts slotPath); none: no marks (tests that do not look). */
  slotPath?: (thread: string) => string;
  /** Heap cap of each render thread in MB (V8's resourceLimits.maxOldGenerationSizeMb); none: V8's default. */
  heapLimitMb?: number;
  /** Limits of the threads' template evaluations (default: the engine's own). */
  limits?: LimitOptions;
  logger?: Logger;
  /** Where the records a dead thread was mapping are tried one at a time (sandbox.ts); none: on a new thread each. */
  prober?: RecordProber;
  /** The thread's module and options (tests); default: render-worker. */
  script?: () => [string | URL, WorkerOptions];
}

/** A render thread died; `mark`: what it was mapping then, by its slot (none: it was not mapping templates). */
class ThreadDeath extends Error {
  constructor(
    message: string,
    readonly mark?: InflightMark,
  ) {
    super(message);
  }
}

interface Pending {
  resolve: (results: RenderedRows[]) => void;
  reject: (err: Error) => void;
}

/** A request that fails because other requests' records keep killing its thread is given up after this many deaths (the writer retries it later). */
const MAX_OTHER_DEATHS = 10;

/**
 * One worker thread at a time, started on demand and again after it died, with one slot file for
 * all its generations (the main thread reads the slot of a dead one before it starts the next).
 */
class RenderThread {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  private nextId = 1;
  private closed = false;

  constructor(
    private readonly slot: string | undefined,
    private readonly options: WorkerRendererOptions,
  ) {}

  send(records: readonly LoggedRecord[], jobs: readonly RenderJob[]): Promise<RenderedRows[]> {
    if (this.closed) return Promise.reject(new Error('the renderer is closed'));
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
    if (this.slot) rmSync(this.slot, { force: true });
  }

  private started(): Worker {
    if (this.worker) return this.worker;
    const [script, base] = (this.options.script ?? workerScript)();
    const workerData: RenderWorkerData = { slot: this.slot, limits: this.options.limits };
    const heap = this.options.heapLimitMb;
    const worker = new Worker(script, { ...base, workerData, ...(heap ? { resourceLimits: { maxOldGenerationSizeMb: heap } } : {}) });
    worker.unref();
    worker.on('message', (response: RenderResponse) => {
      const p = this.pending.get(response.id);
      if (!p) return;
      this.pending.delete(response.id);
      if (response.results) p.resolve(response.results);
      else p.reject(new Error(`render worker: ${response.error ?? 'no result'}`));
    });
    // An 'error' (an uncaught exception, ERR_WORKER_OUT_OF_MEMORY) is followed by the 'exit'.
    let failure: string | undefined;
    worker.on('error', (err) => (failure ??= `failed: ${err.message}`));
    worker.on('exit', (code) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      // Read before a new thread opens the slot again, and cleared: the batches are rendered again
      // (their suspects on a probe thread with a slot of its own), nothing is in flight here now.
      const mark = this.slot ? readMark(this.slot) : undefined;
      if (this.slot) writeFileSync(this.slot, '');
      this.failAll(new ThreadDeath(`render worker ${failure ?? `exited (code ${code})`}`, mark));
    });
    this.worker = worker;
    return worker;
  }

  private failAll(err: Error): void {
    const pending = [...this.pending.values()];
    this.pending.clear();
    for (const p of pending) p.reject(err);
  }
}

/**
 * Renders on worker threads (wiring/render-worker.ts), one per lane (RenderLane: the sinks that keep up
 * share one, sinks that render apart another, so a slow template never waits in front of the
 * others). The event loop only copies each batch's encoded records into one buffer (the
 * embedded log hands them over encoded; other records are encoded here) and writes the CSV it
 * gets back: mapping, template evaluation and CSV encoding, the bulk of a sink's work per
 * record, run beside ingestion instead of between its requests.
 *
 * Each thread's heap is capped (`heapLimitMb`), so that a template that grows without bound
 * ends its thread rather than the process where V8 can (it cannot always: a large array that
 * outgrows the cap can abort the process, nodejs/node#47224; the in-flight marks are the net
 * then, see stopped-mappings.ts). A thread that dies while its templates map a chunk of a job's
 * records (its slot says which) does not fail that batch again and again: the chunk's records
 * are mapped one at a time on a thread of their own, those that end it too are answered as
 * failures of that job (parked), and the batch is rendered again without them, on a new
 * thread. Other batches in flight on the dead thread are rendered again as they were. A
 * thread that dies outside a template (nothing marked) fails the batches in flight, which the
 * sink writers retry with backoff. The threads do not keep the process alive.
 */
export class WorkerRenderer implements RecordRenderer {
  private readonly threads = new Map<RenderLane, RenderThread>();
  private closed = false;

  constructor(private readonly options: WorkerRendererOptions = {}) {}

  render(records: readonly LoggedRecord[], jobs: readonly RenderJob[], lane: RenderLane = 'shared'): Promise<RenderedRows[]> {
    if (this.closed) return Promise.reject(new Error('the renderer is closed'));
    if (jobs.length === 0) return Promise.resolve([]);
    return this.renderSurviving(this.thread(lane), records, jobs);
  }

  async close(): Promise<void> {
    this.closed = true;
    const threads = [...this.threads.values()];
    this.threads.clear();
    await Promise.all(threads.map((t) => t.close()));
  }

  private thread(lane: RenderLane): RenderThread {
    let thread = this.threads.get(lane);
    if (!thread) {
      thread = new RenderThread(this.options.slotPath?.(`render-${lane}`), this.options);
      this.threads.set(lane, thread);
    }
    return thread;
  }

  /** See the class comment: a death that names a job of this batch parks what killed it; others' deaths retry it. */
  private async renderSurviving(thread: RenderThread, records: readonly LoggedRecord[], jobs: readonly RenderJob[]): Promise<RenderedRows[]> {
    let current = jobs;
    let othersDeaths = 0;
    const probed = new Set<string>();
    for (;;) {
      try {
        return await thread.send(records, current);
      } catch (err) {
        if (!(err instanceof ThreadDeath) || !err.mark || this.closed) throw err;
        const mark = err.mark;
        const j = current.findIndex((job) => sameOwner(job, mark) && records.some((r) => r.offset === mark.offsets[0]));
        if (j < 0) {
          if (++othersDeaths > MAX_OTHER_DEATHS) throw err;
          continue;
        }
        const parked = await this.probe(records, current[j], mark, err.message, probed);
        current = current.map((job, k) => (k === j ? { ...job, parked: [...(job.parked ?? []), ...parked] } : job));
      }
    }
  }

  /**
   * The records a dead thread was mapping for `job`, each on its own (in the sandbox, or on a
   * new thread): those that end it too are returned, parked with the reason. When none does
   * alone (the thread died of what the chunk did together), the batch is tried once more; if the
   * same chunk ends a thread again, all its records are parked.
   */
  private async probe(records: readonly LoggedRecord[], job: RenderJob, mark: InflightMark, why: string, probed: Set<string>): Promise<ParkedRecord[]> {
    const log = this.options.logger?.child({ sourceId: mark.owner.sourceId, sinkId: mark.owner.sinkId });
    const suspects = records.filter((r) => mark.offsets.includes(r.offset));
    log?.error({ reason: why, offsets: mark.offsets }, 'a render worker died while it mapped records of this sink: they are mapped again one at a time, apart');
    const parked = this.options.prober ? await this.options.prober.probe(suspects, job) : await this.probeOnThread(suspects, job);
    const key = JSON.stringify([mark.owner, mark.offsets]);
    if (parked.length === 0 && probed.has(key)) {
      parked.push(...suspects.map((s) => ({ offset: s.offset, reason: stoppedWorkerReason(why) })));
    }
    probed.add(key);
    if (parked.length > 0) log?.error({ offsets: parked.map((p) => p.offset) }, 'records whose mapping ends the render worker are kept as mapping failures of the sink, not mapped again');
    return parked;
  }

  /** Each record alone on a thread of its own (with a slot of its own: a death of the process meanwhile parks it at the next start). */
  private async probeOnThread(suspects: readonly LoggedRecord[], job: RenderJob): Promise<ParkedRecord[]> {
    const prober = new RenderThread(this.options.slotPath?.('render-probe'), this.options);
    const parked: ParkedRecord[] = [];
    try {
      for (const suspect of suspects) {
        try {
          await prober.send([suspect], [{ ...job, budgetMs: undefined }]);
        } catch (err) {
          if (!(err instanceof ThreadDeath)) throw err;
          parked.push({ offset: suspect.offset, reason: stoppedWorkerReason(err.message) });
        }
      }
    } finally {
      await prober.close();
    }
    return parked;
  }
}

function sameOwner(job: RenderJob, mark: InflightMark): boolean {
  const a = job.owner;
  const b = mark.owner;
  return a !== undefined && a.branchId === b.branchId && a.sourceId === b.sourceId && a.sinkId === b.sinkId && a.mode === b.mode;
}

export function pack(id: number, records: readonly LoggedRecord[], jobs: readonly RenderJob[]): RenderRequest {
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
  if (!import.meta.url.endsWith('.ts')) return [new URL('../../wiring/render-worker.js', import.meta.url), {}];
  return typeScriptWorker(new URL('../../wiring/render-worker.ts', import.meta.url));
}

/** A worker thread that runs a TypeScript module through tsx's loader (Sluice run from its sources: tests). */
export function typeScriptWorker(entry: URL): [string, WorkerOptions] {
  // tsx's ESM entry (a require() resolution would give its CommonJS one).
  const tsxRoot = dirname(createRequire(import.meta.url).resolve('tsx/package.json'));
  const tsx = pathToFileURL(join(tsxRoot, 'dist/esm/api/index.mjs')).href;
  return [`import(${JSON.stringify(tsx)}).then(({ tsImport }) => tsImport(${JSON.stringify(entry.href)}, ${JSON.stringify(import.meta.url)}))`, { eval: true }];
}
