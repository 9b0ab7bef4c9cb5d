/** The render worker thread's entry (see render-thread.ts and worker-renderer.ts): Sluice's template engine. */
import { parentPort, workerData } from 'node:worker_threads';
import { SluiceTemplateEngine } from '../../connectors/jsonnet/sluice-engine.js';
import { serveRenderRequests } from './render-thread.js';
import type { RenderWorkerData } from './worker-renderer.js';

if (!parentPort) throw new Error('render-worker runs as a worker thread');
serveRenderRequests(parentPort, new SluiceTemplateEngine(), (workerData ?? {}) as RenderWorkerData);
