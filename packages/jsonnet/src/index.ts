/**
 * Sluice's Jsonnet implementation (libjsonnet 0.20 semantics): lexer → parser → compilation to
 * JavaScript closures over slot environments (no AST walking at run time) → lazy evaluation
 * (call-by-need thunks, layered objects with self/super and per-object field caches). The
 * builtins of libjsonnet's vm.cpp are native (builtins.ts), hot std.jsonnet functions too
 * (same results and error texts; odd inputs fall back to std.jsonnet), the rest of the standard
 * library comes from the vendored std.jsonnet, parsed once per process.
 *
 *   const p = compile('{a: std.extVar("x") + 1}', { extVars: { x: { kind: 'code', value: '1' } } });
 *   p.evaluate();                                   // { a: 2 }
 *   p.evaluate({ x: { kind: 'code', value: '2' } }); // { a: 3 }: compile once, evaluate many times
 *   evaluateToString(code, options)                 // the text the `jsonnet` CLI prints
 *
 * Template globals: `compile(code, { globals: { Body: nativeFunction(['path'], fn) } })` binds
 * top-level variables once (natives reading per-record state kept by the caller: fastest), or
 * `globals: ['x']` with per-evaluation values (`p.evaluate(undefined, { x: 1 })`).
 * Errors are JsonnetError whose message is libjsonnet's text (first line `RUNTIME ERROR: …` or
 * `STATIC ERROR: …`, then the stack trace, final newline). Limits: `maxStack` (500 frames, as
 * libjsonnet counts them), `timeoutMs`, `maxArrayLength`, `maxStringLength` and
 * `maxAllocationBytes` (limits.ts; defaults in DEFAULT_LIMITS); imports only through
 * `importCallback`.
 * Evaluation is synchronous; a native may start another evaluation (its limits are restored after).
 */
import { fromJson, makeBuiltins } from './builtins.js';
import { Compiler, CompileHooks } from './compile.js';
import { JsonnetError, Loc, RuntimeError, StaticError } from './errors.js';
import {
  CLI_LIMIT_NAMES, DEFAULT_LIMITS, LimitError, beginEvaluation, endEvaluation,
  type JsonnetLimits, type LimitNames, type LimitOptions,
} from './limits.js';
import { escapeJsonStringBody, manifestJson, manifestJsonCompact, type Json } from './manifest.js';
import { parse } from './parser.js';
import { STD_JSONNET } from './stdlib/std-source.js';
import {
  Code, Env, JFunc, JObject, Lazy, Thunk, Val, callFunction, checkNumber, extendObject, force, materialize,
  objectField, objectFieldFrom, simpleObject, stackState, typeName, withLoc,
} from './values.js';

export { JsonnetError, StaticError, RuntimeError, LimitError, DEFAULT_LIMITS, CLI_LIMIT_NAMES };
export type { JsonnetLimits, LimitNames, LimitOptions };

export interface ExtVar {
  kind: 'string' | 'code';
  value: string;
}

export interface CompileOptions extends LimitOptions {
  filename?: string;
  extVars?: Record<string, ExtVar>;
  tlaVars?: Record<string, ExtVar>;
  /** Maximum depth of Jsonnet function calls (libjsonnet default 500). */
  maxStack?: number;
  /**
   * Limits of each evaluation (limits.ts), each defaulting to DEFAULT_LIMITS (no time budget),
   * and the settings that change them as their errors name them (default: the CLI's flags).
   */
  /** Resolves imports; without it, every import fails. */
  importCallback?: (base: string, rel: string) => { path: string; content: string; bytes?: Uint8Array } | undefined;
  /** Native functions for std.native(name); called with materialised JSON arguments. */
  nativeCallbacks?: Record<string, { params: string[]; fn: (...args: Json[]) => Json }>;
  /** Where std.trace writes (default: stderr). */
  traceOut?: (line: string) => void;
  /**
   * evaluateToString() as `jsonnet -S`: the result must be a string (else `RUNTIME ERROR:
   * expected string result, got: <type>`), written as is with a final newline.
   */
  stringOutput?: boolean;
  /**
   * Extra top-level variables of the program (e.g. template globals): either names whose values
   * are given to each evaluation (`evaluate(extVars, globals)`; unbound ones are null), or
   * values bound once (natives that read per-record state kept outside, the fastest), which an
   * evaluation may still override.
   */
  globals?: string[] | Record<string, GlobalValue>;
}

/** A value for a global: plain JSON, or a native function made with `nativeFunction`. */
export type GlobalValue = Json | NativeFunction;

/** A JavaScript function callable from Jsonnet; arguments are materialised to JSON. */
export class NativeFunction {
  constructor(
    readonly params: string[],
    readonly fn: (...args: Json[]) => Json,
    /** Default values of trailing parameters (undefined = required). */
    readonly defaults: (Json | undefined)[] = [],
  ) {}
}

export function nativeFunction(params: string[], fn: (...args: Json[]) => Json, defaults: (Json | undefined)[] = []): NativeFunction {
  return new NativeFunction(params, fn, defaults);
}

const nativeCache = new WeakMap<NativeFunction, JFunc>();

function globalToVal(g: GlobalValue): Val {
  if (g instanceof NativeFunction) {
    let f = nativeCache.get(g);
    if (!f) {
      const fn = g.fn;
      f = new JFunc(g.params, g.params.map(() => null), null, null, (args, loc) => {
        let js: Json[];
        let r: Json;
        try {
          js = args.map((a) => materialize(a));
        } catch (e) {
          throw e instanceof RuntimeError ? e.at(loc) : e;
        }
        try {
          r = fn(...js);
        } catch (e) {
          if (e instanceof JsonnetError) throw e;
          throw withLoc(new RuntimeError(e instanceof Error ? e.message : String(e)), loc);
        }
        return fromJson(r);
      }, 'native');
      if (g.defaults.length) f.nativeDefaults = g.params.map((_, i) => (g.defaults[i] === undefined ? undefined : fromJson(g.defaults[i]!)));
      nativeCache.set(g, f);
    }
    return f;
  }
  return fromJson(g);
}

// ---------------------------------------------------------------------------------------------
// The standard library source, parsed once per process.

let stdCode: Code | null = null;

function stdlibCode(hooks: CompileHooks): Code {
  if (!stdCode) {
    const ast = parse('std.jsonnet', STD_JSONNET);
    stdCode = new Compiler(hooks, 'std.jsonnet').compileRoot(ast, []);
  }
  return stdCode;
}

function dirName(filename: string): string {
  const i = filename.lastIndexOf('/');
  return i < 0 ? '' : filename.slice(0, i + 1);
}

/** Shared state of one compiled program (and the files it imports). */
class Runtime implements CompileHooks {
  stdBase: JObject;
  private readonly stdCache = new Map<string, JObject>();
  private readonly importCache = new Map<string, { content: string; bytes?: Uint8Array; value?: Val; code?: Code }>();
  private readonly extCache = new Map<string, Val>();
  extVars: Record<string, ExtVar>;

  constructor(readonly options: CompileOptions) {
    this.extVars = options.extVars ?? {};
    const base = stdlibCode(this)(new Env([], null, null, 0)) as JObject;
    const builtins = makeBuiltins({
      stdJsonnet: (name) => objectFieldFrom(this.stdBase, name, 0) ?? null,
      extVar: (name, loc) => this.extVar(name, loc),
      nativeCallback: (name) => this.nativeCallback(name),
      trace: (msg, loc) => {
        const line = `TRACE: ${loc?.file ?? ''}:${loc?.line ?? 0} ${msg}`;
        if (options.traceOut) options.traceOut(line);
        else process.stderr.write(line + '\n');
      },
    });
    this.stdBase = extendObject(base, simpleObject(builtins, 1));
  }

  std(file: string): JObject {
    let s = this.stdCache.get(file);
    if (!s) {
      s = extendObject(this.stdBase, simpleObject({ thisFile: file }, 1));
      this.stdCache.set(file, s);
    }
    return s;
  }

  compileFile(file: string, code: string, globals: string[] = []): Code {
    const ast = parse(file, code);
    return new Compiler(this, file).compileRoot(ast, ['std', ...globals]);
  }

  run(code: Code, file: string, globals: Lazy[] = []): Val {
    return code(new Env([this.std(file), ...globals], null, null, 0));
  }

  extVar(name: string, loc?: Loc): Val {
    const cached = this.extCache.get(name);
    if (cached !== undefined) return cached;
    const ev = Object.prototype.hasOwnProperty.call(this.extVars, name) ? this.extVars[name] : undefined;
    if (!ev) throw withLoc(new RuntimeError(`undefined external variable: ${name}`), loc);
    let v: Val;
    if (ev.kind === 'string') v = ev.value;
    else {
      const file = `<extvar:${name}>`;
      v = this.run(this.compileFile(file, ev.value), file);
    }
    this.extCache.set(name, v);
    return v;
  }

  resetExtVars(extVars: Record<string, ExtVar>): void {
    this.extVars = extVars;
    this.extCache.clear();
  }

  nativeCallback(name: string): Val {
    const cb = this.options.nativeCallbacks?.[name];
    if (!cb) return null;
    return new JFunc(cb.params, cb.params.map(() => null), null, null, (args, loc) => {
      const js = args.map((a) => {
        if (a !== null && typeof a === 'object') throw withLoc(new RuntimeError('native extensions can only take primitives.'), loc);
        return a as Json;
      });
      let r: Json;
      try {
        r = cb.fn(...js);
      } catch (e) {
        throw withLoc(new RuntimeError(e instanceof Error ? e.message : String(e)), loc);
      }
      return fromJson(r);
    }, name);
  }

  percent(a: Val, b: Val, loc: Loc): Val {
    if (typeof a === 'number' && typeof b === 'number') {
      if (b === 0) throw withLoc(new RuntimeError('division by zero.'), loc);
      return checkNumber(a % b, loc);
    }
    if (typeof a === 'string') return this.callStd('format', [a, b], loc);
    throw withLoc(new RuntimeError(`Operator % cannot be used on types ${typeName(a)} and ${typeName(b)}.`), loc);
  }

  slice(target: Val, from: Val, to: Val, step: Val, loc: Loc): Val {
    return this.callStd('slice', [target, from, to, step], loc);
  }

  callStd(name: string, args: Lazy[], loc: Loc): Val {
    return callFunction(objectField(this.stdBase, name), args, null, loc);
  }

  importFile(kind: 'import' | 'importstr' | 'importbin', rel: string, from: string, loc: Loc): Val {
    if (rel === '') throw withLoc(new RuntimeError(`couldn't open import "": the empty string is not a valid filename`), loc);
    const cb = this.options.importCallback;
    const found = cb ? cb(dirName(from), rel) : undefined;
    if (!found) {
      throw withLoc(new RuntimeError(`couldn't open import "${escapeJsonStringBody(rel)}": no match locally or in the Jsonnet library paths.`), loc);
    }
    let entry = this.importCache.get(found.path);
    if (!entry) {
      entry = { content: found.content, bytes: found.bytes };
      this.importCache.set(found.path, entry);
    }
    if (kind === 'importstr') return entry.content;
    if (kind === 'importbin') return Array.from(entry.bytes ?? Buffer.from(entry.content, 'utf8'));
    if (entry.value === undefined) {
      entry.code ??= this.compileFile(found.path, entry.content);
      entry.value = new Thunk(entry.code, new Env([this.std(found.path)], null, null, 0)).get();
    }
    return entry.value;
  }
}


function normalizeError(e: unknown): unknown {
  if (e instanceof JsonnetError) return e;
  if (e instanceof RangeError) return new RuntimeError(/call stack/i.test(e.message) ? 'max stack frames exceeded.' : e.message);
  return e;
}

/** A compiled Jsonnet program. */
export class Program {
  private readonly rt: Runtime;
  private readonly code: Code;
  private readonly filename: string;

  constructor(source: string, private readonly options: CompileOptions = {}) {
    this.filename = options.filename ?? '<cmdline>';
    this.rt = new Runtime(options);
    const g = options.globals ?? [];
    this.globalNames = Array.isArray(g) ? g : Object.keys(g);
    this.globalDefaults = this.globalNames.map((n) => (Array.isArray(g) ? null : globalToVal(g[n])));
    this.code = this.rt.compileFile(this.filename, source, this.globalNames);
    this.limits = {
      maxArrayLength: options.maxArrayLength ?? DEFAULT_LIMITS.maxArrayLength,
      maxStringLength: options.maxStringLength ?? DEFAULT_LIMITS.maxStringLength,
      maxAllocationBytes: options.maxAllocationBytes ?? DEFAULT_LIMITS.maxAllocationBytes,
      timeoutMs: options.timeoutMs ?? DEFAULT_LIMITS.timeoutMs,
    };
    this.limitNames = { ...CLI_LIMIT_NAMES, ...options.limitNames };
  }

  private readonly limits: JsonnetLimits;
  private readonly limitNames: LimitNames;

  private readonly globalNames: string[];
  private readonly globalDefaults: Lazy[];

  /** Evaluates to the Jsonnet value (not manifested). */
  private evalValue(extVars?: Record<string, ExtVar>, globals?: Record<string, GlobalValue>): Val {
    if (extVars) this.rt.resetExtVars(extVars);
    const gv: Lazy[] = globals
      ? this.globalNames.map((n, i) =>
          Object.prototype.hasOwnProperty.call(globals, n) ? globalToVal(globals[n]) : this.globalDefaults[i],
        )
      : this.globalDefaults;
    stackState.max = this.options.maxStack ?? 500;
    // libjsonnet's stack holds a few frames of its own below the program (calibrated: the
    // deepest recursion accepted is the same).
    stackState.depth = 4;
    let v = this.rt.run(this.code, this.filename, gv);
    if (v instanceof JFunc) {
      const named: { name: string; value: Lazy }[] = [];
      for (const [name, tv] of Object.entries(this.options.tlaVars ?? {})) {
        if (tv.kind === 'string') named.push({ name, value: tv.value });
        else {
          const file = `<top-level-arg:${name}>`;
          const code = this.rt.compileFile(file, tv.value);
          named.push({ name, value: new Thunk(code, new Env([this.rt.std(file)], null, null, 0)) });
        }
      }
      v = callFunction(v, [], named, undefined);
    }
    return v;
  }

  /** Evaluates and materialises to plain JSON. Throws JsonnetError. */
  evaluate(extVars?: Record<string, ExtVar>, globals?: Record<string, GlobalValue>): Json {
    return this.evaluateWith(extVars, globals, materialize);
  }

  /**
   * Evaluates to compact JSON text (manifestJsonCompact: what a template column writes), the
   * text too within the evaluation's limits. Throws JsonnetError.
   */
  evaluateCompact(extVars?: Record<string, ExtVar>, globals?: Record<string, GlobalValue>): string {
    return this.evaluateWith(extVars, globals, compactText);
  }

  /**
   * Evaluates, then `manifest`s the value; errors of the manifestation get libjsonnet's
   * `During manifestation` frame.
   */
  private evaluateWith<T>(extVars: Record<string, ExtVar> | undefined, globals: Record<string, GlobalValue> | undefined, manifest: (v: Val) => T): T {
    // Saved and restored so that a native called by another evaluation may evaluate too.
    const { depth, max } = stackState;
    const outer = beginEvaluation(this.limits, this.limitNames);
    try {
      let v: Val;
      try {
        v = this.evalValue(extVars, globals);
      } catch (e) {
        throw normalizeError(e);
      }
      try {
        return manifest(v);
      } catch (e) {
        const n = normalizeError(e);
        if (n instanceof RuntimeError) n.push('During manifestation');
        throw n;
      }
    } finally {
      stackState.depth = depth;
      stackState.max = max;
      endEvaluation(outer);
    }
  }

  /**
   * Evaluates and manifests as the `jsonnet` CLI prints it (3-space indent, final newline); with
   * the `stringOutput` option as `jsonnet -S` does: the string itself.
   */
  evaluateToString(extVars?: Record<string, ExtVar>, globals?: Record<string, GlobalValue>): string {
    // The text within the evaluation's limits too.
    if (!this.options.stringOutput) return this.evaluateWith(extVars, globals, (v) => manifestJson(materialize(v), '   ') + '\n');
    return this.evaluateWith(extVars, globals, (v) => {
      // libjsonnet checks the type before anything inside the value is evaluated.
      if (typeof v !== 'string') throw new RuntimeError(`expected string result, got: ${typeName(v)}`);
      return `${v}\n`;
    });
  }
}

function compactText(v: Val): string {
  return manifestJsonCompact(materialize(v));
}

export function compile(code: string, options: CompileOptions = {}): Program {
  return new Program(code, options);
}

export function evaluateToString(code: string, options: CompileOptions = {}): string {
  try {
    return compile(code, options).evaluateToString();
  } catch (e) {
    throw normalizeError(e);
  }
}

export function evaluate(code: string, options: CompileOptions = {}): Json {
  return compile(code, options).evaluate();
}

export type { Json };
export { force, typeName };

// ---------------------------------------------------------------------------------------------
// The rest of the package's public API (README.md): what an embedding program needs besides the
// compiler above. Import these from `@sluice/jsonnet`, never from a file of the package.

/** The V8 bounds a limit may not exceed (`--max-array-length`, `--max-string-length`). */
export { V8_MAX_ARRAY_LENGTH, V8_MAX_STRING_LENGTH } from './limits.js';
/** The syntax tree (a template's static checks walk it). */
export { parse } from './parser.js';
export type { Arg, Node } from './ast.js';
/** The engines behind the CLI's `--engine`: this compiler, or libjsonnet in child processes. */
export { ChildProcessEngine, ENGINE_NAMES, EngineError, LibjsonnetOracle, SluiceEngine, createEngine } from './engines.js';
export type { EngineName, EvaluateOptions, JsonnetEngine, LibjsonnetOracleOptions } from './engines.js';
/** The `jsonnet` command line (`sluice jsonnet`, `sluice-jsonnet`). */
export { JSONNET_USAGE, runJsonnetCli } from './cli.js';
export type { CliDeps, CliIo } from './cli.js';
/** The units the limit flags take: 1024-based byte sizes ("512MB") and Go durations ("30s"); Sluice's settings read the same. */
export { parseByteSize, parseDuration } from './units.js';
