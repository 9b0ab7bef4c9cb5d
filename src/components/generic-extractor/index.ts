/**
 * `keboola.ex-generic-v2`: the generic extractor (the workspace package
 * @sluice/generic-extractor) as a component of the job queue (see ../contract.ts). Reads the
 * configuration and state the queue hands over (`#` values decrypted), writes `out/tables/*.csv`
 * with manifests; progress and stop reasons go to the job log. The extractor's errors caused by
 * the configuration or the API are named `UserError`, as the queue expects of a component.
 */
import { runExtraction, summary, type JsonObject } from '@sluice/generic-extractor';
import type { Component, ComponentContext, ComponentResult } from '../contract.js';

export const COMPONENT_ID = 'keboola.ex-generic-v2';

export { summary };

export const component: Component = {
  id: COMPONENT_ID,
  async run(ctx: ComponentContext): Promise<ComponentResult> {
    // A progress line in the job log at most every 10 s (the job's events stay few).
    let lastProgress = Date.now();
    const result = await runExtraction({
      dataDir: ctx.dataDir,
      config: ctx.config,
      state: ctx.state as JsonObject,
      log: (m, level) => ctx.log(m, level),
      signal: ctx.signal,
      onProgress: (p) => {
        if (Date.now() - lastProgress < 10_000) return;
        lastProgress = Date.now();
        ctx.log(`Progress: ${p.pages} pages, ${p.items} items, ${p.bytes} bytes`);
      },
    });
    for (const reason of result.stopReasons) ctx.log(`Stop reason: ${reason}`);
    return { message: summary(result), counters: { pages: result.pages, items: result.items } };
  },
};
