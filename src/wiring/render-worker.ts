/**
 * The render worker's entry (see actors/render/render-thread.ts), a composition root of its own:
 * it builds Sluice's template engine (an adapter) and serves render requests, in a worker thread
 * (actors/render/worker-renderer.ts) or in a child process of its own (actors/render/sandbox.ts: no
 * slot, nothing to mark).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SluiceTemplateEngine } from '../adapters/jsonnet/sluice-engine.js';
import { serveRenderRequests } from '../actors/render/render-thread.js';
import type { RenderWorkerData } from '../actors/render/worker-renderer.js';

if (parentPort) {
  const data = (workerData ?? {}) as RenderWorkerData;
  serveRenderRequests(parentPort, new SluiceTemplateEngine(data.limits), data);
} else if (process.send) {
  // The sandbox's child: its template limits come as the first argument (JSON), as it gets no SLUICE_* settings.
  const send = process.send.bind(process);
  const limits = process.argv[2] ? (JSON.parse(process.argv[2]) as RenderWorkerData['limits']) : undefined;
  serveRenderRequests({ on: (event, listener) => process.on(event, listener), postMessage: (response) => send(response) }, new SluiceTemplateEngine(limits), {});
} else {
  throw new Error('render-worker runs as a worker thread or a child process with an IPC channel');
}
