/**
 * The render worker thread (see worker-renderer.ts): decodes each batch from its buffer,
 * renders it with Sluice's template engine and answers with the CSV texts, whose buffers are
 * transferred, not copied.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SluiceTemplateEngine } from '../../connectors/jsonnet/sluice-engine.js';
import { BatchRenderer, type BatchRecord } from '../../pipeline/batch-render.js';
import { decodeRecord } from '../../pipeline/record-codec.js';
import type { RenderRequest, RenderResponse, RenderWorkerData } from './worker-renderer.js';

const renderer = new BatchRenderer(new SluiceTemplateEngine((workerData as RenderWorkerData | null)?.limits));
const port = parentPort;
if (!port) throw new Error('render-worker runs as a worker thread');

port.on('message', (request: RenderRequest) => {
  void answer(request).then(
    (response) => port.postMessage(response, response.results?.map((r) => r.csv.buffer as ArrayBuffer) ?? []),
    (err: unknown) => port.postMessage({ id: request.id, error: err instanceof Error ? err.message : String(err) } satisfies RenderResponse),
  );
});

async function answer(request: RenderRequest): Promise<RenderResponse> {
  const data = new Uint8Array(request.data);
  const records: BatchRecord[] = new Array(request.offsets.length);
  let start = 0;
  for (let i = 0; i < records.length; i++) {
    const end = request.ends[i];
    records[i] = { offset: request.offsets[i], record: decodeRecord(data.subarray(start, end)) };
    start = end;
  }
  return { id: request.id, results: await renderer.render(records, request.jobs) };
}
