/** Compiles the Jsonnet AST into JavaScript closures over environments of slots. */
import type { Bind, CompSpec, Node, NodeOf, Param } from './ast.js';
import { Loc, RuntimeError, StaticError, formatLoc } from './errors.js';
import { COST, LOOP_CHECK, budget, charge, checkArrayLength, chargeConcat, checkTime } from './limits.js';
import { escapeJsonStringBody } from './manifest.js';
import {
  Code, Env, FieldDef, JArr, JFunc, JObject, Layer, Lazy, Thunk, Val,
  TailCall, callFunction, checkNumber, forceAt, compare, cpAt, cpLength, equals, force, fromInt64, hasSurrogates,
  objectField, objectFieldFrom, objectHas, plus, toInt64, toStringValue, typeName, withLoc,
} from './values.js';

/** Hooks the compiler needs from the runtime (std functions used by desugared forms, imports). */
export interface CompileHooks {
  /** `std.mod(a, b)` / format operator */
  percent(a: Val, b: Val, loc: Loc): Val;
  /** `std.slice` */
  slice(target: Val, from: Val, to: Val, step: Val, loc: Loc): Val;
  /** `import` / `importstr` / `importbin` relative to `file`. */
  importFile(kind: 'import' | 'importstr' | 'importbin', file: string, from: string, loc: Loc): Val;
}

class Scope {
  constructor(
    public readonly names: Map<string, number>,
    public readonly up: Scope | null,
    /** Inside an object (self/super allowed)? */
    public readonly inObject: boolean,
  ) {}
}

function rt(msg: string, loc: Loc | undefined): RuntimeError {
  return withLoc(new RuntimeError(msg), loc);
}

function isConst(n: Node): boolean {
  return n.t === 'null' || n.t === 'true' || n.t === 'false' || n.t === 'num' || (n.t === 'str');
}
function constValue(n: Node): Val {
  switch (n.t) {
    case 'null': return null;
    case 'true': return true;
    case 'false': return false;
    case 'num': return n.value;
    case 'str': return n.value;
    default: throw new Error('not a constant');
  }
}

/** Creates a lazy value for an expression in `env`, without a thunk when it is cheap. */
type LazyCode = (env: Env) => Lazy;

/** Estimated bytes of an element `lazy()` makes for `n`: a slot, plus the thunk it may create. */
function elementCost(n: Node): number {
  return isConst(n) || n.t === 'var' || n.t === 'func' ? COST.element : COST.element + COST.lazyElement;
}

export class Compiler {
  constructor(
    private readonly hooks: CompileHooks,
    private readonly filename: string,
  ) {}

  compileRoot(node: Node, rootNames: string[]): Code {
    const m = new Map<string, number>();
    rootNames.forEach((n, i) => m.set(n, i));
    return this.c(node, new Scope(m, null, false));
  }

  private resolve(name: string, scope: Scope, loc: Loc): [number, number] {
    let depth = 0;
    for (let s: Scope | null = scope; s; s = s.up, depth++) {
      const i = s.names.get(name);
      if (i !== undefined) return [depth, i];
    }
    throw new StaticError(formatLoc(loc), `Unknown variable: ${name}`);
  }

  private lazyVar(depth: number, idx: number): LazyCode {
    switch (depth) {
      case 0: return (env) => env.vars[idx];
      case 1: return (env) => env.up!.vars[idx];
      case 2: return (env) => env.up!.up!.vars[idx];
      case 3: return (env) => env.up!.up!.up!.vars[idx];
      default:
        return (env) => {
          let e = env;
          for (let d = depth; d > 0; d--) e = e.up!;
          return e.vars[idx];
        };
    }
  }

  /** Lazy code for an argument / element / binding. */
  private lazy(n: Node, scope: Scope): LazyCode {
    if (isConst(n)) {
      const v = constValue(n);
      return () => v;
    }
    if (n.t === 'var') {
      const [d, i] = this.resolve(n.name, scope, n.loc);
      return this.lazyVar(d, i);
    }
    if (n.t === 'func') {
      const code = this.c(n, scope);
      return code;
    }
    const code = this.c(n, scope);
    return (env) => new Thunk(code, env);
  }

  /** `tail`: the code is in tail position of a function body (may return a TailCall). */
  private c(n: Node, scope: Scope, tail = false): Code {
    switch (n.t) {
      case 'null': return () => null;
      case 'true': return () => true;
      case 'false': return () => false;
      case 'num': {
        const v = n.value;
        if (!Number.isFinite(v)) {
          const loc = n.loc;
          return () => { throw rt('overflow', loc); };
        }
        return () => v;
      }
      case 'str': { const v = n.value; return () => v; }
      case 'self': {
        if (!this.inObject(scope)) throw new StaticError(formatLoc(n.loc), "Can't use self outside of an object.");
        return (env) => env.self;
      }
      case 'dollar': {
        const [d, i] = this.resolveDollar(scope, n.loc);
        const lv = this.lazyVar(d, i);
        return (env) => force(lv(env));
      }
      case 'var': {
        const [d, i] = this.resolve(n.name, scope, n.loc);
        const name = n.name;
        const loc = n.loc;
        switch (d) {
          case 0: return (env) => {
            const x = env.vars[i];
            return x instanceof Thunk ? (x.state === 2 ? x.value : forceAt(x, name, loc)) : x;
          };
          case 1: return (env) => {
            const x = env.up!.vars[i];
            return x instanceof Thunk ? (x.state === 2 ? x.value : forceAt(x, name, loc)) : x;
          };
          case 2: return (env) => {
            const x = env.up!.up!.vars[i];
            return x instanceof Thunk ? (x.state === 2 ? x.value : forceAt(x, name, loc)) : x;
          };
          default: {
            const lv = this.lazyVar(d, i);
            return (env) => {
              const x = lv(env);
              return x instanceof Thunk ? (x.state === 2 ? x.value : forceAt(x, name, loc)) : x;
            };
          }
        }
      }
      case 'local': return this.cLocal(n, scope, tail);
      case 'func': return this.cFunc(n.params, n.body, scope, n.loc, 'anonymous');
      case 'apply': return this.cApply(n, scope, tail);
      case 'index': return this.cIndex(n, scope);
      case 'superIndex': {
        if (!this.inObject(scope)) throw new StaticError(formatLoc(n.loc), "Can't use super outside of an object.");
        const idx = this.c(n.index, scope);
        const loc = n.loc;
        return (env) => {
          const self = env.self!;
          const from = env.sidx - 1;
          if (from < 0) throw rt('attempt to use super when there is no super class.', loc);
          const name = idx(env);
          if (typeof name !== 'string') throw rt(`super index must be string, got ${typeName(name)}.`, loc);
          const v = objectFieldFrom(self, name, from);
          if (v === undefined) throw rt(`field does not exist: ${name}`, loc);
          return v;
        };
      }
      case 'inSuper': {
        if (!this.inObject(scope)) throw new StaticError(formatLoc(n.loc), "Can't use super outside of an object.");
        const key = this.c(n.key, scope);
        const loc = n.loc;
        return (env) => {
          const name = key(env);
          if (typeof name !== 'string') throw rt(`left hand side of e in super must be string, got ${typeName(name)}.`, loc);
          const from = env.sidx - 1;
          if (from < 0) return false;
          return env.self!.find(name, from) >= 0;
        };
      }
      case 'slice': {
        const t = this.c(n.target, scope);
        const a = n.from ? this.c(n.from, scope) : () => null;
        const b = n.to ? this.c(n.to, scope) : () => null;
        const s = n.step ? this.c(n.step, scope) : () => null;
        const loc = n.loc;
        const hooks = this.hooks;
        return (env) => hooks.slice(t(env), a(env), b(env), s(env), loc);
      }
      case 'binary': return this.cBinary(n, scope);
      case 'unary': return this.cUnary(n, scope);
      case 'if': {
        const cond = this.c(n.cond, scope);
        const th = this.c(n.then, scope, tail);
        const el = n.else ? this.c(n.else, scope, tail) : () => null;
        const loc = n.loc;
        return (env) => {
          const c = cond(env);
          if (c === true) return th(env);
          if (c === false) return el(env);
          throw rt(`condition must be boolean, got ${typeName(c)}.`, loc);
        };
      }
      case 'error': {
        const e = this.c(n.expr, scope);
        const loc = n.loc;
        return (env) => {
          const v = e(env);
          throw rt(typeof v === 'string' ? v : toStringValue(v), loc);
        };
      }
      case 'assert': {
        const cond = this.c(n.cond, scope);
        const msg = n.msg ? this.c(n.msg, scope) : null;
        const rest = this.c(n.rest, scope, tail);
        const loc = n.loc;
        return (env) => {
          const c = cond(env);
          if (c === true) return rest(env);
          if (c !== false) throw rt(`condition must be boolean, got ${typeName(c)}.`, loc);
          if (!msg) throw rt('Assertion failed.', loc);
          const m = msg(env);
          throw rt(typeof m === 'string' ? m : toStringValue(m), loc);
        };
      }
      case 'array': {
        const elems = n.elems.map((e) => this.lazy(e, scope));
        const k = elems.length;
        if (k === 0) return () => [];
        let cost = 0;
        for (const e of n.elems) cost += elementCost(e);
        const loc = n.loc;
        return (env) => {
          charge(cost, loc);
          const out: Lazy[] = new Array(k);
          for (let i = 0; i < k; i++) out[i] = elems[i](env);
          return out;
        };
      }
      case 'arrayComp': return this.cArrayComp(n, scope);
      case 'object': return this.cObject(n, scope);
      case 'objectComp': return this.cObjectComp(n, scope);
      case 'applyBrace': {
        const l = this.c(n.left, scope);
        const r = this.c(n.right, scope);
        const loc = n.loc;
        return (env) => plus(l(env), r(env), loc);
      }
      case 'import': {
        const hooks = this.hooks;
        const kind = n.kind;
        const file = n.file;
        const from = this.filename;
        const loc = n.loc;
        return () => hooks.importFile(kind, file, from, loc);
      }
    }
  }

  private inObject(scope: Scope): boolean {
    for (let s: Scope | null = scope; s; s = s.up) if (s.inObject) return true;
    return false;
  }

  private resolveDollar(scope: Scope, loc: Loc): [number, number] {
    let depth = 0;
    for (let s: Scope | null = scope; s; s = s.up, depth++) {
      const i = s.names.get('$');
      if (i !== undefined) return [depth, i];
    }
    throw new StaticError(formatLoc(loc), 'No top-level object found.');
  }

  private bindCodes(binds: Bind[], scope: Scope): { lazy: boolean[]; codes: Code[] } {
    const lazy: boolean[] = [];
    const codes: Code[] = [];
    for (const b of binds) {
      if (b.params) {
        codes.push(this.cFunc(b.params, b.body, scope, b.loc, b.name));
        lazy.push(false);
      } else if (b.body.t === 'func') {
        codes.push(this.cFunc(b.body.params, b.body.body, scope, b.body.loc, b.name));
        lazy.push(false);
      } else if (isConst(b.body)) {
        codes.push(this.c(b.body, scope));
        lazy.push(false);
      } else {
        codes.push(this.c(b.body, scope));
        lazy.push(true);
      }
    }
    return { lazy, codes };
  }

  private cLocal(n: NodeOf<'local'>, scope: Scope, tail: boolean): Code {
    const names = new Map<string, number>();
    n.binds.forEach((b, i) => names.set(b.name, i));
    const inner = new Scope(names, scope, false);
    const { lazy, codes } = this.bindCodes(n.binds, inner);
    const body = this.c(n.body, inner, tail);
    const k = codes.length;
    if (k === 1) {
      const c0 = codes[0];
      if (lazy[0]) {
        return (env) => {
          const vars: Lazy[] = [null];
          const e = new Env(vars, env, env.self, env.sidx);
          vars[0] = new Thunk(c0, e);
          return body(e);
        };
      }
      return (env) => {
        const vars: Lazy[] = [null];
        const e = new Env(vars, env, env.self, env.sidx);
        vars[0] = c0(e);
        return body(e);
      };
    }
    return (env) => {
      const vars: Lazy[] = new Array(k);
      const e = new Env(vars, env, env.self, env.sidx);
      for (let i = 0; i < k; i++) vars[i] = lazy[i] ? new Thunk(codes[i], e) : codes[i](e);
      return body(e);
    };
  }

  private cFunc(params: Param[], bodyN: Node, scope: Scope, loc: Loc, name: string): Code {
    const names = new Map<string, number>();
    for (const p of params) {
      if (names.has(p.name)) throw new StaticError(formatLoc(loc), `Duplicate function parameter: ${p.name}`);
      names.set(p.name, names.size);
    }
    const inner = new Scope(names, scope, false);
    const defaults = params.map((p) => (p.def ? this.c(p.def, inner) : null));
    const body = this.c(bodyN, inner, true);
    const pnames = params.map((p) => p.name);
    return (env) => {
      charge(COST.function, loc);
      return new JFunc(pnames, defaults, body, env, null, name);
    };
  }

  private cApply(n: NodeOf<'apply'>, scope: Scope, tail: boolean): Code {
    const target = this.c(n.target, scope);
    const pos: LazyCode[] = [];
    const named: { name: string; code: LazyCode }[] = [];
    for (const a of n.args) {
      if (a.name === null) pos.push(this.lazy(a.expr, scope));
      else named.push({ name: a.name, code: this.lazy(a.expr, scope) });
    }
    const loc = n.loc;
    const ts = n.tailstrict;
    const k = pos.length;
    if (ts && tail) {
      // Returned to the calling function's loop (constant stack, as libjsonnet's TCO).
      return ((env: Env) => {
        const f = target(env);
        const args: Lazy[] = new Array(k);
        for (let i = 0; i < k; i++) args[i] = pos[i](env);
        const nm = named.length ? named.map((a) => ({ name: a.name, value: a.code(env) })) : null;
        return new TailCall(f, args, nm, loc);
      }) as unknown as Code;
    }
    if (named.length === 0) {
      if (k === 1) {
        const p0 = pos[0];
        return (env) => callFunction(target(env), [p0(env)], null, loc, ts);
      }
      if (k === 2) {
        const p0 = pos[0];
        const p1 = pos[1];
        return (env) => callFunction(target(env), [p0(env), p1(env)], null, loc, ts);
      }
      return (env) => {
        const f = target(env);
        const args: Lazy[] = new Array(k);
        for (let i = 0; i < k; i++) args[i] = pos[i](env);
        return callFunction(f, args, null, loc, ts);
      };
    }
    return (env) => {
      const f = target(env);
      const args: Lazy[] = new Array(k);
      for (let i = 0; i < k; i++) args[i] = pos[i](env);
      const nm = named.map((a) => ({ name: a.name, value: a.code(env) }));
      return callFunction(f, args, nm, loc, ts);
    };
  }

  private cIndex(n: NodeOf<'index'>, scope: Scope): Code {
    const target = this.c(n.target, scope);
    const loc = n.loc;
    const objName = `object <${n.target.t === 'var' ? n.target.name : 'anonymous'}>`;
    if (n.index.t === 'str') {
      const name = n.index.value;
      return (env) => {
        const t = target(env);
        if (t instanceof JObject) {
          const c = t.cache?.get(name);
          if (c !== undefined) return c;
          try {
            return objectField(t, name, loc);
          } catch (e) {
            if (e instanceof RuntimeError && !raisedHere(e, loc)) e.caller(objName, loc);
            throw e;
          }
        }
        return indexValue(t, name, loc);
      };
    }
    const index = this.c(n.index, scope);
    return (env) => {
      const t = target(env);
      const i = index(env);
      try {
        return indexValue(t, i, loc);
      } catch (e) {
        if (e instanceof RuntimeError && !raisedHere(e, loc)) {
          e.caller(t instanceof JObject ? objName : 'thunk <array_element>', loc);
        }
        throw e;
      }
    };
  }

  private cBinary(n: NodeOf<'binary'>, scope: Scope): Code {
    const l = this.c(n.left, scope);
    const r = this.c(n.right, scope);
    const loc = n.loc;
    const op = n.op;
    const numErr = (a: Val, b: Val): never => {
      const ta = typeName(a);
      const tb = typeName(b);
      if (ta !== tb) throw rt(`binary operator ${op} requires matching types, got ${ta} and ${tb}.`, loc);
      throw rt(`binary operator ${op} does not operate on ${ta === 'null' ? 'null' : ta + 's'}.`, loc);
    };
    switch (op) {
      case '+': return (env) => {
        const a = l(env);
        const b = r(env);
        if (typeof a === 'string' && typeof b === 'string') {
          chargeConcat(a.length, b.length, loc);
          return a + b;
        }
        return plus(a, b, loc);
      };
      case '-': return (env) => {
        const a = l(env);
        const b = r(env);
        if (typeof a === 'number' && typeof b === 'number') return checkNumber(a - b, loc);
        return numErr(a, b);
      };
      case '*': return (env) => {
        const a = l(env);
        const b = r(env);
        if (typeof a === 'number' && typeof b === 'number') return checkNumber(a * b, loc);
        return numErr(a, b);
      };
      case '/': return (env) => {
        const a = l(env);
        const b = r(env);
        if (typeof a === 'number' && typeof b === 'number') {
          if (b === 0) throw rt('division by zero.', loc);
          return checkNumber(a / b, loc);
        }
        return numErr(a, b);
      };
      case '%': {
        const hooks = this.hooks;
        return (env) => hooks.percent(l(env), r(env), loc);
      }
      case '==': return (env) => {
        const a = l(env);
        const b = r(env);
        try { return equals(a, b); } catch (e) { if (e instanceof RuntimeError) e.addFrame(loc); throw e; }
      };
      case '!=': return (env) => {
        const a = l(env);
        const b = r(env);
        try { return !equals(a, b); } catch (e) { if (e instanceof RuntimeError) e.addFrame(loc); throw e; }
      };
      case '<': return (env) => {
        const a = l(env);
        const b = r(env);
        if (typeof a === 'number' && typeof b === 'number') return a < b;
        return compare(a, b, loc, op) < 0;
      };
      case '<=': return (env) => {
        const a = l(env);
        const b = r(env);
        if (typeof a === 'number' && typeof b === 'number') return a <= b;
        return compare(a, b, loc, op) <= 0;
      };
      case '>': return (env) => {
        const a = l(env);
        const b = r(env);
        if (typeof a === 'number' && typeof b === 'number') return a > b;
        return compare(a, b, loc, op) > 0;
      };
      case '>=': return (env) => {
        const a = l(env);
        const b = r(env);
        if (typeof a === 'number' && typeof b === 'number') return a >= b;
        return compare(a, b, loc, op) >= 0;
      };
      case '&&': return (env) => {
        const a = l(env);
        if (a === false) return false;
        const b = r(env);
        if (a === true && typeof b === 'boolean') return b;
        return numErr(a, b);
      };
      case '||': return (env) => {
        const a = l(env);
        if (a === true) return true;
        const b = r(env);
        if (a === false && typeof b === 'boolean') return b;
        return numErr(a, b);
      };
      case 'in': return (env) => {
        const a = l(env);
        const b = r(env);
        if (typeof a !== 'string') throw rt(`the left hand side of the 'in' operator should be a string,  got ${typeName(a)}`, loc);
        if (!(b instanceof JObject)) throw rt(`the right hand side of the 'in' operator should be an object, got ${typeName(b)}`, loc);
        return objectHas(b, a, true);
      };
      case '<<': case '>>': case '&': case '|': case '^': return (env) => {
        const a = l(env);
        const b = r(env);
        if (typeof a !== 'number' || typeof b !== 'number') return numErr(a, b);
        const x = toInt64(a);
        const y = toInt64(b);
        switch (op) {
          case '<<':
            if (b < 0) throw rt('shift by negative exponent.', loc);
            return fromInt64(x << (y % 64n));
          case '>>':
            if (b < 0) throw rt('shift by negative exponent.', loc);
            return fromInt64(x >> (y % 64n));
          case '&': return fromInt64(x & y);
          case '|': return fromInt64(x | y);
          default: return fromInt64(x ^ y);
        }
      };
      default:
        throw new StaticError(formatLoc(loc), `not a binary operator: ${op}`);
    }
  }

  private cUnary(n: NodeOf<'unary'>, scope: Scope): Code {
    const e = this.c(n.expr, scope);
    const loc = n.loc;
    const op = n.op;
    return (env) => {
      const v = e(env);
      if (typeof v === 'boolean') {
        if (op === '!') return !v;
        throw rt(`unary operator ${op} does not operate on booleans.`, loc);
      }
      if (typeof v === 'number') {
        switch (op) {
          case '+': return v;
          case '-': return -v;
          case '~': return fromInt64(~toInt64(v));
          default: throw rt(`unary operator ${op} does not operate on numbers.`, loc);
        }
      }
      throw rt(`unary operator ${op} does not operate on type ${typeName(v)}`, loc);
    };
  }

  /** Compiles comprehension specs; `leaf` is called with the innermost env for each binding. */
  private cSpecs(specs: CompSpec[], scope: Scope, compLoc: Loc): { run: (env: Env, leaf: (e: Env) => void) => void; scope: Scope } {
    type Step = (env: Env, leaf: (e: Env) => void) => void;
    const steps: ((next: Step) => Step)[] = [];
    let sc = scope;
    for (const s of specs) {
      if (s.kind === 'for') {
        const arr = this.c(s.expr, sc);
        sc = new Scope(new Map([[s.name, 0]]), sc, false);
        const loc = compLoc;
        steps.push((next) => (env, leaf) => {
          const a = arr(env);
          if (!Array.isArray(a)) throw rt('In comprehension, can only iterate over array.', loc);
          for (let i = 0; i < a.length; i++) {
            if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
            next(new Env([a[i]], env, env.self, env.sidx), leaf);
          }
        });
      } else {
        const cond = this.c(s.cond, sc);
        const loc = s.loc;
        steps.push((next) => (env, leaf) => {
          const c = cond(env);
          if (c === true) next(env, leaf);
          else if (c !== false) throw rt(`condition must be boolean, got ${typeName(c)}.`, loc);
        });
      }
    }
    let run: Step = (env, leaf) => leaf(env);
    for (let i = steps.length - 1; i >= 0; i--) run = steps[i](run);
    return { run, scope: sc };
  }

  private cArrayComp(n: NodeOf<'arrayComp'>, scope: Scope): Code {
    const { run, scope: inner } = this.cSpecs(n.specs, scope, n.loc);
    const body = this.lazy(n.body, inner);
    const cost = elementCost(n.body);
    const loc = n.loc;
    return (env) => {
      const out: Lazy[] = [];
      run(env, (e) => {
        // Nested `for`s multiply: the length is checked as the array grows, the elements charged
        // by 256 (and the rest at the end).
        const n = out.length;
        if (n >= budget.maxArrayLength) checkArrayLength(n + 1, loc);
        if ((n & 255) === 255) charge(256 * cost, loc);
        out.push(body(e));
      });
      charge((out.length & 255) * cost, loc);
      return out;
    };
  }

  private objectScope(locals: Bind[], scope: Scope): { sc: Scope; dollar: boolean } {
    const names = new Map<string, number>();
    locals.forEach((b, i) => names.set(b.name, i));
    let dollar = false;
    let hasDollar = false;
    for (let s: Scope | null = scope; s; s = s.up) if (s.names.has('$')) hasDollar = true;
    if (!hasDollar) {
      dollar = true;
      names.set('$', locals.length);
    }
    return { sc: new Scope(names, scope, true), dollar };
  }

  private localCodes(locals: Bind[], sc: Scope): Code[] {
    const { lazy, codes } = this.bindCodes(locals, sc);
    // Thunks are created for every local by objectFrame; non-lazy codes are cheap.
    void lazy;
    return codes;
  }

  private cObject(n: NodeOf<'object'>, scope: Scope): Code {
    const { sc, dollar } = this.objectScope(n.locals, scope);
    const locals = this.localCodes(n.locals, sc);
    const asserts: Code[] = n.asserts.map((a) => {
      const cond = this.c(a.cond, sc);
      const msg = a.msg ? this.c(a.msg, sc) : null;
      const loc = a.loc;
      return (env: Env) => {
        const c = cond(env);
        if (c === true) return null;
        if (c !== false) throw rt(`condition must be boolean, got ${typeName(c)}.`, loc);
        if (!msg) throw rt('Object assertion failed.', loc);
        const m = msg(env);
        throw rt(typeof m === 'string' ? m : toStringValue(m), loc);
      };
    });
    const staticFields = new Map<string, FieldDef>();
    const dynFields: { name: Code; def: FieldDef; loc: Loc }[] = [];
    for (const f of n.fields) {
      const code = f.params ? this.cFunc(f.params, f.body, sc, f.loc, typeof f.name === 'string' ? f.name : 'anonymous') : this.c(f.body, sc);
      const def: FieldDef = { hide: f.hide, plus: f.plus, code, env: null, loc: f.body.loc };
      if (typeof f.name === 'string') staticFields.set(f.name, def);
      else dynFields.push({ name: this.c(f.name, scope), def, loc: f.loc });
    }
    const objLoc = n.loc;
    if (dynFields.length === 0) {
      return (env) => {
        charge(COST.object, objLoc);
        return new JObject([{ fields: staticFields, locals, dollar, asserts, env }]);
      };
    }
    const cost = COST.object + (staticFields.size + dynFields.length) * COST.element;
    return (env) => {
      charge(cost, objLoc);
      const fields = new Map(staticFields);
      for (const d of dynFields) {
        const name = d.name(env);
        if (name === null) continue;
        if (typeof name !== 'string') throw rt('field name was not a string.', d.loc);
        if (fields.has(name)) throw rt(`duplicate field name: "${name}"`, d.loc);
        fields.set(name, d.def);
      }
      return new JObject([{ fields, locals, dollar, asserts, env }]);
    };
  }

  private cObjectComp(n: NodeOf<'objectComp'>, scope: Scope): Code {
    const { run, scope: inner } = this.cSpecs(n.specs, scope, n.loc);
    const key = this.c(n.key, inner);
    const { sc, dollar } = this.objectScope(n.locals, inner);
    const locals = this.localCodes(n.locals, sc);
    const value = this.c(n.value, sc);
    const plusF = n.plus;
    const loc = n.loc;
    const valueLoc = n.value.loc;
    return (env) => {
      charge(COST.object, loc);
      const fields = new Map<string, FieldDef>();
      run(env, (e) => {
        const k = key(e);
        if (k === null) return;
        if (typeof k !== 'string') throw rt(`field must be string, got: ${typeName(k)}`, loc);
        if (fields.has(k)) throw rt(`duplicate field name: "${k}"`, loc);
        charge(COST.field, loc);
        fields.set(k, { hide: 0, plus: plusF, code: value, env: e, loc: valueLoc });
      });
      const layer: Layer = { fields, locals, dollar, asserts: [], env };
      return new JObject([layer]);
    };
  }
}

function raisedHere(e: RuntimeError, loc: Loc): boolean {
  return e.frames.length === 0 || (e.frames.length === 1 && e.frames[0].loc === formatLoc(loc));
}

/** `t[i]` for arrays, strings and objects. */
export function indexValue(t: Val, i: Val, loc: Loc | undefined): Val {
  if (Array.isArray(t)) {
    if (typeof i === 'string') throw rt(`attempted index an array with string "${escapeJsonStringBody(i)}".`, loc);
    if (typeof i !== 'number') throw rt(`array index must be number, got ${typeName(i)}.`, loc);
    const idx = Math.floor(i);
    if (idx < 0 || idx >= t.length) throw rt(`array bounds error: ${cppNum(idx)} not within [0, ${t.length})`, loc);
    if (idx !== i) throw rt(`array index was not integer: ${cppNum(i)}`, loc);
    return force(t[idx]);
  }
  if (t instanceof JObject) {
    if (typeof i !== 'string') throw rt(`object index must be string, got ${typeName(i)}.`, loc);
    return objectField(t, i, loc);
  }
  if (typeof t === 'string') {
    if (typeof i !== 'number') throw rt(`string index must be a number, got ${typeName(i)}.`, loc);
    const idx = Math.trunc(i);
    if (!hasSurrogates(t)) {
      if (idx < 0 || idx >= t.length) throw rt(`string bounds error: ${idx} not within [0, ${t.length})`, loc);
      return t[idx];
    }
    const n = cpLength(t);
    if (idx < 0 || idx >= n) throw rt(`string bounds error: ${idx} not within [0, ${n})`, loc);
    return cpAt(t, idx);
  }
  throw rt(`can only index objects, strings, and arrays, got ${typeName(t)}.`, loc);
}

/** A number as a C++ ostream prints it by default (`%g`, 6 significant digits). */
export function cppNum(n: number): string {
  if (Number.isInteger(n) && Math.abs(n) < 1e6) return String(n);
  if (!Number.isFinite(n)) return Number.isNaN(n) ? 'nan' : n > 0 ? 'inf' : '-inf';
  const exp = Math.floor(Math.log10(Math.abs(n)));
  const p = Number(n.toExponential(5)).toExponential(5);
  const [mant, es] = p.split('e');
  const e = Number(es);
  if (e < -4 || e >= 6) {
    const m = mant.includes('.') ? mant.replace(/0+$/, '').replace(/\.$/, '') : mant;
    return `${m}e${e < 0 ? '-' : '+'}${String(Math.abs(e)).padStart(2, '0')}`;
  }
  void exp;
  let s = n.toFixed(Math.max(0, 5 - e));
  if (s.includes('.')) s = s.replace(/0+$/, '').replace(/\.$/, '');
  return s;
}

export type { JArr };
