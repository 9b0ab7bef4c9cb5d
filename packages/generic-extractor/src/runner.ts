/**
 * The extraction: for every job, page through the API with the job's scroller;
 * per page drop a response equal to the previous one (and stop), locate and filter the data,
 * analyse it into the JSON parser, run the child jobs for its items, then ask the scroller for
 * the next request. At the end write every table with its manifest.
 *
 * The log stays readable with many child jobs: lines that every child job writes (its stop
 * reason, an empty data field, retries) are shown for the first few, then summarised in one
 * line per kind when the top-level job ends; the stop reasons of the result likewise.
 */
import { signedHeaders } from './auth/aws-signature.js';
import { SshTunnel } from './http/ssh-tunnel.js';
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { UserError } from './errors.js';
import { fillEndpoint, mergeParentParams, parentColumns, resolvePlaceholders, type PlaceholderValue } from './child-jobs/children.js';
import { expandIterations, parseConfig, type ExtractorConfig, type JobConfig } from './config/config.js';
import { readState, stateStructure, stateTime, writeState } from './config/state.js';
import { parseDataField } from './response/data-path.js';
import { locatePageData, type DataFind } from './response/page-data.js';
import { HttpClient, tlsSettings, type ConnectTo } from './http/http-client.js';
import { lineShape, RepeatedLines } from './log-summary.js';
import { JsonParserError } from './output/json-parser.js';
import { ResultCollector } from './output/results.js';
import type { WrittenTable } from './output/output.js';
import { PageSpool } from './output/page-spool.js';
import { createScroller, hasPagesBound, selectScroller } from './pagination/pagination.js';
import { isObject, phpEmpty, type Json, type JsonObject } from './php.js';
import { compileRecursionFilter } from './child-jobs/recursion-filter.js';
import { prepareRequest, type JobRequestConfig, type RequestDefaults } from './http/request.js';
import { createAuthenticator, type Authenticator } from './auth/auth.js';
import { buildValues, type FunctionContexts } from './config/functions.js';
import type { Scroller } from './pagination/scrollers.js';

export type LogLevel = 'info' | 'warning' | 'error';

export interface Progress {
  pages: number;
  items: number;
  bytes: number;
}

export interface ExtractionOptions {
  dataDir: string;
  /** The configuration; default: `dataDir/config.json` (the job queue hands it over decrypted). */
  config?: unknown;
  /** The previous run's state; default: `dataDir/in/state.json`. */
  state?: JsonObject;
  log: (message: string, level?: LogLevel) => void;
  signal?: AbortSignal;
  onProgress?: (p: Progress) => void;
  /** First retry delay in ms (tests and the conformance runner shorten it). */
  backoffBaseMs?: number;
  /**
   * The clock, in ms since the epoch (default Date.now): `time.currentStart`, the user
   * functions time/date/strtotime, login expiry, OAuth timestamps and forceStop.time read it.
   */
  now?: () => number;
  /** The random source (default crypto.randomBytes): OAuth nonces. */
  random?: (bytes: number) => Buffer;
  /** Where hosts are really reached (the conformance runner maps `mock-server` to its mock). */
  connectTo?: ConnectTo;
}

export interface ExtractionResult extends Progress {
  tables: WrittenTable[];
  stopReasons: string[];
}

/** The one-line summary of an extraction (the CLI's last line, a job's result message). */
export function summary(r: { pages: number; items: number; tables: { file: string }[] }): string {
  return `Extracted ${counted(r.items, 'item')} from ${counted(r.pages, 'page')} into ${counted(r.tables.length, 'table')}`;
}

/** "1 row", "2 rows". */
export function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

interface Shared {
  config: ExtractorConfig;
  client: HttpClient;
  results: ResultCollector;
  defaults: RequestDefaults;
  progress: Progress;
  stopReasons: string[];
  log: (message: string, level?: LogLevel) => void;
  /** Lines that repeat per child job or request: the first few shown, then summarised. */
  repeated: RepeatedLines;
  /** Stop reasons of child jobs by kind: index in stopReasons, count, the first one's text. */
  stopKinds: Map<string, { index: number; count: number; text: string }>;
  now: () => number;
  onProgress?: (p: Progress) => void;
  signal?: AbortSignal;
  pagesBound: number | null;
  jobCounter: number;
  auth: Authenticator;
  /** Contexts of user functions in job parameters and userData (attr, time). */
  contexts: FunctionContexts;
}

/**
 * The reference compares sha1(serialize(response)) of consecutive pages: equal values with keys
 * in the same order. A direct comparison gives the same answer and stops at the first
 * difference (usually the first item), instead of hashing every page whole.
 */
export function sameResponse(a: Json | undefined, b: Json): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as Json[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!sameResponse(a[i], bb[i])) return false;
    return true;
  }
  const ka = Object.keys(a);
  const kb = Object.keys(b);
  if (ka.length !== kb.length) return false;
  for (let i = 0; i < ka.length; i++) {
    if (ka[i] !== kb[i] || !sameResponse((a as JsonObject)[ka[i]], (b as JsonObject)[kb[i]])) return false;
  }
  return true;
}

/** One job instance: a top-level job or a child job for one parent item. */
class JobRun {
  private readonly id: string;

  constructor(
    private readonly shared: Shared,
    private readonly job: JobConfig,
    private readonly scroller: Scroller,
    private readonly parentResults: Json[],
    private readonly parentParams: PlaceholderValue[],
    private readonly userParentId: JsonObject | null,
  ) {
    this.id = `${job.endpoint}#${++shared.jobCounter}`;
  }

  private parentId(): JsonObject | null {
    let jobUserData: JsonObject = {};
    if (!phpEmpty(this.job.userData)) {
      jobUserData = isObject(this.job.userData) ? this.job.userData : { job_parent_id: this.job.userData as Json };
    }
    const merged = { ...(this.userParentId ?? {}), ...jobUserData };
    return Object.keys(merged).length === 0 ? null : buildValues(merged, this.shared.contexts, { now: this.shared.now });
  }

  /** A child job: one of possibly many runs of the same child configuration. */
  private get isChild(): boolean {
    return this.parentResults.length > 0;
  }

  /**
   * A log line of this job. A child job's lines are grouped by their shape (its endpoint's
   * template, numbers left out): the first few are shown, the rest summarised.
   */
  private logLine(endpoint: string, message: string, level: LogLevel = 'info'): void {
    if (!this.isChild) return this.shared.log(message, level);
    const shape = lineShape(message.split(endpoint).join(this.job.endpoint));
    this.shared.repeated.line(`child\u0000${level}\u0000${shape}`, message, level, `child jobs of '${this.job.endpoint}'`);
  }

  /** Records why the job stopped (child jobs alike are counted into one entry) and logs it. */
  private stopped(endpoint: string, dataType: string, reason: string, logged: string, level: LogLevel = 'info'): void {
    const { shared } = this;
    const entry = `${dataType}: ${reason}`;
    if (this.isChild) {
      const kind = `${dataType}\u0000${lineShape(reason.split(endpoint).join(this.job.endpoint))}`;
      const seen = shared.stopKinds.get(kind);
      if (seen) {
        seen.count++;
        shared.stopReasons[seen.index] = `${seen.text} (and ${seen.count - 1} more child jobs alike)`;
      } else {
        shared.stopKinds.set(kind, { index: shared.stopReasons.length, count: 1, text: entry });
        shared.stopReasons.push(entry);
      }
    } else {
      shared.stopReasons.push(entry);
    }
    this.logLine(endpoint, logged, level);
  }

  async run(): Promise<void> {
    const { shared, job } = this;
    const endpoint = fillEndpoint(job.endpoint, this.parentParams);
    const params = buildValues(structuredClone(job.params), shared.contexts, { now: shared.now });
    const config: JobRequestConfig = { endpoint, params, method: job.method, id: this.id };
    const dataType = job.dataType ?? job.endpoint;
    const dataField = parseDataField(job.dataField);
    const parentCols = { ...(this.parentId() ?? {}), ...parentColumns(this.parentParams) };
    selectScroller(this.scroller, job.scroller);
    this.scroller.onStop = (reason) => this.stopped(endpoint, dataType, reason, `Job '${endpoint}': ${reason}`);

    const find: DataFind = {
      dataField,
      endpoint,
      responseFilter: job.responseFilter,
      responseFilterDelimiter: job.responseFilterDelimiter,
      compatLevel: shared.config.compatLevel,
      // The legacy parser leaves PHP's serialize_precision at its default (-1).
      precision: shared.results.structVersion === 2 ? -1 : 17,
    };
    let request = this.scroller.first(config);
    let previous: Json | undefined;
    let pages = 0;
    while (request !== null) {
      if (shared.signal?.aborted) throw new UserError('Extraction aborted');
      const prepared = await shared.auth.apply(prepareRequest(request, shared.defaults));
      let downloaded;
      try {
        downloaded = await shared.client.download(prepared);
      } catch (err) {
        // Seed, Errors 1: an API that answers an error for a page past the last one needs
        // another stopping condition; say so instead of only reporting the failed request.
        if (err instanceof UserError && pages > 0 && /API request failed: \[4\d\d\]/.test(err.message)) {
          throw new UserError(
            `${err.message} (after ${pages} page(s) of '${endpoint}'. If the API answers an error for a page past the last one, ` +
              'configure a stopping condition that ends paging before it: pagination.nextPageFlag, forceStop or limitStop.)',
          );
        }
        throw err;
      }
      const { body, bytes, raw } = downloaded;
      pages++;
      shared.progress.pages++;
      shared.progress.bytes += bytes;

      if (pages > 1 && sameResponse(previous, body)) {
        const reason = `Job '${endpoint}' finished when last response matched the previous!`;
        this.stopped(endpoint, dataType, reason, reason);
        this.scroller.reset();
        break;
      }
      const { data, warning } = locatePageData(body, find);
      if (warning) this.logLine(endpoint, warning, 'warning');
      shared.progress.items += data.length;
      shared.onProgress?.(shared.progress);
      try {
        if (!shared.results.process(data, dataType, Object.keys(parentCols).length > 0 ? parentCols : null, { raw, find }) && shared.config.debug) {
          this.logLine(endpoint, `No data returned in '${dataType}'`);
        }
      } catch (err) {
        if (err instanceof JsonParserError) throw new UserError(`Error parsing response JSON: ${err.message}`);
        throw err;
      }
      await this.runChildren(data);
      previous = body;

      if (shared.pagesBound !== null && pages >= shared.pagesBound) {
        const reason = `Stopped after ${pages} pages: the default bound (config.maxPages); set pagination.forceStop.pages or config.maxPages to change it.`;
        this.stopped(endpoint, dataType, reason, reason, 'warning');
        break;
      }
      request = this.scroller.next(config, body, data);
    }
  }

  private async runChildren(data: Json[]): Promise<void> {
    for (const child of this.job.children) {
      const filter = child.recursionFilter ? compileRecursionFilter(child.recursionFilter) : null;
      if (Object.keys(child.placeholders).length === 0) {
        const line = `No 'placeholders' set for '${child.endpoint}'`;
        this.shared.repeated.line(`placeholders\u0000${child.endpoint}`, line, 'warning', 'pages of its parent');
      }
      for (const item of data) {
        if (filter && !filter(item)) continue;
        const parentResults = [item, ...this.parentResults];
        // One reset clone of the parent's scroller serves all child jobs of one parent item.
        const scroller = this.scroller.clone();
        scroller.reset();
        for (const own of resolvePlaceholders(child.placeholders, parentResults, this.shared.now)) {
          const params = mergeParentParams(this.parentParams, own);
          await new JobRun(this.shared, child, scroller, parentResults, params, null).run();
        }
      }
    }
  }
}

export async function readConfigFile(dataDir: string): Promise<unknown> {
  const file = join(dataDir, 'config.json');
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw new UserError(`Cannot read ${file}: ${(err as Error).message}`);
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new UserError(`${file} is not valid JSON: ${(err as Error).message}`);
  }
}

function secretsOf(config: ExtractorConfig, raw: unknown): string[] {
  const secrets: string[] = [];
  const walk = (v: unknown, key = ''): void => {
    if (isObject(v)) for (const [k, x] of Object.entries(v)) walk(x, k);
    else if (Array.isArray(v)) v.forEach((x) => walk(x, key));
    else if (key.startsWith('#') && typeof v === 'string') secrets.push(v);
  };
  walk(raw);
  if (config.auth.type === 'basic') {
    secrets.push(config.auth.password, Buffer.from(`${config.auth.username}:${config.auth.password}`).toString('base64'));
  }
  return secrets.filter((s) => s.length > 0);
}

/** Runs the extraction of `dataDir/config.json` into `dataDir/out/tables`. */
export async function runExtraction(opts: ExtractionOptions): Promise<ExtractionResult> {
  const raw = opts.config ?? await readConfigFile(opts.dataDir);
  const state = opts.state ?? await readState(opts.dataDir);
  const now = opts.now ?? Date.now;
  const currentStart = Math.floor(now() / 1000);
  const time = stateTime(state, currentStart);
  const struct = stateStructure(state);

  const configs = expandIterations(raw).map((c) => parseConfig(c, { now }));
  // Pages wait on disk for the end of the run, not in memory.
  const spool = new PageSpool(opts.dataDir);
  try {
    return await extract(opts, raw, state, configs, currentStart, time, struct, spool);
  } finally {
    spool.close();
  }
}

async function extract(
  opts: ExtractionOptions,
  raw: unknown,
  state: JsonObject,
  configs: ExtractorConfig[],
  currentStart: number,
  time: Record<string, Json>,
  struct: ReturnType<typeof stateStructure>,
  spool: PageSpool,
): Promise<ExtractionResult> {
  const parsers = new Map<string, { results: ResultCollector; incremental: boolean }>();
  const progress: Progress = { pages: 0, items: 0, bytes: 0 };
  const stopReasons: string[] = [];
  for (const config of configs) {
    let entry = parsers.get(config.outputBucket);
    if (!entry) {
      const results = new ResultCollector({ warning: (m) => opts.log(m, 'warning') }, config.mappings, config.compatLevel, struct, spool);
      parsers.set(config.outputBucket, (entry = { results, incremental: config.incrementalOutput }));
    }
    entry.incremental = config.incrementalOutput;
    await runConfig(config, raw, entry.results, time, progress, stopReasons, opts);
  }

  const written: WrittenTable[] = [];
  const structs: { struct: JsonObject; version: 2 | 3 }[] = [];
  for (const [bucket, { results, incremental }] of parsers) {
    try {
      written.push(...(await results.write(join(opts.dataDir, 'out'), bucket, incremental)));
    } catch (err) {
      if (err instanceof JsonParserError) throw new UserError(`Error parsing response JSON: ${err.message}`);
      throw err;
    }
    structs.push({ struct: results.parser.dump(), version: results.structVersion });
  }
  await writeState(opts.dataDir, state, currentStart, structs[0]?.struct ?? {}, structs[0]?.version ?? 3);
  return { ...progress, tables: written, stopReasons };
}

/** Runs the jobs of one (iteration's) configuration into `parser`. */
async function runConfig(
  config: ExtractorConfig,
  raw: unknown,
  results: ResultCollector,
  time: Record<string, Json>,
  progress: Progress,
  stopReasons: string[],
  opts: ExtractionOptions,
): Promise<void> {
  const headers: Record<string, string> = { ...config.defaultHeaders, ...config.headers };
  if (config.auth.type === 'basic') {
    headers.Authorization = `Basic ${Buffer.from(`${config.auth.username}:${config.auth.password}`).toString('base64')}`;
  }
  const now = opts.now ?? Date.now;
  const repeated = new RepeatedLines(opts.log);
  // Through an SSH server: its own address may be mapped by opts.connectTo, the API's hosts are its to resolve.
  const tunnel = config.sshProxy && (await SshTunnel.open(config.sshProxy, opts.connectTo));
  try {
    const client = new HttpClient({
      retry: config.retry,
      timeoutMs: config.timeoutSeconds * 1000,
      ignoreErrors: config.ignoreErrors,
      debug: config.debug,
      secrets: secretsOf(config, raw),
      log: opts.log,
      logRepeated: (kind, message, level) => repeated.line(`http\u0000${kind}`, message, level, 'requests'),
      signal: opts.signal,
      backoffBaseMs: opts.backoffBaseMs,
      connectTo: tunnel ? tunnel.connectTo : opts.connectTo,
      tls: tlsSettings(config.caCertificate, config.clientCertificate),
      sign: config.aws && ((req) => signedHeaders(req, config.aws!, new Date(now()))),
    });
    const defaults: RequestDefaults = { baseUrl: config.baseUrl, defaultParams: config.defaultParams, headers };
    const shared: Shared = {
      config,
      client,
      results,
      defaults,
      progress,
      stopReasons,
      log: opts.log,
      repeated,
      stopKinds: new Map(),
      now,
      onProgress: opts.onProgress,
      signal: opts.signal,
      pagesBound: hasPagesBound(config.pagination) ? null : config.maxPages,
      jobCounter: 0,
      auth: createAuthenticator({ config, client, defaults, log: opts.log, now, random: opts.random ?? randomBytes }),
      contexts: { attr: config.attributes, time },
    };
    // Validate the pagination configuration before the first request.
    createScroller(config.pagination, now);
    // A scalar userData becomes the column `userData`, as in the reference.
    const userParentId = phpEmpty(config.userData) ? null : isObject(config.userData) ? config.userData : { userData: config.userData };
    try {
      for (const job of config.jobs) {
        // Every top-level job gets a fresh scroller: counters (forceStop.pages) are per job.
        try {
          await new JobRun(shared, job, createScroller(config.pagination, now), [], [], userParentId).run();
        } finally {
          // The summaries of what its child jobs and requests repeated, before the next job (or the error).
          repeated.flush();
        }
      }
    } finally {
      await client.close();
    }
  } finally {
    // Also when the configuration fails a check before the first request (pagination, authentication).
    await tunnel?.close();
  }
}
