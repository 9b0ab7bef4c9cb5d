/**
 * @sluice/generic-extractor: Keboola's Generic Extractor (`keboola.ex-generic-v2`) in
 * TypeScript. `runExtraction` reads a data folder's `config.json` (and `in/state.json`), pages
 * through the configured API and writes `out/tables/*.csv` with manifests and `out/state.json`.
 * This file is the package's public API: import from `@sluice/generic-extractor` only.
 */
export { runExtraction, summary } from './runner.js';
export type { ExtractionOptions, ExtractionResult, LogLevel, Progress } from './runner.js';
export { UserError } from './errors.js';
export type { Json, JsonObject } from './php.js';
/** The command line (`sluice extractor run`, `sluice-extractor run`). */
export { runExtractorCli } from './cli.js';
/** Building blocks the extraction wires together, for tests and tools that drive one part. */
export { HttpClient, type ConnectTo } from './http/http-client.js';
export { SshTunnel } from './http/ssh-tunnel.js';
export { parseSshProxy, type SshProxy } from './http/ssh-proxy.js';
