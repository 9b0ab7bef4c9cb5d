/**
 * TemplateEngine adapter on libjsonnet (@hanazuki/node-jsonnet), with the reference's globals.
 * Test-only: the service runs templates on Sluice's compiler (src/adapters/jsonnet/sluice-engine.ts);
 * this engine is the oracle the template tests compare it against.
 *
 *   Ip()  BodyStr()  HeaderStr()  Header(header="", default)  Body(path="", default)
 *   Now(format="%Y-%m-%dT%H:%M:%S.%fZ")
 *
 * Cost model, and why this adapter batches: the binding builds a fresh libjsonnet VM for every
 * evaluateSnippet() call, and every VM initialises the standard library, ~30-40 ms of CPU.
 * A VM cannot be reused across calls, so one evaluation per record would cap a template column
 * at a few dozen records per second. Instead, evaluate() calls are queued and everything queued
 * in the same turn of the event loop (all templates, all records) is evaluated by one program:
 *
 *   local __R = std.parseJson(std.extVar("__r"));   // per-record data, as JSON
 *   local __T7(__k, __i) = <globals over __R[__i]> <template 7>;
 *   [__T7(0, 0), __T7(1, 1), __T9(2, 0), ...]   // one element per evaluation
 *
 * The globals read precomputed per-record data rather than calling back into JS (a native
 * callback costs a thread round trip): Body() paths and Now() formats that appear as string
 * literals in the template are resolved in JS before the evaluation; other arguments fall back
 * to native callbacks, with the same semantics. A global that fails (missing path or header,
 * bad body, bad format) raises an error tagged with the element's index and the failure kind;
 * any other runtime error is attributed to an element by the line of the outermost
 * `thunk <array_element>` frame of the stack trace (each element is on its own line), and when
 * neither works the batch is halved. Jsonnet cannot catch an error, so the run stops at the
 * first failing element: that element is rejected and the rest is evaluated again. A template
 * that fails on most records therefore costs about one VM start (~35 ms) per failing record.
 *
 * Isolation: templates of different sinks share a run, so the template code must not reach
 * the batch's data. It sees the globals and a `std` without extVar/native/trace (the internal
 * names like __R fail check(), which compile() runs). Imports are rejected by check(): the
 * reference's VM has a no-op importer, while libjsonnet's default importer reads local files.
 */
import { randomBytes } from 'node:crypto';
import { createRequire } from 'node:module';
import type { Column } from '../../src/model/definition.js';
import { canonicalHeaderKey } from '../../src/pipeline/headers.js';
import { MappingError, type MappingErrorKind } from '../../src/pipeline/columns/errors.js';
import { stringifyJson, toPlain } from '../../src/pipeline/columns/json.js';
import { validateMapping as validateColumns } from '../../src/pipeline/columns/mapping.js';
import { cachedPath, lookupPath } from '../../src/pipeline/columns/path.js';
import { DEFAULT_NOW_FORMAT, strftime } from '../../src/pipeline/columns/strftime.js';
import {
  TemplateError,
  type CompiledTemplate,
  type RecordContext,
  type TemplateEngine,
} from '../../src/pipeline/template-engine.js';

/** The part of @hanazuki/node-jsonnet's Jsonnet class this adapter uses (its types are not exported for ESM). */
type JsonnetPrimitive = null | boolean | number | string;
interface JsonnetVm {
  setMaxStack(depth: number): this;
  extString(key: string, value: string): this;
  nativeCallback(name: string, fn: (...args: JsonnetPrimitive[]) => unknown, ...params: string[]): this;
  evaluateSnippet(snippet: string, filename?: string): Promise<string>;
}
const { Jsonnet } = createRequire(import.meta.url)('@hanazuki/node-jsonnet') as { Jsonnet: new () => JsonnetVm };

/** The reference's "no default supplied" value of Header() and Body(). */
export const ERR_ON_UNDEFINED = '<<~~errOnUndefined~~>>';
const MARK = '<<~~sluice:';
const MARK_END = '~~>>';

export interface LibjsonnetEngineOptions {
  /** Most evaluations (records x templates) in one libjsonnet run. Default 1000. */
  maxBatch?: number;
  /** Approximate bound of the per-record data of one run, in bytes. Default 8 MiB. */
  maxBatchBytes?: number;
  /** libjsonnet runs in parallel (each holds a libuv worker thread). Default 2. */
  concurrency?: number;
  /** libjsonnet stack depth; deeper recursion fails with "max stack frames exceeded.". */
  maxStack?: number;
}

// ---------------------------------------------------------------------------------------------
// Static analysis of a template's source: which globals it uses, with which literal arguments.

const GLOBALS = new Set(['Ip', 'Body', 'BodyStr', 'Header', 'HeaderStr', 'Now']);
const MAX_LITERALS = 64;

interface Token {
  kind: 'ident' | 'string' | 'punct';
  value: string;
  /** Offset in the source. */
  pos: number;
}

const IMPORT_KEYWORDS = new Set(['import', 'importstr', 'importbin']);

/** 1-based line and column of an offset. */
function position(src: string, offset: number): { line: number; col: number } {
  let line = 1;
  let lineStart = 0;
  for (let i = 0; i < offset; i++) {
    if (src.charCodeAt(i) === 0x0a) {
      line++;
      lineStart = i + 1;
    }
  }
  return { line, col: offset - lineStart + 1 };
}

/** A rough Jsonnet lexer: identifiers, decoded string literals, punctuation; skips comments. */
function lex(src: string): Token[] {
  const tokens: Token[] = [];
  const n = src.length;
  let i = 0;
  while (i < n) {
    const c = src[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
    } else if (c === '#' || (c === '/' && src[i + 1] === '/')) {
      while (i < n && src[i] !== '\n') i++;
    } else if (c === '/' && src[i + 1] === '*') {
      const end = src.indexOf('*/', i + 2);
      i = end < 0 ? n : end + 2;
    } else if (c === '"' || c === "'") {
      let j = i + 1;
      let value = '';
      while (j < n && src[j] !== c) {
        if (src[j] === '\\' && j + 1 < n) {
          const e = src[j + 1];
          const simple: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f' };
          if (e === 'u') {
            value += String.fromCharCode(parseInt(src.slice(j + 2, j + 6), 16));
            j += 6;
            continue;
          }
          value += simple[e] ?? e;
          j += 2;
        } else {
          value += src[j++];
        }
      }
      tokens.push({ kind: 'string', value, pos: i });
      i = j + 1;
    } else if (c === '@' && (src[i + 1] === '"' || src[i + 1] === "'")) {
      const q = src[i + 1];
      let j = i + 2;
      let value = '';
      while (j < n) {
        if (src[j] === q) {
          if (src[j + 1] === q) {
            value += q;
            j += 2;
            continue;
          }
          break;
        }
        value += src[j++];
      }
      tokens.push({ kind: 'string', value, pos: i });
      i = j + 1;
    } else if (src.startsWith('|||', i)) {
      const end = src.indexOf('|||', i + 3);
      tokens.push({ kind: 'punct', value: '|||', pos: i }); // a text block: not used as a literal
      i = end < 0 ? n : end + 3;
    } else if (/[A-Za-z_]/.test(c)) {
      let j = i + 1;
      while (j < n && /[A-Za-z0-9_]/.test(src[j])) j++;
      tokens.push({ kind: 'ident', value: src.slice(i, j), pos: i });
      i = j;
    } else {
      tokens.push({ kind: 'punct', value: c, pos: i });
      i++;
    }
  }
  return tokens;
}

/** What a template reads from a record. */
interface Needs {
  ip: boolean;
  bodyStr: boolean;
  headerStr: boolean;
  headers: boolean;
  body: boolean;
  /** Body() without a literal non-empty path somewhere: ship the whole parsed body. */
  wholeBody: boolean;
  now: boolean;
  /** String literals: resolved as body paths per record (when `body`). */
  paths: string[];
  /** Literals with a "%": formatted per record (when `now`). */
  formats: string[];
  /** Literal -> canonical header name (static). */
  headerNames: Map<string, string>;
}

export function analyzeTemplate(content: string): Needs {
  const tokens = lex(content);
  const needs: Needs = {
    ip: false,
    bodyStr: false,
    headerStr: false,
    headers: false,
    body: false,
    wholeBody: false,
    now: false,
    paths: [],
    formats: [],
    headerNames: new Map(),
  };
  const literals = new Set<string>();
  for (let t = 0; t < tokens.length; t++) {
    const tok = tokens[t];
    if (tok.kind === 'string') {
      if (literals.size < MAX_LITERALS) literals.add(tok.value);
      continue;
    }
    if (tok.kind !== 'ident' || !GLOBALS.has(tok.value)) continue;
    const prev = tokens[t - 1];
    if (prev !== undefined && prev.kind === 'punct' && prev.value === '.') continue; // a field access
    switch (tok.value) {
      case 'Ip':
        needs.ip = true;
        break;
      case 'BodyStr':
        needs.bodyStr = true;
        break;
      case 'HeaderStr':
        needs.headerStr = true;
        break;
      case 'Header':
        needs.headers = true;
        break;
      case 'Now':
        needs.now = true;
        break;
      case 'Body': {
        needs.body = true;
        const open = tokens[t + 1];
        const arg = tokens[t + 2];
        const after = tokens[t + 3];
        const literalCall =
          open?.kind === 'punct' &&
          open.value === '(' &&
          arg?.kind === 'string' &&
          arg.value !== '' &&
          after?.kind === 'punct' &&
          (after.value === ',' || after.value === ')');
        if (!literalCall) needs.wholeBody = true;
        break;
      }
    }
  }
  for (const lit of literals) {
    if (needs.body) needs.paths.push(lit);
    if (needs.now && lit.includes('%') && lit !== DEFAULT_NOW_FORMAT) needs.formats.push(lit);
    if (needs.headers && lit !== '') needs.headerNames.set(lit, canonicalHeaderKey(lit));
  }
  return needs;
}

// ---------------------------------------------------------------------------------------------
// Static errors in go-jsonnet's format.

const CHECK_PRELUDE =
  'local Ip() = null, BodyStr() = null, HeaderStr() = null, Header(header="", default=null) = null, ' +
  `Body(path="", default=null) = null, Now(format="") = null; assert false : "${MARK}check${MARK_END}";\n`;

const STATIC_ERROR = /^STATIC ERROR: \(snippet\):(\((\d+):(\d+)\)-\((\d+):(\d+)\)|(\d+):(\d+)(-\d+)?): ([\s\S]*)$/;

/**
 * `STATIC ERROR: (snippet):2:1-8: Unknown variable: Invalid` (content on line 2, after the
 * one-line prelude) -> `1:1-8 Unknown variable: Invalid`.
 */
export function formatStaticError(libjsonnetMessage: string, lineOffset = 1): string {
  const msg = libjsonnetMessage.replace(/\n+$/, '');
  const m = STATIC_ERROR.exec(msg);
  if (m === null) return msg.replace(/^STATIC ERROR: /, '');
  let loc: string;
  if (m[2] !== undefined) {
    loc = `(${Number(m[2]) - lineOffset}:${m[3]})-(${Number(m[4]) - lineOffset}:${m[5]})`;
  } else {
    let range = m[8] ?? '';
    // libjsonnet prints a one-character range as a point; go-jsonnet prints "7-8".
    const unknown = /^Unknown variable: (\S+)$/.exec(m[9]);
    if (range === '' && unknown !== null) range = `-${Number(m[7]) + unknown[1].length}`;
    loc = `${Number(m[6]) - lineOffset}:${m[7]}${range}`;
  }
  return `${loc} ${m[9]}`;
}

/** The user-facing message of a libjsonnet runtime error: no prefix, no stack trace. */
function runtimeMessage(libjsonnetMessage: string): string {
  let msg = libjsonnetMessage.replace(/^RUNTIME ERROR: /, '');
  const trace = msg.indexOf('\n\t');
  if (trace >= 0) msg = msg.slice(0, trace);
  return msg.replace(/\n+$/, '');
}

// ---------------------------------------------------------------------------------------------
// Per-template program text.

/**
 * Templates see a `std` without extVar (the batch's data of other records), native (the
 * callbacks take a record index) and trace (stderr): as in the reference, which binds none.
 */
const PROGRAM_PRELUDE = `local __R = std.parseJson(std.extVar("__r"));
local __N = std.extVar("__n");
local __STD = std + {
  extVar(x):: error ("Undefined external variable: " + x),
  native(x):: null,
  trace(str, rest):: rest,
};
`;

let nextTemplateId = 0;

function jsonnetString(s: string): string {
  return JSON.stringify(s);
}

function templateDefinition(id: number, content: string, needs: Needs): string {
  const S = jsonnetString(ERR_ON_UNDEFINED);
  const D = jsonnetString(DEFAULT_NOW_FORMAT);
  const headerTable = `{${[...needs.headerNames].map(([k, v]) => `${jsonnetString(k)}: ${jsonnetString(v)}`).join(', ')}}`;
  const pathTable = `{${needs.paths.map((p) => `${jsonnetString(p)}: null`).join(', ')}}`;
  return `local __HC${id} = ${headerTable};
local __BL${id} = ${pathTable};
local __T${id}(__k, __i) =
  local __r = __R[__i];
  local __e(kind, m) = error (${jsonnetString(MARK)} + __N + ":" + __k + ":" + kind + ${jsonnetString(MARK_END)} + m);
  local Ip() = __r.ip;
  local BodyStr() = __r.bs;
  local HeaderStr() = __r.hs;
  local Header(header="", default=${S}) =
    if header == "" then __r.h
    else
      local c = if std.objectHas(__HC${id}, header) then __HC${id}[header] else std.native("_canon")(header);
      if std.objectHas(__r.h, c) then __r.h[c]
      else if default == ${S} then __e("notFound", 'header "' + c + '" not found')
      else default;
  local Body(path="", default=${S}) =
    if __r.be != null then __e(__r.bk, __r.be)
    else if path == "" then __r.b
    else if std.objectHas(__r.bp, path) then __r.bp[path]
    else
      local x = if std.objectHas(__BL${id}, path) then [false] else std.native("_bodyPath")(__i, path);
      if x[0] then x[1]
      else if default == ${S} then __e("notFound", 'path "' + path + '" not found in the body')
      else default;
  local Now(format=${D}) =
    if format == ${D} then __r.now
    else
      local x = if std.objectHas(__r.nf, format) then __r.nf[format] else std.native("_now")(__i, format);
      if x[0] then x[1] else __e("template", x[1]);
  local std = __STD;
${content}
;
`;
}

// ---------------------------------------------------------------------------------------------
// Batches.

interface Task {
  template: LibjsonnetTemplate;
  ctx: RecordContext;
  resolve(json: string): void;
  reject(err: TemplateError): void;
}

/** A run's outputs, or its failure: the failing element's index, -1 when it is not known. */
type RunResult = { ok: true; outputs: string[] } | { ok: false; index: number; kind: MappingErrorKind; message: string };

const ARRAY_ELEMENT_FRAME = /^\t\(snippet\):(\d+):\d+(?:-\d+)?\tthunk <array_element>$/;

/**
 * The snippet line of the outermost array element in a libjsonnet stack trace: the element of
 * the batch being manifested when the error happened (each element is on its own line).
 */
function failingLine(trace: string): number | undefined {
  let line: number | undefined;
  for (const l of trace.split('\n')) {
    const m = ARRAY_ELEMENT_FRAME.exec(l);
    if (m !== null) line = Number(m[1]);
  }
  return line;
}

/** Splits libjsonnet's pretty-printed top-level array into compact element texts. */
export function splitJsonArray(text: string): string[] {
  const out: string[] = [];
  const n = text.length;
  let i = text.indexOf('[') + 1;
  if (i === 0) throw new Error('libjsonnet output is not an array');
  let depth = 0;
  let cur = '';
  let run = i;
  const flush = (end: number): void => {
    if (end > run) cur += text.slice(run, end);
  };
  while (i < n) {
    const c = text.charCodeAt(i);
    if (c === 0x22) {
      // Skip the string, escapes included.
      i++;
      while (i < n) {
        const d = text.charCodeAt(i);
        if (d === 0x5c) i += 2;
        else if (d === 0x22) break;
        else i++;
      }
      i++;
      continue;
    }
    if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) {
      flush(i);
      run = i + 1;
    } else if (c === 0x5b || c === 0x7b) {
      depth++;
    } else if (c === 0x5d || c === 0x7d) {
      if (depth === 0) {
        flush(i);
        if (cur !== '') out.push(cur);
        return out;
      }
      depth--;
    } else if (c === 0x2c && depth === 0) {
      flush(i);
      out.push(cur);
      cur = '';
      run = i + 1;
    }
    i++;
  }
  throw new Error('libjsonnet output ends inside the array');
}

const LONE_SURROGATE_ESCAPE = /(?<=(?:^|[^\\])(?:\\\\)*)\\ud[89a-f][0-9a-f]{2}/gi;

/** Lone surrogates (JSON.stringify writes them as \udXXX) are a static error in libjsonnet. */
function jsonnetSafe(json: string): string {
  if (!/\\ud[89a-f]/i.test(json)) return json;
  // Keep valid pairs: only escapes not followed/preceded by their partner are lone ones.
  return json.replace(LONE_SURROGATE_ESCAPE, (esc, offset: number, whole: string) => {
    const cu = parseInt(esc.slice(2), 16);
    if (cu < 0xdc00) {
      const next = whole.slice(offset + 6, offset + 12);
      if (/^\\ud[c-f][0-9a-f]{2}$/i.test(next)) return esc;
    } else {
      const prev = whole.slice(offset - 6, offset);
      if (/^\\ud[89ab][0-9a-f]{2}$/i.test(prev)) return esc;
    }
    return '\\ufffd';
  });
}

/** Per-record data for the globals, as JSON text (only the fields some template needs). */
/** The union of the needs of the templates that evaluate one record. */
interface MergedNeeds {
  ip: boolean;
  bs: boolean;
  hs: boolean;
  h: boolean;
  body: boolean;
  whole: boolean;
  now: boolean;
  paths: string[];
  formats: string[];
}

function mergeNeeds(needs: readonly Needs[]): MergedNeeds {
  const m: MergedNeeds = { ip: false, bs: false, hs: false, h: false, body: false, whole: false, now: false, paths: [], formats: [] };
  const paths = new Set<string>();
  const formats = new Set<string>();
  for (const n of needs) {
    m.ip ||= n.ip;
    m.bs ||= n.bodyStr;
    m.hs ||= n.headerStr;
    m.h ||= n.headers;
    m.body ||= n.body;
    m.whole ||= n.wholeBody;
    m.now ||= n.now;
    if (n.body) for (const p of n.paths) paths.add(p);
    if (n.now) for (const f of n.formats) formats.add(f);
  }
  m.paths = [...paths];
  m.formats = [...formats];
  return m;
}

/** Per-record data for the globals, as JSON text (only the fields some template needs). */
function recordData(ctx: RecordContext, needs: MergedNeeds): string {
  const { ip, bs, hs, h, body, whole, now, paths, formats } = needs;
  const parts: string[] = [];
  if (ip) parts.push(`"ip":${JSON.stringify(ctx.record.ip)}`);
  if (bs) parts.push(`"bs":${JSON.stringify(ctx.bodyString())}`);
  if (hs) parts.push(`"hs":${JSON.stringify(ctx.headerStr())}`);
  if (h) parts.push(`"h":${ctx.headersJson()}`);
  if (body) {
    try {
      const value = ctx.parsedBody();
      const found: string[] = [];
      for (const p of paths) {
        const v = lookupPath(value, cachedPath(p));
        if (v !== undefined) found.push(`${JSON.stringify(p)}:${stringifyJson(v)}`);
      }
      parts.push('"be":null', `"bp":{${found.join(',')}}`);
      if (whole) parts.push(`"b":${stringifyJson(value)}`);
    } catch (e) {
      if (!(e instanceof MappingError)) throw e;
      parts.push(`"be":${JSON.stringify(e.reason)}`, `"bk":${JSON.stringify(e.kind)}`, '"bp":{}');
    }
  }
  if (now) {
    parts.push(`"now":${JSON.stringify(ctx.datetime())}`);
    const nf: string[] = [];
    for (const f of formats) {
      let entry: [boolean, string];
      try {
        entry = [true, strftime(f, ctx.record.receivedAt)];
      } catch (e) {
        entry = [false, e instanceof Error ? e.message : String(e)];
      }
      nf.push(`${JSON.stringify(f)}:${JSON.stringify(entry)}`);
    }
    parts.push(`"nf":{${nf.join(',')}}`);
  }
  return `{${parts.join(',')}}`;
}

function taskWeight(t: Task): number {
  const n = t.template.needs;
  return 256 + (n.bodyStr || n.wholeBody ? t.ctx.record.body.length * (n.bodyStr && n.wholeBody ? 2 : 1) : 0);
}

export class LibjsonnetEngine implements TemplateEngine {
  private readonly maxBatch: number;
  private readonly maxBatchBytes: number;
  private readonly concurrency: number;
  private readonly maxStack: number | undefined;
  private readonly queue: Task[] = [];
  private scheduled = false;
  private running = 0;
  private readonly checked = new Map<string, string | undefined>();

  constructor(options: LibjsonnetEngineOptions = {}) {
    this.maxBatch = options.maxBatch ?? 1000;
    this.maxBatchBytes = options.maxBatchBytes ?? 8 * 1024 * 1024;
    this.concurrency = options.concurrency ?? 2;
    this.maxStack = options.maxStack;
  }

  async check(content: string): Promise<string | undefined> {
    if (this.checked.has(content)) return this.checked.get(content);
    let result: string | undefined;
    try {
      await this.vm().evaluateSnippet(CHECK_PRELUDE + content);
      // Not reached: the prelude's assert always fails once the program passed static analysis.
    } catch (e) {
      const msg = e instanceof Error ? e.message : String(e);
      if (msg.startsWith('STATIC ERROR: ')) result = formatStaticError(msg);
    }
    if (result === undefined) {
      // The reference's VM has a no-op importer; libjsonnet's would read local files.
      const imp = lex(content).find((t) => t.kind === 'ident' && IMPORT_KEYWORDS.has(t.value));
      if (imp !== undefined) {
        const { line, col } = position(content, imp.pos);
        result = `${line}:${col}-${col + imp.value.length} Imports are not supported`;
      }
    }
    if (this.checked.size >= 1000) this.checked.clear();
    this.checked.set(content, result);
    return result;
  }

  async compile(content: string): Promise<CompiledTemplate> {
    const err = await this.check(content);
    if (err !== undefined) throw new TemplateError(err, 'invalid');
    return new LibjsonnetTemplate(this, content);
  }

  /** Queues one evaluation; everything queued in this turn of the event loop runs together. */
  enqueue(task: Task): void {
    this.queue.push(task);
    this.schedule();
  }

  private schedule(): void {
    if (this.scheduled || this.running >= this.concurrency || this.queue.length === 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.drain();
    });
  }

  private drain(): void {
    while (this.running < this.concurrency && this.queue.length > 0) {
      const batch = this.takeBatch();
      this.running++;
      this.runTasks(batch)
        .catch((e: unknown) => {
          const err = new TemplateError(e instanceof Error ? e.message : String(e), 'internal');
          for (const t of batch) t.reject(err);
        })
        .finally(() => {
          this.running--;
          this.schedule();
        });
    }
  }

  private takeBatch(): Task[] {
    let bytes = 0;
    let n = 0;
    while (n < this.queue.length && n < this.maxBatch) {
      bytes += taskWeight(this.queue[n]);
      if (n > 0 && bytes > this.maxBatchBytes) break;
      n++;
    }
    return this.queue.splice(0, n);
  }

  private vm(): JsonnetVm {
    const j = new Jsonnet();
    if (this.maxStack !== undefined) j.setMaxStack(this.maxStack);
    return j;
  }

  /** Evaluates tasks, isolating failures; every task is settled when it resolves. */
  private async runTasks(tasks: Task[]): Promise<void> {
    let remaining = tasks;
    while (remaining.length > 0) {
      const r = await this.run(remaining);
      if (r.ok) {
        for (let k = 0; k < remaining.length; k++) remaining[k].resolve(r.outputs[k]);
        return;
      }
      if (r.index >= 0) {
        remaining[r.index].reject(new TemplateError(r.message, r.kind));
        remaining = remaining.filter((_, k) => k !== r.index);
        continue;
      }
      if (remaining.length === 1) {
        remaining[0].reject(new TemplateError(r.message, 'template'));
        return;
      }
      const half = remaining.length >> 1;
      await this.runTasks(remaining.slice(0, half));
      remaining = remaining.slice(half);
    }
  }

  /** One libjsonnet run over the tasks. */
  private async run(tasks: Task[]): Promise<RunResult> {
    // Records (deduplicated) and the templates each is evaluated by.
    const recordIndex = new Map<RecordContext, number>();
    const records: RecordContext[] = [];
    const recordTemplates: LibjsonnetTemplate[][] = [];
    const templates = new Map<number, LibjsonnetTemplate>();
    const calls: string[] = [];
    for (let k = 0; k < tasks.length; k++) {
      const { ctx, template } = tasks[k];
      let i = recordIndex.get(ctx);
      if (i === undefined) {
        i = records.length;
        recordIndex.set(ctx, i);
        records.push(ctx);
        recordTemplates.push([]);
      }
      if (!recordTemplates[i].includes(template)) recordTemplates[i].push(template);
      templates.set(template.id, template);
      calls.push(`__T${template.id}(${k}, ${i})`);
    }
    // Needs merged once per combination of templates (usually one per batch).
    const merged = new Map<string, MergedNeeds>();
    const pieces = records.map((ctx, i) => {
      const ts = recordTemplates[i];
      const key = ts.length === 1 ? String(ts[0].id) : ts.map((t) => t.id).join(',');
      let m = merged.get(key);
      if (m === undefined) {
        m = mergeNeeds(ts.map((t) => t.needs));
        merged.set(key, m);
      }
      return recordData(ctx, m);
    });
    const data = jsonnetSafe(`[${pieces.join(',')}]`);
    let program = PROGRAM_PRELUDE;
    for (const t of templates.values()) program += t.definition;
    program += '[\n';
    // Element k is on line firstCallLine + k: a stack trace names the failing element by line.
    const firstCallLine = countLines(program) + 1;
    program += `${calls.join(',\n')}\n]\n`;

    const jsonnet = this.vm();
    // The tag of the globals' errors carries a per-run nonce that templates cannot read, so a
    // template's own error message cannot pose as another element's failure.
    const nonce = randomBytes(8).toString('hex');
    jsonnet.extString('__r', data);
    jsonnet.extString('__n', nonce);
    jsonnet.nativeCallback('_canon', (name) => canonicalHeaderKey(String(name)), 'name');
    jsonnet.nativeCallback(
      '_bodyPath',
      (i, path) => {
        const v = lookupPath(records[Number(i)].parsedBody(), cachedPath(String(path)));
        return v === undefined ? [false] : [true, toPlain(v)];
      },
      'i',
      'path',
    );
    jsonnet.nativeCallback(
      '_now',
      (i, format) => {
        try {
          return [true, strftime(String(format), records[Number(i)].record.receivedAt)];
        } catch (e) {
          return [false, e instanceof Error ? e.message : String(e)];
        }
      },
      'i',
      'format',
    );

    let output: string;
    try {
      output = await jsonnet.evaluateSnippet(program);
    } catch (e) {
      const raw = e instanceof Error ? e.message : String(e);
      const tag = `${MARK}${nonce}:`;
      const at = raw.indexOf(tag);
      if (at >= 0) {
        // A global's error, tagged with the element and the kind.
        const end = raw.indexOf(MARK_END, at);
        const [k, kind] = raw.slice(at + tag.length, end).split(':');
        const message = runtimeMessage(raw.slice(end + MARK_END.length));
        return { ok: false, index: Number(k), kind: kind as MappingErrorKind, message };
      }
      if (!raw.startsWith('RUNTIME ERROR: ')) return { ok: false, index: -1, kind: 'template', message: raw.trim() };
      const line = failingLine(raw);
      const k = line === undefined ? -1 : line - firstCallLine;
      return { ok: false, index: k >= 0 && k < tasks.length ? k : -1, kind: 'template', message: runtimeMessage(raw) };
    }
    const outputs = splitJsonArray(output);
    if (outputs.length !== tasks.length) {
      throw new Error(`libjsonnet returned ${outputs.length} values for ${tasks.length} evaluations`);
    }
    return { ok: true, outputs };
  }
}

function countLines(s: string): number {
  let n = 0;
  for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) n++;
  return n;
}

class LibjsonnetTemplate implements CompiledTemplate {
  readonly id = nextTemplateId++;
  readonly needs: Needs;
  readonly definition: string;

  constructor(
    private readonly engine: LibjsonnetEngine,
    content: string,
  ) {
    this.needs = analyzeTemplate(content);
    this.definition = templateDefinition(this.id, content, this.needs);
  }

  evaluate(record: RecordContext): Promise<string> {
    return new Promise((resolve, reject) => this.engine.enqueue({ template: this, ctx: record, resolve, reject }));
  }
}

/**
 * The first invalid template of a mapping, as the API prints it (it adds the final period):
 * `Column "jsonnet" template is invalid: 1:1-8 Unknown variable: Invalid`.
 */
export function validateMapping(columns: readonly Column[], engine: TemplateEngine): Promise<string | undefined> {
  return validateColumns(columns, engine);
}
