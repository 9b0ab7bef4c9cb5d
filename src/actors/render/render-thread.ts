/**
 * What a render worker thread does (wiring/render-worker.ts starts it with Sluice's template engine; the
 * render sandbox, sandbox.ts, runs the same in a child process):
 * decodes each batch from its buffer, renders it and answers with the CSV texts, whose buffers
 * are transferred, not copied. While template columns run it marks the records in its slot file
 * (inflight.ts), which the main thread reads if the thread dies, and the next start if the
 * process does.
 */
import { BatchRenderer, type BatchRecord } from '../../pipeline/batch-render.js';
import { BatchDecoder } from '../../pipeline/record-codec.js';
import type { TemplateEngine } from '../../pipeline/template-engine.js';
import { InflightSlot } from './inflight.js';
import type { RenderRequest, RenderResponse, RenderWorkerData } from './worker-renderer.js';

/** Where requests come from and answers go: a worker thread's parent port, or a child process's IPC channel. */
export interface RenderEndpoint {
  on(event: 'message', listener: (request: RenderRequest) => void): unknown;
  postMessage(response: RenderResponse, transfer: ArrayBuffer[]): void;
}

export function serveRenderRequests(port: RenderEndpoint, engine: TemplateEngine, data: RenderWorkerData): void {
  const renderer = new BatchRenderer(engine, data.slot ? new InflightSlot(data.slot) : undefined);
  const answer = async (request: RenderRequest): Promise<RenderResponse> => {
    const bytes = new Uint8Array(request.data);
    const records: BatchRecord[] = new Array(request.offsets.length);
    const decoder = new BatchDecoder();
    let start = 0;
    for (let i = 0; i < records.length; i++) {
      const end = request.ends[i];
      records[i] = { offset: request.offsets[i], record: decoder.decode(bytes.subarray(start, end)) };
      start = end;
    }
    return { id: request.id, results: await renderer.render(records, request.jobs) };
  };
  port.on('message', (request: RenderRequest) => {
    void answer(request).then(
      (response) => port.postMessage(response, response.results?.map((r) => r.csv.buffer as ArrayBuffer) ?? []),
      (err: unknown) => port.postMessage({ id: request.id, error: err instanceof Error ? err.message : String(err) } satisfies RenderResponse, []),
    );
  });
}
