/** Runtime values of the Jsonnet evaluator: thunks, environments, objects, functions. */
import { Loc, RuntimeError, formatLoc } from './errors.js';
import { COST, LOOP_CHECK, LimitError, charge, chargeArray, chargeConcat, checkTime, tick } from './limits.js';
import { compareCodePoints, manifestJsonInline, type Json } from './manifest.js';

export type Val = null | boolean | number | string | JArr | JObject | JFunc;
export type Lazy = Val | Thunk;
export type JArr = Lazy[];
/** Compiled code: evaluates in an environment. */
export type Code = (env: Env) => Val;

/** A frame of variable slots, linked to the enclosing frame; carries the `self` binding. */
export class Env {
  constructor(
    public readonly vars: Lazy[],
    public readonly up: Env | null,
    public readonly self: JObject | null,
    public readonly sidx: number,
  ) {}
}

/** Call-by-need thunk. */
export class Thunk {
  state = 0; // 0 = pending, 1 = running, 2 = done
  value: Val = null;
  constructor(
    private code: Code | null,
    private env: Env | null,
  ) {}
  get(): Val {
    if (this.state === 2) return this.value;
    if (this.state === 1) throw new RuntimeError('max stack frames exceeded.');
    this.state = 1;
    tick();
    if (++stackState.depth > stackState.max) {
      stackState.depth--;
      this.state = 0;
      throw new RuntimeError('max stack frames exceeded.');
    }
    try {
      this.value = this.code!(this.env!);
    } catch (e) {
      this.state = 0;
      throw e;
    } finally {
      stackState.depth--;
    }
    this.state = 2;
    this.code = null;
    this.env = null;
    return this.value;
  }
}

/** A thunk around an arbitrary JS closure. */
export class FnThunk extends Thunk {
  constructor(fn: () => Val) {
    super(() => fn(), null as unknown as Env);
  }
}

export function force(x: Lazy): Val {
  return x instanceof Thunk ? x.get() : x;
}

// ---------------------------------------------------------------------------------------------
// Objects

/** Field visibility: 0 inherit (`:`), 1 hidden (`::`), 2 forced visible (`:::`). */
export type Hide = 0 | 1 | 2;

export interface FieldDef {
  hide: Hide;
  /** `+:` — combine with the super field when it exists */
  plus: boolean;
  /** Compiled body, evaluated in the object frame; null when `value` is set. */
  code: Code | null;
  /** The environment the object frame is created in, when not the layer's (comprehensions). */
  env: Env | null;
  /** A pre-made value (native objects). */
  value?: Lazy;
  /** Location of the body (stack traces). */
  loc?: Loc;
}

export interface Layer {
  fields: Map<string, FieldDef>;
  /** Object locals compiled in the object frame (letrec), plus `$` if `dollar`. */
  locals: Code[];
  dollar: boolean;
  asserts: Code[];
  /** Outer environment of the layer (asserts). */
  env: Env | null;
}

const layerVisibility = new WeakMap<Map<string, FieldDef>, Map<string, Hide>>();

export class JObject {
  cache: Map<string, Val> | null = null;
  frames: (Env | undefined)[] | null = null;
  assertsState = 0; // 0 not run, 1 running/done
  private visible: Map<string, Hide> | null = null;
  constructor(public readonly layers: Layer[]) {}

  hasAsserts(): boolean {
    for (const l of this.layers) if (l.asserts.length > 0) return true;
    return false;
  }

  /** Field names and their merged visibility (hidden = 1). Names in insertion order. */
  fieldVisibility(): Map<string, Hide> {
    if (this.visible) return this.visible;
    if (this.layers.length === 1) {
      // Shared by every object made from the same field table (e.g. one object literal).
      const fields = this.layers[0].fields;
      let v = layerVisibility.get(fields);
      if (!v) {
        v = new Map();
        for (const [k, f] of fields) v.set(k, f.hide);
        layerVisibility.set(fields, v);
      }
      this.visible = v;
      return v;
    }
    const m = new Map<string, Hide>();
    for (const l of this.layers) {
      for (const [k, f] of l.fields) {
        if (f.hide === 0) {
          if (!m.has(k)) m.set(k, 0);
        } else m.set(k, f.hide);
      }
    }
    this.visible = m;
    return m;
  }

  /** Index of the top-most layer at or below `from` defining `name`, or -1. */
  find(name: string, from: number): number {
    for (let i = from; i >= 0; i--) if (this.layers[i].fields.has(name)) return i;
    return -1;
  }
}

/** Frame in which fields and asserts of layer `idx` of `self` are evaluated. */
export function objectFrame(self: JObject, idx: number, fieldEnv0: Env | null): Env {
  const layer = self.layers[idx];
  const cacheable = fieldEnv0 === null;
  const fieldEnv = fieldEnv0 ?? layer.env;
  if (cacheable && self.frames) {
    const f = self.frames[idx];
    if (f) return f;
  }
  const n = layer.locals.length;
  const vars: Lazy[] = new Array(n + (layer.dollar ? 1 : 0));
  const env = new Env(vars, fieldEnv, self, idx);
  for (let i = 0; i < n; i++) vars[i] = new Thunk(layer.locals[i], env);
  if (layer.dollar) vars[n] = self;
  if (cacheable) {
    if (!self.frames) self.frames = new Array(self.layers.length);
    self.frames[idx] = env;
  }
  return env;
}

export function checkAsserts(obj: JObject): void {
  if (obj.assertsState !== 0) return;
  obj.assertsState = 1;
  for (let i = 0; i < obj.layers.length; i++) {
    const l = obj.layers[i];
    if (l.asserts.length === 0) continue;
    const env = objectFrame(obj, i, null);
    for (const a of l.asserts) a(env);
  }
}

/** Evaluate field `name` of `self` looking from layer `from` downward (super access); undefined if absent. */
export function objectFieldFrom(self: JObject, name: string, from: number): Val | undefined {
  const idx = self.find(name, from);
  if (idx < 0) return undefined;
  const f = self.layers[idx].fields.get(name)!;
  let v: Val;
  if (f.value !== undefined) v = force(f.value);
  else {
    if (++stackState.depth > stackState.max) {
      stackState.depth--;
      throw new RuntimeError('max stack frames exceeded.');
    }
    try {
      v = f.code!(objectFrame(self, idx, f.env));
    } finally {
      stackState.depth--;
    }
  }
  if (f.plus) {
    const sup = objectFieldFrom(self, name, idx - 1);
    if (sup !== undefined) v = plus(sup, v, undefined);
  }
  return v;
}

export function objectField(obj: JObject, name: string, loc?: Loc): Val {
  if (obj.assertsState === 0) checkAsserts(obj);
  let cache = obj.cache;
  if (cache) {
    const c = cache.get(name);
    if (c !== undefined) return c;
  } else cache = obj.cache = new Map();
  const v = objectFieldFrom(obj, name, obj.layers.length - 1);
  if (v === undefined) throw withLoc(new RuntimeError(`field does not exist: ${name}`), loc);
  cache.set(name, v);
  return v;
}

export function objectHas(obj: JObject, name: string, includeHidden: boolean): boolean {
  if (obj.layers.length === 1) {
    // One layer's visibility is its fields' own: no merged table to build (objects made from
    // JSON, e.g. a template's Body(), get a field table of their own each).
    const f = obj.layers[0].fields.get(name);
    return f !== undefined && (includeHidden || f.hide !== 1);
  }
  const h = obj.fieldVisibility().get(name);
  if (h === undefined) return false;
  return includeHidden || h !== 1;
}

const sortedVisibleCache = new WeakMap<Map<string, Hide>, string[]>();

/** Visible field names in code-point order (shared by objects with the same field table). */
export function visibleFieldsSorted(obj: JObject): string[] {
  const vis = obj.fieldVisibility();
  let r = sortedVisibleCache.get(vis);
  if (!r) {
    r = [];
    for (const [k, h] of vis) if (h !== 1) r.push(k);
    r.sort(compareCodePoints);
    sortedVisibleCache.set(vis, r);
  }
  return r;
}

export function objectFields(obj: JObject, includeHidden: boolean): string[] {
  if (!includeHidden) {
    const sorted = visibleFieldsSorted(obj);
    charge(sorted.length * COST.element);
    return sorted.slice();
  }
  const out: string[] = [];
  for (const [k, h] of obj.fieldVisibility()) if (includeHidden || h !== 1) out.push(k);
  charge(out.length * COST.element);
  out.sort(compareCodePoints);
  return out;
}

/** A plain object of pre-made values. */
export function simpleObject(fields: Record<string, Lazy> | Map<string, Lazy>, hide: Hide = 0): JObject {
  const m = new Map<string, FieldDef>();
  const entries = fields instanceof Map ? fields.entries() : Object.entries(fields);
  for (const [k, v] of entries) m.set(k, { hide, plus: false, code: null, env: null, value: v });
  return new JObject([{ fields: m, locals: [], dollar: false, asserts: [], env: null }]);
}

export function extendObject(a: JObject, b: JObject): JObject {
  // The new object only: its layers are shared references (charging their copy would make the
  // common `acc + { [k]: v }` fold quadratic in the budget, as it is not in libjsonnet).
  charge(COST.object);
  return new JObject(a.layers.concat(b.layers));
}

// ---------------------------------------------------------------------------------------------
// Functions

export type Native = (args: Val[], loc?: Loc) => Val;

export class JFunc {
  /** For natives: default values of trailing parameters (undefined = required). */
  nativeDefaults: (Val | undefined)[] | null = null;
  constructor(
    public readonly params: string[],
    /** Default value codes, evaluated in the call frame. */
    public readonly defaults: (Code | null)[],
    public readonly body: Code | null,
    public readonly env: Env | null,
    public readonly native: Native | null = null,
    public readonly name = 'anonymous',
  ) {}
}

export function nativeFunc(name: string, params: string[], fn: Native): JFunc {
  return new JFunc(params, params.map(() => null), null, null, fn, name);
}

export const stackState = { depth: 0, max: 500 };

export function withLoc(e: RuntimeError, loc: Loc | undefined): RuntimeError {
  return e.at(loc);
}

/** Forces a thunk referenced at `loc`, adding a `thunk <name>` frame to errors. */
export function forceAt(x: Thunk, name: string, loc: Loc): Val {
  try {
    return x.get();
  } catch (e) {
    if (e instanceof RuntimeError) e.caller(`thunk <${name}>`, loc);
    throw e;
  }
}

/** A call in tail position of a function body with `tailstrict`: run by the caller's loop. */
export class TailCall {
  constructor(
    public readonly f: Val,
    public readonly positional: Lazy[],
    public readonly named: { name: string; value: Lazy }[] | null,
    public readonly loc: Loc | undefined,
  ) {}
}

/** Call a function value with positional and named arguments (lazy). */
export function callFunction(
  f: Val,
  positional: Lazy[],
  named: { name: string; value: Lazy }[] | null,
  loc: Loc | undefined,
  tailstrict = false,
): Val {
  if (!(f instanceof JFunc)) throw withLoc(new RuntimeError(`only functions can be called, got ${typeName(f)}`), loc);
  tick();
  if (++stackState.depth > stackState.max) {
    stackState.depth--;
    throw withLoc(new RuntimeError('max stack frames exceeded.'), loc);
  }
  let cur: JFunc = f;
  let curLoc = loc;
  try {
    let r = invoke(f, positional, named, loc, tailstrict);
    while (r instanceof TailCall) {
      if (!(r.f instanceof JFunc)) throw withLoc(new RuntimeError(`only functions can be called, got ${typeName(r.f)}`), r.loc);
      cur = r.f;
      curLoc = r.loc;
      tick();
      r = invoke(r.f, r.positional, r.named, r.loc, true);
    }
    return r;
  } catch (e) {
    if (e instanceof RangeError) {
      // JS stack overflow, or a too long string / array.
      const msg = /call stack/i.test(e.message) ? 'max stack frames exceeded.' : e.message;
      throw withLoc(new RuntimeError(msg), curLoc);
    }
    // A limit crossed inside a builtin (or a helper it calls) is reported where the builtin was called.
    if (e instanceof LimitError && e.frames.length === 0) e.at(curLoc);
    if (e instanceof RuntimeError && !cur.native) {
      if (e.skipOnce) e.skipOnce = false;
      else e.caller(`function <${cur.name}>`, curLoc);
    }
    throw e;
  } finally {
    stackState.depth--;
  }
}

function bindErr(msg: string, loc: Loc | undefined): RuntimeError {
  const e = new RuntimeError(msg).at(loc);
  e.skipOnce = true;
  return e;
}

function invoke(
  f: JFunc,
  positional: Lazy[],
  named: { name: string; value: Lazy }[] | null,
  loc: Loc | undefined,
  tailstrict: boolean,
): Val | TailCall {
  const params = f.params;
  const np = params.length;
  if (positional.length > np) {
    throw bindErr(`too many args, function has ${np} parameter(s)`, loc);
  }
  let vars: Lazy[];
  if (named === null && positional.length === np) {
    vars = positional;
  } else {
    vars = new Array(np);
    for (let i = 0; i < positional.length; i++) vars[i] = positional[i];
    if (named) {
      for (const a of named) {
        const idx = params.indexOf(a.name);
        if (idx >= 0 && vars[idx] !== undefined) {
          throw bindErr(`binding parameter a second time: ${a.name}`, loc);
        }
        if (idx < 0) throw bindErr(`function has no parameter ${a.name}`, loc);
        vars[idx] = a.value;
      }
    }
  }
  if (f.native) {
    const args: Val[] = new Array(np);
    for (let i = 0; i < np; i++) {
      let a: Lazy | undefined = vars[i];
      if (a === undefined && f.nativeDefaults) a = f.nativeDefaults[i];
      if (a === undefined) throw withLoc(new RuntimeError(`function parameter ${params[i]} not bound in call.`), loc);
      args[i] = force(a);
    }
    return f.native(args, loc);
  }
  const env = new Env(vars, f.env, f.env!.self, f.env!.sidx);
  for (let i = 0; i < np; i++) {
    if (vars[i] === undefined) {
      const d = f.defaults[i];
      if (d === null) throw bindErr(`function parameter ${params[i]} not bound in call.`, loc);
      vars[i] = new Thunk(d, env);
    }
  }
  if (tailstrict) for (let i = 0; i < np; i++) force(vars[i]);
  return (f.body as unknown as (env: Env) => Val | TailCall)(env);
}

// ---------------------------------------------------------------------------------------------
// Helpers

export function typeName(v: Val): string {
  if (v === null) return 'null';
  switch (typeof v) {
    case 'boolean': return 'boolean';
    case 'number': return 'number';
    case 'string': return 'string';
  }
  if (Array.isArray(v)) return 'array';
  if (v instanceof JObject) return 'object';
  return 'function';
}

export function checkNumber(n: number, loc?: Loc): number {
  if (Number.isFinite(n)) return n;
  if (Number.isNaN(n)) throw withLoc(new RuntimeError('not a number'), loc);
  throw withLoc(new RuntimeError('overflow'), loc);
}

const SURROGATE = /[\uD800-\uDFFF]/;
export function hasSurrogates(s: string): boolean {
  return SURROGATE.test(s);
}
export function cpLength(s: string): number {
  if (!SURROGATE.test(s)) return s.length;
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 0xd800 && c < 0xdc00 && i + 1 < s.length) {
      const d = s.charCodeAt(i + 1);
      if (d >= 0xdc00 && d < 0xe000) i++;
    }
    n++;
  }
  return n;
}
let lastCpString = '';
let lastCpArray: string[] = [];
/** Code points of a string (one-entry cache: loops index the same string repeatedly). */
export function cpArray(s: string): string[] {
  chargeArray(s.length, COST.element);
  if (!SURROGATE.test(s)) return s.split('');
  if (s === lastCpString) return lastCpArray.slice();
  lastCpString = s;
  lastCpArray = Array.from(s);
  return lastCpArray.slice();
}

/** i-th code point of a string containing surrogates. */
export function cpAt(s: string, i: number): string {
  if (s !== lastCpString) {
    lastCpString = s;
    lastCpArray = Array.from(s);
  }
  return lastCpArray[i];
}

/**
 * Materialise a value as plain JSON (runs asserts, drops hidden fields). Each array element and
 * object field is charged COST.output: its copy and the text a manifestation then writes for it
 * (the strings are shared, and the text is held to the string length limit as it grows).
 */
export function materialize(v: Val, path: string[] = []): Json {
  if (v === null || typeof v !== 'object') return v as Json;
  if (Array.isArray(v)) {
    charge(v.length * COST.output);
    const out: Json[] = new Array(v.length);
    for (let i = 0; i < v.length; i++) out[i] = materialize(force(v[i]), path);
    return out;
  }
  if (v instanceof JObject) {
    checkAsserts(v);
    const out: { [k: string]: Json } = {};
    const fields = visibleFieldsSorted(v);
    charge(fields.length * COST.output);
    // Fields in code-point order, as libjsonnet manifests them (which error comes first).
    for (const k of fields) {
      let fv: Val;
      try {
        fv = objectField(v, k);
      } catch (e) {
        // The field's frame, as libjsonnet names it.
        if (e instanceof RuntimeError && e.frames.length > 0) e.rename('object <anonymous>');
        throw e;
      }
      try {
        const m = materialize(fv, path);
        if (k === '__proto__') Object.defineProperty(out, k, { value: m, enumerable: true, writable: true, configurable: true });
        else out[k] = m;
      } catch (e) {
        if (e instanceof RuntimeError) {
          const idx = v.find(k, v.layers.length - 1);
          const loc = v.layers[idx].fields.get(k)?.loc;
          if (loc) e.push(formatLoc(loc), 'object <anonymous>');
        }
        throw e;
      }
    }
    return out;
  }
  throw new RuntimeError("couldn't manifest function in JSON output.");
}

export function toStringValue(v: Val): string {
  if (typeof v === 'string') return v;
  return manifestJsonInline(materialize(v));
}

/** `a + b` */
export function plus(a: Val, b: Val, loc: Loc | undefined): Val {
  const ta = typeof a;
  const tb = typeof b;
  if (ta === 'number' && tb === 'number') return checkNumber((a as number) + (b as number), loc);
  if (ta === 'string' || tb === 'string') {
    const x = toStringValue(a);
    const y = toStringValue(b);
    chargeConcat(x.length, y.length, loc);
    return x + y;
  }
  if (Array.isArray(a) && Array.isArray(b)) {
    chargeArray(a.length + b.length, COST.element, loc);
    return a.concat(b);
  }
  if (a instanceof JObject && b instanceof JObject) return extendObject(a, b);
  const na = typeName(a);
  const nb = typeName(b);
  if (na !== nb) throw withLoc(new RuntimeError(`binary operator + requires matching types, got ${na} and ${nb}.`), loc);
  throw withLoc(new RuntimeError(`binary operator + does not operate on ${na === 'null' ? 'null' : na + 's'}.`), loc);
}

export function compareStrings(a: string, b: string): number {
  return compareCodePoints(a, b);
}

/** Deep equality as std.equals (hidden fields ignored). */
export function equals(a: Val, b: Val): boolean {
  if (a === b && (a === null || typeof a !== 'object')) return true;
  const ta = typeName(a);
  const tb = typeName(b);
  if (ta !== tb) return false;
  switch (ta) {
    case 'array': {
      const x = a as JArr;
      const y = b as JArr;
      if (x.length !== y.length) return false;
      for (let i = 0; i < x.length; i++) {
        if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
        if (!equals(force(x[i]), force(y[i]))) return false;
      }
      return true;
    }
    case 'object': {
      const x = a as JObject;
      const y = b as JObject;
      const fx = objectFields(x, false);
      const fy = objectFields(y, false);
      if (fx.length !== fy.length) return false;
      for (let i = 0; i < fx.length; i++) if (fx[i] !== fy[i]) return false;
      for (const k of fx) if (!equals(objectField(x, k), objectField(y, k))) return false;
      return true;
    }
    case 'function':
      return fnEqErr();
    default:
      return a === b;
  }
}

function fnEqErr(): never {
  throw new RuntimeError('cannot test equality of functions');
}

/** Three-way comparison of `<`-comparable values. */
export function compare(a: Val, b: Val, loc: Loc | undefined, op: string): number {
  const ta = typeName(a);
  const tb = typeName(b);
  if (ta !== tb) throw withLoc(new RuntimeError(`binary operator ${op} requires matching types, got ${ta} and ${tb}.`), loc);
  switch (ta) {
    case 'number':
      return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
    case 'string':
      return compareStrings(a as string, b as string);
    case 'array':
      return compareArrays(a as JArr, b as JArr, loc);
    default:
      throw withLoc(new RuntimeError(`binary operator ${op} does not operate on ${ta === 'null' ? 'null' : ta + 's'}.`), loc);
  }
}

const TWO_63 = 2 ** 63;

/** C++ `(int64_t)d` on x86-64: out of range (and NaN) gives INT64_MIN. */
/** std.__compare_array of std.jsonnet. */
function compareArrays(x: JArr, y: JArr, loc: Loc | undefined): number {
  const n = Math.min(x.length, y.length);
  for (let i = 0; i < n; i++) {
    const c = compareElem(force(x[i]), force(y[i]), loc);
    if (c !== 0) return c;
  }
  return x.length < y.length ? -1 : x.length > y.length ? 1 : 0;
}

/** std.__compare of std.jsonnet. */
function compareElem(a: Val, b: Val, loc: Loc | undefined): number {
  const ta = typeName(a);
  const tb = typeName(b);
  if (ta !== tb) throw withLoc(new RuntimeError(`Comparison requires matching types. Got ${ta} and ${tb}`), loc);
  switch (ta) {
    case 'array': return compareArrays(a as JArr, b as JArr, loc);
    case 'function': case 'object': case 'boolean':
      throw withLoc(new RuntimeError(`Values of type ${ta} are not comparable.`), loc);
    case 'null': throw withLoc(new RuntimeError('binary operator < does not operate on null.'), loc);
    case 'string': return compareStrings(a as string, b as string);
    default: return (a as number) < (b as number) ? -1 : (a as number) > (b as number) ? 1 : 0;
  }
}

export function toInt64(n: number): bigint {
  if (!Number.isFinite(n)) return -(1n << 63n);
  const t = Math.trunc(n);
  if (t >= TWO_63 || t < -TWO_63) return -(1n << 63n);
  return BigInt(t);
}
export function fromInt64(b: bigint): number {
  return Number(BigInt.asIntN(64, b));
}
