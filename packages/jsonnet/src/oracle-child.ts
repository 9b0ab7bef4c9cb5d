/**
 * Child-process side of ChildProcessEngine (engines.ts): evaluates one request at a time, sent
 * over the IPC channel, with libjsonnet (@hanazuki/node-jsonnet) or the Sluice compiler, and
 * answers on the same channel. std.trace output goes to this process's stderr, followed by an end
 * marker per evaluation (see endMarker() in engines.ts).
 * When libjsonnet aborts, this process dies and the parent fails the evaluation.
 */
import { createRequire } from 'node:module';
import { EngineError, SluiceEngine, endMarker, type ChildRequest, type ChildResponse, type EvaluateOptions } from './engines.js';

/** The part of @hanazuki/node-jsonnet's Jsonnet class used here (its types are not exported for ESM). */
interface JsonnetVm {
  setMaxStack(depth: number): this;
  extString(key: string, value: string): this;
  extCode(key: string, value: string): this;
  tlaString(key: string, value: string): this;
  tlaCode(key: string, value: string): this;
  addJpath(path: string): this;
  stringOutput(value: boolean): this;
  evaluateSnippet(snippet: string, filename?: string): Promise<string>;
}

let Jsonnet: (new () => JsonnetVm) | undefined;

async function evaluateLibjsonnet(code: string, options: EvaluateOptions): Promise<string> {
  Jsonnet ??= (createRequire(import.meta.url)('@hanazuki/node-jsonnet') as { Jsonnet: new () => JsonnetVm }).Jsonnet;
  // libjsonnet reads relative imports and library paths from the working directory; requests
  // are served one at a time, so changing it per request is safe.
  if (options.cwd) process.chdir(options.cwd);
  const vm = new Jsonnet();
  if (options.maxStack !== undefined) vm.setMaxStack(options.maxStack);
  if (options.stringOutput) vm.stringOutput(true);
  for (const [k, v] of Object.entries(options.extVars ?? {})) {
    if (v.kind === 'code') vm.extCode(k, v.value);
    else vm.extString(k, v.value);
  }
  for (const [k, v] of Object.entries(options.tlaVars ?? {})) {
    if (v.kind === 'code') vm.tlaCode(k, v.value);
    else vm.tlaString(k, v.value);
  }
  // addJpath: "paths added more recently take precedence", as with the CLI's -J.
  for (const dir of options.jpaths ?? []) vm.addJpath(dir);
  try {
    return await vm.evaluateSnippet(code, options.filename ?? '<cmdline>');
  } catch (err) {
    throw new EngineError(err instanceof Error ? err.message : String(err));
  }
}

const sluice = new SluiceEngine();

async function handle(request: ChildRequest): Promise<ChildResponse> {
  try {
    const output =
      request.engine === 'libjsonnet'
        ? await evaluateLibjsonnet(request.code, request.options)
        : await sluice.evaluate(request.code, { ...request.options, trace: (text) => process.stderr.write(text) });
    return { id: request.id, ok: true, output };
  } catch (err) {
    if (err instanceof EngineError) return { id: request.id, ok: false, error: err.message, internal: err.internal };
    const detail = err instanceof Error ? (err.stack ?? err.message) : String(err);
    return { id: request.id, ok: false, error: `INTERNAL ERROR: ${detail}`, internal: true };
  }
}

let chain: Promise<void> = Promise.resolve();
process.on('message', (request: ChildRequest) => {
  chain = chain.then(async () => {
    const response = await handle(request);
    // stderr writes to a pipe are synchronous: the marker follows the evaluation's traces.
    process.stderr.write(endMarker(request.id));
    process.send?.(response);
  });
});
process.on('disconnect', () => process.exit(0));
