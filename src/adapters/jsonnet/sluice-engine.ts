/**
 * The TemplateEngine port on Sluice's own Jsonnet compiler (@sluice/jsonnet): each template is
 * compiled once, with the seed's globals bound as native functions that read the record being
 * evaluated, and then evaluated per record synchronously, with no parsing and no thread hops.
 * A runaway template fails its record (stack depth, time budget, array and string lengths,
 * allocation: the limits of @sluice/jsonnet), never the process.
 */
import {
  compile, JsonnetError, nativeFunction, RuntimeError, StaticError, type Json, type LimitOptions, type Program,
} from '@sluice/jsonnet';
import { MappingError, type MappingErrorKind } from '../../pipeline/columns/errors.js';
import { toPlain } from '../../pipeline/columns/json.js';
import { cachedPath, type BodyPath } from '../../pipeline/columns/path.js';
import { bodyFormat } from '../../pipeline/columns/record-context.js';
import { DEFAULT_NOW_FORMAT, strftime } from '../../pipeline/columns/strftime.js';
import { canonicalHeaderKey } from '../../pipeline/headers.js';
import {
  TEMPLATE_LIMIT_FLAGS, TEMPLATE_TIMEOUT_MS, TemplateError, type CompiledTemplate, type RecordContext, type TemplateEngine,
} from '../../pipeline/template-engine.js';

/** The reference's "no default given" sentinel of Body() and Header(). */
const NO_DEFAULT = '<<~~errOnUndefined~~>>';
const FILE = '(snippet)';

/**
 * The limits of each evaluation (time budget default TEMPLATE_TIMEOUT_MS, the others the
 * compiler's defaults), their errors naming the server's flags unless told otherwise.
 */
export interface SluiceEngineOptions extends LimitOptions {
  /** Maximum Jsonnet call depth (default 500, as libjsonnet). */
  maxStack?: number;
}

/** A failure raised by a global, with its kind (the message alone loses it in the evaluator). */
class GlobalFailure extends Error {
  constructor(
    message: string,
    readonly kind: MappingErrorKind,
  ) {
    super(message);
  }
}

export class SluiceTemplateEngine implements TemplateEngine {
  /** The record the globals read; set for the duration of one synchronous evaluation. */
  private current: RecordContext | undefined;
  private lastFailure: GlobalFailure | undefined;
  private readonly checked = new Map<string, string | undefined>();
  /** Bodies as plain values for Body(), per record (shared by every template of the record). */
  private readonly plainBodies = new WeakMap<RecordContext, unknown>();
  private readonly globals: Record<string, ReturnType<typeof nativeFunction>>;

  constructor(private readonly options: SluiceEngineOptions = {}) {
    const fail = (message: string, kind: MappingErrorKind): never => {
      this.lastFailure = new GlobalFailure(message, kind);
      throw this.lastFailure;
    };
    const ctx = (): RecordContext => {
      if (!this.current) throw new Error('template global called outside an evaluation');
      return this.current;
    };
    const body = (): unknown => {
      const c = ctx();
      if (this.plainBodies.has(c)) return this.plainBodies.get(c);
      // A JSON body goes through the native parser (Jsonnet sees doubles and sorted keys either
      // way); anything else, and any JSON the native parser refuses, takes the exact parser,
      // which also words the errors as the reference does.
      let value: unknown;
      if (bodyFormat(c.header('Content-Type')) === 'json') {
        const text = c.bodyString();
        try {
          value = JSON.parse(text);
        } catch {
          value = undefined;
        }
        // A number beyond the double range is not a value Jsonnet can hold: the record fails, as
        // in the reference (only bodies with a large exponent can have one).
        if (value !== undefined && BIG_EXPONENT.test(text) && !allFinite(value)) {
          return fail('cannot parse request body: invalid JSON: number out of range', 'invalidBody');
        }
      }
      if (value === undefined) {
        try {
          value = toPlain(c.parsedBody());
        } catch (err) {
          if (err instanceof MappingError) return fail(err.reason, err.kind);
          throw err;
        }
      }
      this.plainBodies.set(c, value);
      return value;
    };
    /**
     * The value at a path: out of the body's member index when it has one (a few fields of a
     * large body without its whole tree) and no number that may be beyond the double range;
     * otherwise out of the whole body as body() reads it.
     */
    const bodyAt = (steps: BodyPath): Json | undefined => {
      const c = ctx();
      if (!this.plainBodies.has(c)) {
        const index = c.bodyIndex();
        if (index !== undefined && !index.largeExponent) {
          const found = index.valueAt(steps);
          return found === undefined ? undefined : (toPlain(found) as Json);
        }
      }
      return lookupPlain(body() as Json, steps);
    };
    this.globals = {
      Ip: nativeFunction([], () => ctx().record.ip),
      BodyStr: nativeFunction([], () => ctx().bodyString()),
      HeaderStr: nativeFunction([], () => ctx().headerStr()),
      Header: nativeFunction(['header', 'default'], (name, def) => {
        if (name === '' || name === null) return Object.fromEntries(ctx().headerEntries());
        const canonical = canonicalHeaderKey(String(name));
        const value = ctx().header(canonical);
        if (value !== undefined) return value;
        return def === NO_DEFAULT ? fail(`header "${canonical}" not found`, 'notFound') : def;
      }, ['', NO_DEFAULT]),
      Body: nativeFunction(['path', 'default'], (path, def) => {
        if (path === '' || path === null) return body() as Json;
        const found = bodyAt(cachedPath(String(path)));
        if (found !== undefined) return found;
        return def === NO_DEFAULT ? fail(`path "${String(path)}" not found in the body`, 'notFound') : def;
      }, ['', NO_DEFAULT]),
      Now: nativeFunction(['format'], (format) => {
        const c = ctx();
        if (format === DEFAULT_NOW_FORMAT) return c.datetime();
        try {
          return strftime(String(format), c.record.receivedAt);
        } catch (err) {
          return fail(err instanceof Error ? err.message : String(err), 'template');
        }
      }, [DEFAULT_NOW_FORMAT]),
    };
  }

  async check(content: string): Promise<string | undefined> {
    if (this.checked.has(content)) return this.checked.get(content);
    let result: string | undefined;
    try {
      this.program(content);
    } catch (err) {
      if (!(err instanceof StaticError)) throw err;
      result = goStaticError(err);
    }
    this.checked.set(content, result);
    return result;
  }

  async compile(content: string): Promise<CompiledTemplate> {
    let program: Program;
    try {
      program = this.program(content);
    } catch (err) {
      if (err instanceof StaticError) throw new TemplateError(goStaticError(err), 'invalid');
      throw err;
    }
    const evaluateSync = (record: RecordContext): string => this.evaluate(program, record);
    return { evaluate: async (record) => evaluateSync(record), evaluateSync };
  }

  private program(content: string): Program {
    return compile(content, {
      ...this.options,
      filename: FILE,
      globals: this.globals,
      maxStack: this.options.maxStack ?? 500,
      timeoutMs: this.options.timeoutMs ?? TEMPLATE_TIMEOUT_MS,
      limitNames: { ...TEMPLATE_LIMIT_FLAGS, ...this.options.limitNames },
    });
  }

  private evaluate(program: Program, record: RecordContext): string {
    this.current = record;
    this.lastFailure = undefined;
    try {
      return program.evaluateCompact();
    } catch (err) {
      if (err instanceof JsonnetError) {
        const failure = this.lastFailure as GlobalFailure | undefined;
        if (failure && err instanceof RuntimeError && err.msg === failure.message) throw new TemplateError(failure.message, failure.kind);
        throw new TemplateError(err instanceof RuntimeError ? err.msg : err.message.trim(), 'template');
      }
      throw err;
    } finally {
      this.current = undefined;
    }
  }
}

const BIG_EXPONENT = /[eE][+-]?0*\d{3,}/;

function allFinite(v: unknown): boolean {
  if (typeof v === 'number') return Number.isFinite(v);
  if (Array.isArray(v)) return v.every(allFinite);
  if (v !== null && typeof v === 'object') return Object.values(v).every(allFinite);
  return true;
}

/** The value at a body path (keys on objects, indexes on arrays), as lookupPath does on the exact tree. */
function lookupPlain(root: Json, path: BodyPath): Json | undefined {
  let cur: Json | undefined = root;
  for (const step of path) {
    if (Array.isArray(cur)) {
      if (step.index < 0 || step.index >= cur.length) return undefined;
      cur = cur[step.index];
    } else if (cur !== null && typeof cur === 'object') {
      if (!Object.prototype.hasOwnProperty.call(cur, step.key)) return undefined;
      cur = (cur as Record<string, Json>)[step.key];
    } else {
      return undefined;
    }
  }
  return cur;
}

/** `STATIC ERROR: (snippet):1:1-8: Unknown variable: x` -> `1:1-8 Unknown variable: x`, as go-jsonnet prints it. */
function goStaticError(err: StaticError): string {
  const loc = err.loc.startsWith(`${FILE}:`) ? err.loc.slice(FILE.length + 1) : err.loc;
  const unknown = /^Unknown variable: (\S+)$/.exec(err.msg);
  // libjsonnet prints a one-character range as a point; go-jsonnet prints "1-2".
  const point = /^(\d+):(\d+)$/.exec(loc);
  const shown = point && unknown ? `${loc}-${Number(point[2]) + unknown[1].length}` : loc;
  return `${shown} ${err.msg}`;
}
