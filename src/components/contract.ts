/**
 * The contract between the job queue and a component (Keboola's "common interface"):
 *
 * - The queue prepares a job data directory `<dataDir>/jobs/<jobId>/` holding `config.json`
 *   (the configuration after variables were resolved: `{"parameters": ..., "storage": ..., ...}`)
 *   and, when the component kept state, `in/state.json`. In both files the `#` values are
 *   encrypted, as the API answers them: the component gets them decrypted in `ctx.config` and
 *   `ctx.state`, which exist only in its process (a secret is never written to a file).
 * - The component runs in a worker (thread or child process, never on the API's event loop),
 *   reads `ctx.config`, and writes its output tables as `out/tables/<name>.csv` (header row,
 *   RFC 4180) with an optional `out/tables/<name>.csv.manifest` or `out/tables/<name>.manifest`
 *   (`{"destination":"in.c-<bucket>.<table>","incremental":<bool>,"primary_key":[...]}`),
 *   and may write `out/state.json` (the queue stores its `#` values encrypted).
 * - Progress lines go through `log`; they become the job's events in `GET /v2/storage/events`.
 * - After `run` resolves, the queue loads every output table into the storage table its manifest
 *   names (incremental or full load), then the job ends `success` with `message` as
 *   `result.message`. A thrown `UserError` ends the job `error` with its message; any other
 *   exception ends it `error` as an application error.
 */
export interface ComponentContext {
  /** The job data directory: `config.json` in it, `out/tables/` to write to. */
  dataDir: string;
  /** The configuration (as `config.json`) with its `#` values decrypted. */
  config: Record<string, unknown>;
  /** The state of the previous run (as `in/state.json`, `{}` when none) with its `#` values decrypted. */
  state: Record<string, unknown>;
  /** A progress line for the job log (level info unless told). */
  log(message: string, level?: 'info' | 'warning' | 'error'): void;
  /** Aborted when the job is killed; long loops must check it. */
  signal: AbortSignal;
}

export interface ComponentResult {
  /** Shown as the job's `result.message`; defaults to "Component finished". */
  message?: string;
  /** What the component did, for the node's metrics (the generic extractor: pages and items). */
  counters?: { pages?: number; items?: number };
}

export interface Component {
  /** Component id as in the Storage API, e.g. `keboola.ex-generic-v2`. */
  id: string;
  run(ctx: ComponentContext): Promise<ComponentResult>;
}

/** An error caused by the configuration or the remote side, shown to the user as is. */
export class UserError extends Error {
  override name = 'UserError';
}
