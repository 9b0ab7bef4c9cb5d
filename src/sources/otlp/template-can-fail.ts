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
 * text); arrays and objects of these; `std.toString`. Anything else (locals, functions,
 * conditions, arithmetic, other std functions, `Now(format)`) counts as "can fail", and the
 * check evaluates it as before.
 */
import type { Signal } from '../../model/definition.js';
import { parse, type Arg, type Node } from '@sluice/jsonnet';
import { pathCanMiss } from './rejections.js';

/** What an expression is known to be when it cannot fail: text, or some other value. */
type Safe = 'string' | 'value';

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
      return node.fields.every((f) => typeof f.name === 'string' && f.params === null && !f.plus && safeKind(f.body, signal) !== undefined) ? 'value' : undefined;
    case 'apply':
      return safeCall(node.target, node.args, signal);
    default:
      return undefined;
  }
}

function safeCall(target: Node, args: readonly Arg[], signal: Signal): Safe | undefined {
  if (args.some((a) => a.name !== null || safeKind(a.expr, signal) === undefined)) return undefined;
  if (target.t === 'index' && target.target.t === 'var' && target.target.name === 'std' && target.index.t === 'str' && target.index.value === 'toString') {
    return args.length === 1 ? 'string' : undefined;
  }
  if (target.t !== 'var') return undefined;
  switch (target.name) {
    case 'Body': {
      if (args.length === 0 || args.length === 2) return 'value';
      const path = args[0].expr;
      return args.length === 1 && path.t === 'str' && !pathCanMiss(path.value, signal) ? 'value' : undefined;
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
