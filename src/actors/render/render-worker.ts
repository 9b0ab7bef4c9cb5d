/**
 * The render worker's entry (see render-thread.ts): Sluice's template engine, in a worker thread
 * (worker-renderer.ts) or in a child process of its own (sandbox.ts: no slot, nothing to mark).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SluiceTemplateEngine } from '../../connectors/jsonnet/sluice-engine.js';
import { serveRenderRequests } from './render-thread.js';
import type { RenderWorkerData } from './worker-renderer.js';

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
