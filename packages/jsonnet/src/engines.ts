/**
 * Jsonnet engines behind `sluice jsonnet` and the conformance runner.
 *
 *   SluiceEngine     the project's compiler (`./index.js`), loaded on first use with a dynamic
 *                    import, evaluated in this process;
 *   LibjsonnetOracle libjsonnet 0.20 (@hanazuki/node-jsonnet) in child processes: some inputs
 *                    make libjsonnet abort the whole process (`std.parseYaml`), which must not
 *                    take the caller down. A child that dies or exceeds the time limit fails the
 *                    evaluation it was running and is replaced for the next one.
 *
 * Both take the same options and return the manifested text as the jsonnet CLI prints it
 * (3-space indent, trailing newline), or throw EngineError whose message is the error text as
 * libjsonnet prints it (`RUNTIME ERROR: ...` / `STATIC ERROR: ...`, then the stack lines).
 *
 * Files: `filename` is the name used in messages and the base of relative imports, exactly as
 * given (libjsonnet concatenates the importing file's directory and the import path, it does
 * not normalise). Relative names are read from `cwd` (default: the process's working directory).
 * Imports are looked up relative to the importing file first, then in `jpaths`, last one first
 * (the jsonnet CLI's "right-most wins").
 */
import { fork, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { isAbsolute, resolve } from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath, pathToFileURL } from 'node:url';
import type { LimitOptions } from './limits.js';

export interface ExtVar {
  kind: 'string' | 'code';
  value: string;
}

export interface EvaluateOptions {
  /** Name of the program in messages and the base of its relative imports. Default `<cmdline>`. */
  filename?: string;
  /** Directory relative file names are read from. Default: process.cwd(). */
  cwd?: string;
  extVars?: Record<string, ExtVar>;
  tlaVars?: Record<string, ExtVar>;
  /** Library search paths; later entries take precedence. */
  jpaths?: string[];
  /** Maximum stack depth (libjsonnet's default is 500). */
  maxStack?: number;
  /** The evaluation's limits (limits.ts; the Sluice compiler only: libjsonnet has none of them). */
  limits?: LimitOptions;
  /**
   * As `jsonnet -S`: the result must be a string, and the output is that string itself with a
   * final newline (`RUNTIME ERROR: expected string result, got: object` otherwise).
   */
  stringOutput?: boolean;
  /**
   * Receives what the evaluation writes on stderr: std.trace lines (`TRACE: file:line msg\n`).
   * Default: the process's stderr (child engines: their onStderr option).
   */
  trace?: (text: string) => void;
}

export interface JsonnetEngine {
  readonly name: EngineName;
  /** The manifested JSON text; throws EngineError. */
  evaluate(code: string, options: EvaluateOptions): Promise<string> | string;
  /** Releases child processes, if any. */
  close(): Promise<void> | void;
}

export type EngineName = 'sluice' | 'libjsonnet';
export const ENGINE_NAMES: readonly EngineName[] = ['sluice', 'libjsonnet'];

/**
 * An evaluation that failed. `message` is the whole error text. `internal` marks failures of the
 * engine itself (a bug, a crashed child, a timeout) rather than an error of the program.
 */
export class EngineError extends Error {
  constructor(
    message: string,
    readonly internal = false,
  ) {
    super(message);
    this.name = 'EngineError';
  }
}

export function createEngine(name: EngineName, options: LibjsonnetOracleOptions = {}): JsonnetEngine {
  return name === 'sluice' ? new SluiceEngine() : new LibjsonnetOracle(options);
}

// ---------------------------------------------------------------------------------------------
// Imports

/** The directory part of a file name as libjsonnet computes it: everything up to the last `/`. */
export function dirName(filename: string): string {
  const i = filename.lastIndexOf('/');
  return i < 0 ? '' : filename.slice(0, i + 1);
}

function withSlash(dir: string): string {
  return dir === '' || dir.endsWith('/') ? dir : `${dir}/`;
}

/**
 * Finds an import the way libjsonnet's default importer does: `base` (the importing file's
 * directory) + `rel`, then each library path, last one first. Returns the path as it will appear
 * in messages and the file's text, or undefined when nothing is found.
 */
export function resolveImport(
  base: string,
  rel: string,
  jpaths: readonly string[],
  cwd: string,
): { path: string; content: string; bytes: Uint8Array } | undefined {
  if (rel === '') return undefined;
  const candidates = isAbsolute(rel) ? [rel] : [withSlash(base) + rel, ...[...jpaths].reverse().map((d) => withSlash(d) + rel)];
  for (const candidate of candidates) {
    const abs = resolve(cwd, candidate);
    let bytes: Buffer;
    try {
      if (!statSync(abs).isFile()) continue;
      bytes = readFileSync(abs);
    } catch (err) {
      // Not there: next candidate. Anything else (a stack overflow of a recursive import) is not ours.
      if (typeof (err as NodeJS.ErrnoException).code === 'string') continue;
      throw err;
    }
    return { path: candidate, content: bytes.toString('utf8'), bytes };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// The Sluice compiler

/** What this module needs of `packages/jsonnet/src/index.ts`. */
interface CompilerModule {
  evaluateToString(
    code: string,
    options: LimitOptions & {
      filename?: string;
      extVars?: Record<string, ExtVar>;
      tlaVars?: Record<string, ExtVar>;
      importCallback?: (base: string, rel: string) => { path: string; content: string; bytes?: Uint8Array } | undefined;
      maxStack?: number;
      traceOut?: (line: string) => void;
      stringOutput?: boolean;
    },
  ): string;
  JsonnetError?: new (...args: never[]) => Error;
}

let compiler: Promise<CompilerModule> | undefined;

/** Loads the compiler; fails with an EngineError when it is missing or incomplete. */
export function loadCompiler(): Promise<CompilerModule> {
  // A computed specifier: the compiler is written in parallel and may not exist yet.
  const specifier = './index.js';
  compiler ??= (import(specifier) as Promise<Partial<CompilerModule>>).then(
    (mod) => {
      if (typeof mod.evaluateToString !== 'function') {
        throw new EngineError('the Sluice Jsonnet compiler (packages/jsonnet/src/index.ts) does not export evaluateToString()', true);
      }
      return mod as CompilerModule;
    },
    (err: unknown) => {
      throw new EngineError(`the Sluice Jsonnet compiler (packages/jsonnet/src/index.ts) cannot be loaded: ${describe(err)}`, true);
    },
  );
  return compiler;
}

function describe(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function isJsonnetError(mod: CompilerModule, err: unknown): err is Error {
  if (!(err instanceof Error)) return false;
  if (mod.JsonnetError && err instanceof mod.JsonnetError) return true;
  return /^(RUNTIME|STATIC) ERROR: /.test(err.message);
}

export class SluiceEngine implements JsonnetEngine {
  readonly name = 'sluice' as const;

  async evaluate(code: string, options: EvaluateOptions): Promise<string> {
    const mod = await loadCompiler();
    const cwd = options.cwd ?? process.cwd();
    const jpaths = options.jpaths ?? [];
    try {
      return mod.evaluateToString(code, {
        ...options.limits,
        filename: options.filename ?? '<cmdline>',
        extVars: options.extVars,
        tlaVars: options.tlaVars,
        importCallback: (base, rel) => resolveImport(base, rel, jpaths, cwd),
        maxStack: options.maxStack,
        traceOut: options.trace ? (line) => options.trace!(`${line}\n`) : undefined,
        stringOutput: options.stringOutput,
      });
    } catch (err) {
      if (isJsonnetError(mod, err)) throw new EngineError(err.message);
      const detail = err instanceof Error ? (err.stack ?? err.message) : String(err);
      throw new EngineError(`INTERNAL ERROR (Sluice compiler): ${detail}`, true);
    }
  }

  close(): void {}
}

// ---------------------------------------------------------------------------------------------
// libjsonnet in child processes

/** A request to the child (oracle-child.ts). */
export interface ChildRequest {
  id: number;
  engine: EngineName;
  code: string;
  options: EvaluateOptions;
}

/** The child's answer. */
export type ChildResponse = { id: number; ok: true; output: string } | { id: number; ok: false; error: string; internal?: boolean };

export interface LibjsonnetOracleOptions {
  /** Child processes evaluating in parallel. Default 1. */
  concurrency?: number;
  /** Time limit of one evaluation; the child is killed when it is exceeded. Default 60 s. */
  timeoutMs?: number;
  /** Receives what the children write on stderr outside an evaluation's `trace` option. Default: dropped. */
  onStderr?: (text: string) => void;
  /** Engine the children run. Default libjsonnet; `sluice` isolates the compiler the same way. */
  engine?: EngineName;
}

interface Pending {
  request: ChildRequest;
  trace: ((text: string) => void) | undefined;
  resolve: (output: string) => void;
  reject: (err: Error) => void;
}

/**
 * Written by the child on stderr after each evaluation, before its answer: what came on stderr
 * before it is that evaluation's output there (std.trace lines). Writes to a pipe are synchronous
 * in Node on Linux, and libjsonnet writes its traces before the evaluation completes.
 */
export function endMarker(id: number): string {
  return `\u0000sluice-end:${id}\u0000\n`;
}

/** The child entry: the compiled .js next to this file when built, else the .ts source through tsx. */
function childEntry(): { path: string; execArgv: string[] } {
  const js = fileURLToPath(new URL('./oracle-child.js', import.meta.url));
  if (existsSync(js)) return { path: js, execArgv: [] };
  // tsx is resolved from here: the child may start in any working directory.
  const tsx = pathToFileURL(createRequire(import.meta.url).resolve('tsx')).href;
  return { path: fileURLToPath(new URL('./oracle-child.ts', import.meta.url)), execArgv: ['--import', tsx] };
}

class Worker {
  private child: ChildProcess | undefined;
  private current: Pending | undefined;
  private timer: NodeJS.Timeout | undefined;
  /** The child's recent stderr, for the message when it dies. */
  private stderrTail = '';
  /** stderr of the current evaluation, until its end marker arrives. */
  private stderrBuf = '';
  private trace: string | undefined;
  private response: ChildResponse | undefined;

  constructor(private readonly owner: ChildProcessEngine) {}

  get busy(): boolean {
    return this.current !== undefined;
  }

  run(job: Pending): void {
    this.current = job;
    this.stderrTail = '';
    this.stderrBuf = '';
    this.trace = undefined;
    this.response = undefined;
    const child = this.child ?? this.start();
    this.timer = setTimeout(() => {
      this.child = undefined;
      child.kill('SIGKILL');
      this.fail(new EngineError(`INTERNAL ERROR: evaluation exceeded ${this.owner.timeoutMs} ms; the ${this.owner.name} process was killed`, true));
    }, this.owner.timeoutMs);
    child.send(job.request);
  }

  private start(): ChildProcess {
    const entry = childEntry();
    const child = fork(entry.path, [], {
      execArgv: entry.execArgv,
      stdio: ['ignore', 'ignore', 'pipe', 'ipc'],
      serialization: 'json',
    });
    this.child = child;
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      if (this.child !== child) return;
      this.stderrTail = (this.stderrTail + text).slice(-4000);
      const job = this.current;
      if (!job || this.trace !== undefined) {
        this.owner.onStderr?.(text);
        return;
      }
      this.stderrBuf += text;
      const marker = endMarker(job.request.id);
      const at = this.stderrBuf.indexOf(marker);
      if (at < 0) return;
      this.trace = this.stderrBuf.slice(0, at);
      const after = this.stderrBuf.slice(at + marker.length);
      this.stderrBuf = '';
      if (after) this.owner.onStderr?.(after);
      this.settle();
    });
    child.on('message', (msg: ChildResponse) => {
      const job = this.current;
      if (this.child !== child || !job || msg.id !== job.request.id) return;
      this.response = msg;
      this.settle();
    });
    // The last stderr output (libjsonnet's abort message) may arrive after 'exit': wait for
    // 'close', but not long (under tsx, esbuild's service process holds the pipe open).
    child.on('exit', (code, signal) => {
      if (this.child !== child) return; // killed on purpose (timeout, stop)
      this.child = undefined;
      afterClose(child, () => {
        // eslint-disable-next-line no-control-regex -- the end markers are NUL-delimited
        const tail = this.stderrTail.replace(/\u0000sluice-end:\d+\u0000\n/g, '').trim();
        this.fail(
          new EngineError(
            `INTERNAL ERROR: the ${this.owner.name} process died (${signal ?? `exit code ${code}`})${tail ? `: ${tail}` : ''}`,
            true,
          ),
        );
      });
    });
    child.on('error', (err) => {
      if (this.child !== child) return;
      this.child = undefined;
      child.kill('SIGKILL');
      this.fail(new EngineError(`INTERNAL ERROR: ${err.message}`, true));
    });
    return child;
  }

  /** Settles the current evaluation once both its answer and its stderr are in. */
  private settle(): void {
    const job = this.current;
    const msg = this.response;
    if (!job || !msg || this.trace === undefined) return;
    if (this.trace !== '') (job.trace ?? this.owner.onStderr)?.(this.trace);
    if (msg.ok) this.finish(() => job.resolve(msg.output));
    else this.finish(() => job.reject(new EngineError(msg.error, msg.internal ?? false)));
  }

  private finish(settle: () => void): void {
    clearTimeout(this.timer);
    this.current = undefined;
    settle();
    this.owner.next();
  }

  private fail(err: EngineError): void {
    const job = this.current;
    if (!job) return;
    this.finish(() => job.reject(err));
  }

  /** Ends the child gracefully (it exits when the IPC channel closes), so its stderr is drained. */
  stop(): Promise<void> {
    const child = this.child;
    this.child = undefined;
    this.fail(new EngineError('INTERNAL ERROR: engine closed', true));
    if (!child || child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
    return new Promise((done) => {
      const force = setTimeout(() => child.kill('SIGKILL'), 2_000);
      child.once('exit', () => {
        clearTimeout(force);
        afterClose(child, done);
      });
      if (child.connected) child.disconnect();
      else child.kill('SIGKILL');
    });
  }
}

/** Calls `then` when the child's stdio is closed, or 100 ms after it exited, whichever is first. */
function afterClose(child: ChildProcess, then: () => void): void {
  let called = false;
  const once = () => {
    if (called) return;
    called = true;
    clearTimeout(timer);
    then();
  };
  const timer = setTimeout(once, 100);
  child.once('close', once);
}

/** An engine evaluated in child processes, one evaluation per child at a time. */
export class ChildProcessEngine implements JsonnetEngine {
  readonly name: EngineName;
  readonly timeoutMs: number;
  readonly onStderr: ((text: string) => void) | undefined;
  private readonly workers: Worker[];
  private readonly queue: Pending[] = [];
  private nextId = 1;

  constructor(options: LibjsonnetOracleOptions = {}) {
    this.name = options.engine ?? 'libjsonnet';
    this.timeoutMs = options.timeoutMs ?? 60_000;
    this.onStderr = options.onStderr;
    this.workers = Array.from({ length: Math.max(1, options.concurrency ?? 1) }, () => new Worker(this));
  }

  evaluate(code: string, options: EvaluateOptions): Promise<string> {
    return new Promise((resolvePromise, reject) => {
      const { trace, ...rest } = options;
      const request: ChildRequest = { id: this.nextId++, engine: this.name, code, options: { ...rest, cwd: options.cwd ?? process.cwd() } };
      this.queue.push({ request, trace, resolve: resolvePromise, reject });
      this.next();
    });
  }

  /** Hands queued evaluations to idle workers. */
  next(): void {
    for (const worker of this.workers) {
      if (this.queue.length === 0) return;
      if (!worker.busy) worker.run(this.queue.shift()!);
    }
  }

  async close(): Promise<void> {
    for (const job of this.queue.splice(0)) job.reject(new EngineError('INTERNAL ERROR: engine closed', true));
    await Promise.all(this.workers.map((w) => w.stop()));
  }
}

/** libjsonnet 0.20 through @hanazuki/node-jsonnet, in child processes. */
export class LibjsonnetOracle extends ChildProcessEngine {
  constructor(options: Omit<LibjsonnetOracleOptions, 'engine'> = {}) {
    super({ ...options, engine: 'libjsonnet' });
  }
}
