/**
 * A render worker thread for tests (test/unit/actors/render.test.ts): Sluice's template engine, except
 * that a template column evaluated for a record whose body has `"die": true` ends the thread, as
 * a template that outgrows the thread's heap does when V8 ends the thread cleanly
 * (ERR_WORKER_OUT_OF_MEMORY), but at once and every time.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { serveRenderRequests } from '../../src/actors/render/render-thread.js';
import type { RenderWorkerData } from '../../src/actors/render/worker-renderer.js';
import { SluiceTemplateEngine } from '../../src/adapters/jsonnet/sluice-engine.js';
import type { CompiledTemplate, TemplateEngine } from '../../src/pipeline/template-engine.js';

const engine = new SluiceTemplateEngine();
const dying: TemplateEngine = {
  check: (content) => engine.check(content),
  async compile(content): Promise<CompiledTemplate> {
    const template = await engine.compile(content);
    return {
      evaluate(record) {
        if (/"die"\s*:\s*true/.test(record.bodyString())) process.exit(9);
        return template.evaluate(record);
      },
    };
  },
};

serveRenderRequests(parentPort!, dying, workerData as RenderWorkerData);
