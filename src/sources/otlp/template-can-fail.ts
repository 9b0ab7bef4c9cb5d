/**
 * Whether a Jsonnet template can fail on a flattened OTLP record: read from the template's
 * syntax tree (the compiler's parser), without evaluating it. The OTLP rejection check
 * (rejections.ts, given this function by the OTLP route) maps every record of
 * a request through every sink that can fail on it, on the ingestion thread, before answering;
 * a template that cannot fail needs no evaluation there (the render thread evaluates it anyway).
 *
 * The answer is "cannot fail" only for templates built from what cannot fail on a record whose
 * top-level keys are known (flatten.ts ALWAYS_WRITTEN): literals; `Body()`, and `Body(path)`
 * of a path that cannot miss or with a default; `Header(name, default)`; `BodyStr()`,
 * `HeaderStr()`, `Ip()`, `Now()`; `+` with a string on one side (Jsonnet turns the other into
 * text); arrays and objects of these; `std.toString`; `std.get(o, key[, default])` and
 * `std.objectHas(o, key)` of an `o` known to be an object (an object literal, or `Body` of a
 * key flatten.ts ALWAYS_OBJECTS names, with an object default if any) and a key known to be
 * text, as the default OTLP sinks' `service_name` reads the resource. Anything else (locals,
 * functions, conditions, arithmetic, other std functions, `Now(format)`) counts as "can fail",
 * and the check evaluates it as before.
 */
import type { Signal } from '../../model/definition.js';
import { parse, type Arg, type Node } from '@sluice/jsonnet';
import { cachedPath } from '../../pipeline/columns/path.js';
import { ALWAYS_OBJECTS } from './flatten.js';
import { pathCanMiss } from './rejections.js';

/** What an expression is known to be when it cannot fail: text, an object, or some other value. */
type Safe = 'string' | 'object' | 'value';

/**
 * Answers by signal, then by template: a sink's templates are asked about on every request, and
 * the content is the sink definition's own string (its hash computed once), not a key built anew.
 */
const answers = new Map<Signal, Map<string, boolean>>();
const ANSWERS_KEPT = 1000;

export function templateCanFail(content: string, signal: Signal): boolean {
  let bySignal = answers.get(signal);
  if (bySignal === undefined) answers.set(signal, (bySignal = new Map()));
  let answer = bySignal.get(content);
  if (answer === undefined) {
    answer = analyse(content, signal);
    if (bySignal.size >= ANSWERS_KEPT) bySignal.clear();
    bySignal.set(content, answer);
  }
  return answer;
}

/** Anything the reading cannot settle (a syntax error, a tree too deep to walk) counts as "can fail": the check then evaluates the template. */
function analyse(content: string, signal: Signal): boolean {
  try {
    return safeKind(parse('(snippet)', content), signal) === undefined;
  } catch {
    return true;
  }
}

/** The kind of a node that cannot fail, or undefined when it may. */
function safeKind(node: Node, signal: Signal): Safe | undefined {
  switch (node.t) {
    case 'str':
      return 'string';
    case 'num':
    case 'true':
    case 'false':
    case 'null':
      return 'value';
    case 'binary': {
      if (node.op !== '+') return undefined;
      const left = safeKind(node.left, signal);
      const right = safeKind(node.right, signal);
      return left !== undefined && right !== undefined && (left === 'string' || right === 'string') ? 'string' : undefined;
    }
    case 'array':
      return node.elems.every((e) => safeKind(e, signal) !== undefined) ? 'value' : undefined;
    case 'object':
      if (node.locals.length > 0 || node.asserts.length > 0) return undefined;
      return node.fields.every((f) => typeof f.name === 'string' && f.params === null && !f.plus && safeKind(f.body, signal) !== undefined) ? 'object' : undefined;
    case 'apply':
      return safeCall(node.target, node.args, signal);
    default:
      return undefined;
  }
}

function safeCall(target: Node, args: readonly Arg[], signal: Signal): Safe | undefined {
  if (args.some((a) => a.name !== null)) return undefined;
  const kinds = args.map((a) => safeKind(a.expr, signal));
  if (kinds.some((k) => k === undefined)) return undefined;
  if (target.t === 'index' && target.target.t === 'var' && target.target.name === 'std' && target.index.t === 'str') {
    return safeStdCall(target.index.value, kinds as Safe[]);
  }
  if (target.t !== 'var') return undefined;
  switch (target.name) {
    case 'Body': {
      if (args.length === 0) return 'value';
      const path = args[0].expr;
      const known = path.t === 'str' ? bodyKind(path.value, signal) : undefined;
      if (args.length === 2) return known === 'object' && kinds[1] === 'object' ? 'object' : 'value';
      return args.length === 1 ? known : undefined;
    }
    case 'Header':
      return args.length === 0 || args.length === 2 ? 'value' : undefined;
    case 'BodyStr':
    case 'HeaderStr':
    case 'Ip':
    case 'Now':
      return args.length === 0 ? 'string' : undefined;
    default:
      return undefined;
  }
}

/** What `Body(path)` is on every flattened record of the signal, or undefined when the path can miss. */
function bodyKind(path: string, signal: Signal): Safe | undefined {
  if (pathCanMiss(path, signal)) return undefined;
  const steps = cachedPath(path);
  return steps.length === 1 && ALWAYS_OBJECTS[signal].has(steps[0].key) ? 'object' : 'value';
}

/** A call of `std.<name>` with arguments of these kinds, when it cannot fail. */
function safeStdCall(name: string, kinds: readonly Safe[]): Safe | undefined {
  switch (name) {
    case 'toString':
      return kinds.length === 1 ? 'string' : undefined;
    case 'get':
      // std.get(o, f, default=null, inc_hidden=true): fails only on an `o` that is not an object or an `f` that is not text.
      return kinds.length >= 2 && kinds.length <= 3 && kinds[0] === 'object' && kinds[1] === 'string' ? 'value' : undefined;
    case 'objectHas':
      return kinds.length === 2 && kinds[0] === 'object' && kinds[1] === 'string' ? 'value' : undefined;
    default:
      return undefined;
  }
}
