/**
 * The render worker's entry (see render-thread.ts): Sluice's template engine, in a worker thread
 * (worker-renderer.ts) or in a child process of its own (sandbox.ts: no slot, nothing to mark).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { SluiceTemplateEngine } from '../../connectors/jsonnet/sluice-engine.js';
import { serveRenderRequests } from './render-thread.js';
import type { RenderWorkerData } from './worker-renderer.js';

if (parentPort) {
  serveRenderRequests(parentPort, new SluiceTemplateEngine(), (workerData ?? {}) as RenderWorkerData);
} else if (process.send) {
  const send = process.send.bind(process);
  serveRenderRequests({ on: (event, listener) => process.on(event, listener), postMessage: (response) => send(response) }, new SluiceTemplateEngine(), {});
} else {
  throw new Error('render-worker runs as a worker thread or a child process with an IPC channel');
}
