/** The builtin functions libjsonnet 0.20 implements natively (core/vm.cpp), plus native
 * replacements of hot std.jsonnet functions with identical results. */
import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { Loc, RuntimeError } from './errors.js';
import { JsonParseError, parseJsonText } from './json.js';
import { stdFormat } from './format.js';
import {
  COST, LOOP_CHECK, LimitError, affordable, budget, charge, chargeArray, chargeString, checkArrayLength, checkStringLength, checkTime, tick,
} from './limits.js';
import { compareCodePoints, manifestJsonEx, stdEscapeStringJson } from './manifest.js';
import {
  FnThunk, JArr, JFunc, JObject, Lazy, Val, callFunction, checkNumber, cpArray, cpLength, equals, force,
  compare, hasSurrogates, materialize, nativeFunc, plus, toStringValue, objectFields, objectHas, simpleObject, typeName, withLoc,
} from './values.js';

export interface BuiltinContext {
  /** The std.jsonnet definition of a function (to reproduce its exact errors on odd inputs). */
  stdJsonnet(name: string): Val;
  extVar(name: string, loc?: Loc): Val;
  nativeCallback(name: string): Val;
  trace(msg: string, loc?: Loc): void;
}

function rt(msg: string, loc?: Loc): RuntimeError {
  return withLoc(new RuntimeError(msg), loc);
}

function validate(name: string, args: Val[], types: string[], loc?: Loc): void {
  let ok = true;
  for (let i = 0; i < types.length; i++) if (typeName(args[i]) !== types[i]) ok = false;
  if (!ok) throw rt(`Builtin function ${name} expected (${types.join(', ')}) but got (${args.map(typeName).join(', ')})`, loc);
}

function num(loc: Loc | undefined, n: number): number {
  return checkNumber(n, loc);
}

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
const HI = (() => {
  f64[0] = 1;
  return u32[1] === 0x3ff00000 ? 1 : 0;
})();

/** C `frexp`: d = m * 2^e with 0.5 <= |m| < 1 (exact, from the bits). */
export function frexp(d: number): [number, number] {
  if (d === 0 || !Number.isFinite(d)) return [d, 0];
  let scale = 0;
  f64[0] = d;
  if (((u32[HI] >>> 20) & 0x7ff) === 0) {
    // subnormal: normalise first
    f64[0] = d * 2 ** 64;
    scale = -64;
  }
  const bexp = (u32[HI] >>> 20) & 0x7ff;
  const e = bexp - 1022 + scale;
  u32[HI] = (u32[HI] & 0x800fffff) | (1022 << 20);
  return [f64[0], e];
}

export function encodeUtf8(s: string): number[] {
  return Array.from(Buffer.from(s, 'utf8'));
}

/**
 * JSON → Jsonnet value, its arrays and objects charged as they are copied: a YAML alias makes a
 * small text a large tree (the parser shares the aliased node, this copy does not). Strings are
 * shared, not copied.
 */
export function fromJson(j: unknown): Val {
  if (j === null || typeof j !== 'object') return j as Val;
  tick();
  if (Array.isArray(j)) {
    chargeArray(j.length, COST.element);
    return j.map(fromJson);
  }
  const m = new Map<string, Lazy>();
  const entries = Object.entries(j as Record<string, unknown>);
  charge(COST.object + entries.length * COST.field);
  for (const [k, v] of entries) m.set(k, fromJson(v));
  return simpleObject(m);
}

interface YamlLib {
  loadAll(s: string, it: undefined, opts: { schema: unknown }): unknown[];
  JSON_SCHEMA?: unknown;
  CORE_SCHEMA?: unknown;
}
let yamlLib: YamlLib | null | undefined;
/** js-yaml (a dependency; loaded on first use of std.parseYaml). */
function loadYaml(): YamlLib | null {
  if (yamlLib === undefined) {
    try {
      yamlLib = createRequire(import.meta.url)('js-yaml') as YamlLib;
    } catch {
      yamlLib = null;
    }
  }
  return yamlLib;
}

function substr(s: string, from: number, len: number): string {
  if (!hasSurrogates(s)) return s.substr(from, len);
  return cpArray(s).slice(from, from + len).join('');
}

export function makeBuiltins(ctx: BuiltinContext): Map<string, JFunc> {
  const b = new Map<string, JFunc>();
  const def = (name: string, params: string[], fn: (args: Val[], loc?: Loc) => Val): void => {
    b.set(name, nativeFunc(name, params, fn));
  };
  const math = (name: string, f: (x: number) => number): void =>
    def(name, ['x'], (a, loc) => {
      validate(name, a, ['number'], loc);
      return num(loc, f(a[0] as number));
    });

  def('makeArray', ['sz', 'func'], (a, loc) => {
    validate('makeArray', a, ['number', 'function'], loc);
    const sz = Math.trunc(a[0] as number);
    if (sz < 0) throw rt(`makeArray requires size >= 0, got ${sz}`, loc);
    const f = a[1] as JFunc;
    if (f.params.length !== 1) throw rt(`makeArray function must take 1 param, got: ${f.params.length}`, loc);
    chargeArray(sz, COST.element + COST.lazyElement, loc);
    const out: Lazy[] = new Array(sz);
    for (let i = 0; i < sz; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      out[i] = new FnThunk(() => callFunction(f, [i], null, loc));
    }
    return out;
  });
  def('pow', ['x', 'n'], (a, loc) => {
    validate('pow', a, ['number', 'number'], loc);
    return num(loc, Math.pow(a[0] as number, a[1] as number));
  });
  math('floor', Math.floor);
  math('ceil', Math.ceil);
  math('sqrt', Math.sqrt);
  math('sin', Math.sin);
  math('cos', Math.cos);
  math('tan', Math.tan);
  math('asin', Math.asin);
  math('acos', Math.acos);
  math('atan', Math.atan);
  def('log', ['n'], (a, loc) => {
    validate('log', a, ['number'], loc);
    return num(loc, Math.log(a[0] as number));
  });
  def('exp', ['n'], (a, loc) => {
    validate('exp', a, ['number'], loc);
    return num(loc, Math.exp(a[0] as number));
  });
  def('mantissa', ['n'], (a, loc) => {
    validate('mantissa', a, ['number'], loc);
    return num(loc, frexp(a[0] as number)[0]);
  });
  def('exponent', ['n'], (a, loc) => {
    validate('exponent', a, ['number'], loc);
    return num(loc, frexp(a[0] as number)[1]);
  });
  def('type', ['x'], (a) => typeName(a[0]));
  def('filter', ['func', 'arr'], (a, loc) => {
    validate('filter', a, ['function', 'array'], loc);
    const f = a[0] as JFunc;
    if (f.params.length !== 1) throw rt('filter function takes 1 parameter.', loc);
    const arr = a[1] as JArr;
    charge(arr.length * COST.element, loc);
    const out: Lazy[] = [];
    for (const el of arr) {
      const r = callFunction(f, [el], null, loc);
      if (typeof r !== 'boolean') throw rt(`filter function must return boolean, got: ${typeName(r)}`, loc);
      if (r) out.push(el);
    }
    return out;
  });
  def('objectHasEx', ['obj', 'f', 'inc_hidden'], (a, loc) => {
    validate('objectHasEx', a, ['object', 'string', 'boolean'], loc);
    return objectHas(a[0] as JObject, a[1] as string, a[2] as boolean);
  });
  def('length', ['x'], (a, loc) => {
    const x = a[0];
    if (typeof x === 'string') return cpLength(x);
    if (Array.isArray(x)) return x.length;
    if (x instanceof JObject) return objectFields(x, false).length;
    if (x instanceof JFunc) return x.params.length;
    throw rt(`length operates on strings, objects, and arrays, got ${typeName(x)}`, loc);
  });
  def('objectFieldsEx', ['obj', 'inc_hidden'], (a, loc) => {
    validate('objectFieldsEx', a, ['object', 'boolean'], loc);
    return objectFields(a[0] as JObject, a[1] as boolean);
  });
  def('codepoint', ['str'], (a, loc) => {
    validate('codepoint', a, ['string'], loc);
    const s = a[0] as string;
    const n = cpLength(s);
    if (n !== 1) throw rt(`codepoint takes a string of length 1, got length ${n}`, loc);
    return s.codePointAt(0)!;
  });
  def('char', ['n'], (a, loc) => {
    validate('char', a, ['number'], loc);
    const l = Math.trunc(a[0] as number);
    if (l < 0) throw rt(`codepoints must be >= 0, got ${l}`, loc);
    if (l >= 0x110000) throw rt(`invalid unicode codepoint, got ${l}`, loc);
    return String.fromCodePoint(l);
  });
  def('modulo', ['a', 'b'], (a, loc) => {
    validate('modulo', a, ['number', 'number'], loc);
    if (a[1] === 0) throw rt('division by zero.', loc);
    return num(loc, (a[0] as number) % (a[1] as number));
  });
  def('extVar', ['x'], (a, loc) => {
    validate('extVar', a, ['string'], loc);
    return ctx.extVar(a[0] as string, loc);
  });
  def('primitiveEquals', ['a', 'b'], (a, loc) => {
    const [x, y] = a;
    const tx = typeName(x);
    if (tx !== typeName(y)) return false;
    switch (tx) {
      case 'boolean': case 'number': case 'string': return x === y;
      case 'null': return true;
      case 'function': throw rt('cannot test equality of functions', loc);
      default: throw rt(`primitiveEquals operates on primitive types, got ${tx}`, loc);
    }
  });
  def('native', ['name'], (a, loc) => {
    validate('native', a, ['string'], loc);
    return ctx.nativeCallback(a[0] as string);
  });
  def('md5', ['str'], (a, loc) => {
    validate('md5', a, ['string'], loc);
    return createHash('md5').update(a[0] as string, 'utf8').digest('hex');
  });
  def('trace', ['str', 'rest'], (a, loc) => {
    if (typeof a[0] !== 'string') {
      throw rt(`Builtin function trace expected string as first parameter but got ${typeName(a[0])}`, loc);
    }
    ctx.trace(a[0], loc);
    return a[1];
  });
  def('splitLimit', ['str', 'c', 'maxsplits'], (a, loc) => {
    validate('splitLimit', a, ['string', 'string', 'number'], loc);
    const str = cpArray(a[0] as string);
    const c = cpArray(a[1] as string);
    const cs = c.join('');
    const maxsplits = Math.trunc(a[2] as number);
    const out: Lazy[] = [];
    let start = 0;
    let test = 0;
    while (test < str.length && (maxsplits === -1 || maxsplits > out.length)) {
      if ((test & LOOP_CHECK) === LOOP_CHECK) checkTime();
      if (str.slice(test, test + c.length).join('') === cs) {
        if (out.length >= budget.maxArrayLength) checkArrayLength(out.length + 1, loc);
        charge(COST.element, loc);
        out.push(str.slice(start, test).join(''));
        start = test + c.length;
        test = start;
      } else test++;
    }
    checkArrayLength(out.length + 1, loc);
    out.push(str.slice(start).join(''));
    return out;
  });
  def('substr', ['str', 'from', 'len'], (a, loc) => {
    validate('substr', a, ['string', 'number', 'number'], loc);
    const s = a[0] as string;
    const from = Math.trunc(a[1] as number);
    let len = Math.trunc(a[2] as number);
    if (from < 0) throw rt(`substr second parameter should be greater than zero, got ${from}`, loc);
    if (len < 0) throw rt(`substr third parameter should be greater than zero, got ${len}`, loc);
    const n = cpLength(s);
    if (from > n) return '';
    if (len + from > n) len = n - from;
    charge(len, loc);
    return substr(s, from, len);
  });
  def('range', ['from', 'to'], (a, loc) => {
    validate('range', a, ['number', 'number'], loc);
    const from = Math.trunc(a[0] as number);
    const to = Math.trunc(a[1] as number);
    if (to >= from) chargeArray(to - from + 1, COST.element, loc);
    const out: Lazy[] = [];
    for (let i = from; i <= to; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      out.push(i);
    }
    return out;
  });
  def('strReplace', ['str', 'from', 'to'], (a, loc) => {
    validate('strReplace', a, ['string', 'string', 'string'], loc);
    if (a[1] === '') throw rt("'from' string must not be zero length.", loc);
    const [str, from, to] = a as [string, string, string];
    // The pieces first (no more than the limits allow), then the length of the result.
    const parts = splitWithin(str, from);
    chargeArray(parts.length, COST.element + COST.string, loc);
    chargeString(str.length + (parts.length - 1) * (to.length - from.length), loc);
    return parts.join(to);
  });
  def('asciiLower', ['str'], (a, loc) => {
    validate('asciiLower', a, ['string'], loc);
    charge((a[0] as string).length, loc);
    return (a[0] as string).replace(/[A-Z]+/g, (m) => m.toLowerCase());
  });
  def('asciiUpper', ['str'], (a, loc) => {
    validate('asciiUpper', a, ['string'], loc);
    charge((a[0] as string).length, loc);
    return (a[0] as string).replace(/[a-z]+/g, (m) => m.toUpperCase());
  });
  def('join', ['sep', 'arr'], (a, loc) => {
    const [sep, arr] = a;
    if (typeof sep !== 'string' && !Array.isArray(sep)) {
      throw rt(`join first parameter should be string or array, got ${typeName(sep)}`, loc);
    }
    if (!Array.isArray(arr)) throw rt(`join second parameter should be array, got ${typeName(arr)}`, loc);
    if (typeof sep === 'string') {
      // The length is known before each piece is added; the result is one flat string.
      let out = '';
      let length = 0;
      let first = true;
      for (let i = 0; i < arr.length; i++) {
        if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
        const e = force(arr[i]);
        if (e === null) continue;
        if (typeof e !== 'string') throw rt(`expected string but arr[${i}] was ${typeName(e)}`, loc);
        length += first ? e.length : sep.length + e.length;
        if (length > budget.maxStringLength) checkStringLength(length, loc);
        if (!first) out += sep;
        first = false;
        out += e;
      }
      charge(length, loc);
      return out;
    }
    const out: Lazy[] = [];
    let length = 0;
    let first = true;
    for (let i = 0; i < arr.length; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      const e = force(arr[i]);
      if (e === null) continue;
      if (!Array.isArray(e)) throw rt(`expected array but arr[${i}] was ${typeName(e)}`, loc);
      const added = first ? e.length : sep.length + e.length;
      length += added;
      checkArrayLength(length, loc);
      charge(added * COST.element, loc);
      if (!first) for (const s of sep) out.push(s);
      first = false;
      for (const x of e) out.push(x);
    }
    return out;
  });
  def('parseJson', ['str'], (a, loc) => {
    validate('parseJson', a, ['string'], loc);
    const text = a[0] as string;
    // The parsed tree is about as large as its text in elements: charged before it is built.
    charge(text.length * COST.element, loc);
    // JSON.parse accepts exactly the JSON nlohmann accepts, except lone surrogate escapes and
    // integer -0 (nlohmann gives 0): those go through the exact parser, as do all errors.
    if (!/\\u[dD][89a-fA-F]|-0/.test(text)) {
      let parsed: unknown;
      let ok = true;
      try {
        parsed = JSON.parse(text);
      } catch {
        // fall through for the exact error message
        ok = false;
      }
      if (ok) return fromJson(parsed);
    }
    try {
      return parseJsonText(text);
    } catch (e) {
      if (e instanceof JsonParseError) throw rt(e.message, loc);
      throw e;
    }
  });
  def('parseYaml', ['str'], (a, loc) => {
    validate('parseYaml', a, ['string'], loc);
    const yaml = loadYaml();
    if (!yaml) throw rt('std.parseYaml is not supported (no YAML parser available)', loc);
    charge((a[0] as string).length * COST.element, loc);
    let docs: unknown[];
    try {
      docs = yaml.loadAll(a[0] as string, undefined, { schema: yaml.JSON_SCHEMA ?? yaml.CORE_SCHEMA });
    } catch (e) {
      throw rt((e as Error).message.split('\n')[0], loc);
    }
    return fromJson(docs.length === 1 ? docs[0] : docs);
  });
  def('encodeUTF8', ['str'], (a, loc) => {
    validate('encodeUTF8', a, ['string'], loc);
    chargeArray(Buffer.byteLength(a[0] as string, 'utf8'), COST.element, loc);
    return encodeUtf8(a[0] as string);
  });
  def('decodeUTF8', ['arr'], (a, loc) => {
    validate('decodeUTF8', a, ['array'], loc);
    const arr = a[0] as JArr;
    chargeString(arr.length, loc);
    const bytes = new Uint8Array(arr.length);
    for (let i = 0; i < arr.length; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      const d = force(arr[i]);
      if (typeof d !== 'number') throw rt(`Element ${i} of the provided array was not a number`, loc);
      if (d < 0 || d > 255 || d !== Math.trunc(d)) {
        throw rt(`Element ${i} of the provided array was not an integer in range [0,255]`, loc);
      }
      bytes[i] = d;
    }
    return Buffer.from(bytes).toString('utf8');
  });

  addNativeOverrides(def);
  addMoreOverrides(def, ctx);
  const id = nativeFunc('id', ['x'], (a) => a[0]);
  for (const name of KEYF_DEFAULT) b.get(name)!.nativeDefaults = [undefined, id];
  for (const name of KEYF_DEFAULT3) b.get(name)!.nativeDefaults = [undefined, undefined, id];
  b.get('manifestJsonEx')!.nativeDefaults = [undefined, undefined, '\n', ': '];
  return b;
}

/**
 * `s.split(sep)`, into no more pieces than the limits allow (one past them, to tell that they
 * were crossed). A limit is passed only when the string could give that many: V8 caches the
 * pieces of a split without one, which makes it several times faster on short strings.
 */
function splitWithin(s: string, sep: string): string[] {
  // At most 4097 pieces: charged after, whatever the limits.
  if (s.length < 4096) return s.split(sep);
  const most = affordable(COST.element + COST.string);
  return s.length < most ? s.split(sep) : s.split(sep, most);
}

/** The elements std.foldl/foldr iterate over, failing as std.jsonnet's `std.length(arr)` / `arr[i]` do. */
function foldInput(arr: Val, loc?: Loc): Lazy[] | null {
  if (Array.isArray(arr)) return arr;
  if (typeof arr === 'string') return cpArray(arr);
  if (arr instanceof JObject) {
    // `arr[idx]` is lazy in std.jsonnet: an error only when the element is used.
    const n = objectFields(arr, false).length;
    if (n === 0) return null;
    const bad = new FnThunk(() => {
      throw rt('object index must be string, got number.', loc);
    });
    return new Array<Lazy>(n).fill(bad);
  }
  throw rt(`length operates on strings, objects, and arrays, got ${typeName(arr)}`, loc);
}

type Def = (name: string, params: string[], fn: (args: Val[], loc?: Loc) => Val) => void;

/** Native versions of std.jsonnet functions (same results, no deep recursion). */
function addNativeOverrides(def: Def): void {
  def('foldl', ['func', 'arr', 'init'], (a, loc) => {
    const [f, arr, init] = a;
    const xs = foldInput(arr, loc);
    if (xs === null) return init;
    let acc: Val = init;
    for (let i = 0; i < xs.length; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      acc = callFunction(f, [acc, xs[i]], null, loc);
    }
    return acc;
  });
  def('foldr', ['func', 'arr', 'init'], (a, loc) => {
    const [f, arr, init] = a;
    const xs = foldInput(arr, loc);
    if (xs === null) return init;
    let acc: Val = init;
    for (let i = xs.length - 1; i >= 0; i--) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      acc = callFunction(f, [xs[i], acc], null, loc);
    }
    return acc;
  });
  def('map', ['func', 'arr'], (a, loc) => {
    const [f, arr] = a;
    if (!(f instanceof JFunc)) throw rt(`std.map first param must be function, got ${typeName(f)}`, loc);
    if (!Array.isArray(arr) && typeof arr !== 'string') throw rt(`std.map second param must be array / string, got ${typeName(arr)}`, loc);
    const xs: Lazy[] = typeof arr === 'string' ? cpArray(arr) : arr;
    charge(xs.length * (COST.element + COST.lazyElement), loc);
    const out: Lazy[] = new Array(xs.length);
    for (let i = 0; i < xs.length; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      const x = xs[i];
      out[i] = new FnThunk(() => callFunction(f, [x], null, loc));
    }
    return out;
  });
  def('mapWithIndex', ['func', 'arr'], (a, loc) => {
    const [f, arr] = a;
    if (!(f instanceof JFunc)) throw rt(`std.mapWithIndex first param must be function, got ${typeName(f)}`, loc);
    if (!Array.isArray(arr) && typeof arr !== 'string') throw rt(`std.mapWithIndex second param must be array, got ${typeName(arr)}`, loc);
    const xs: Lazy[] = typeof arr === 'string' ? cpArray(arr) : arr;
    charge(xs.length * (COST.element + COST.lazyElement), loc);
    const out: Lazy[] = new Array(xs.length);
    for (let i = 0; i < xs.length; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      const x = xs[i];
      out[i] = new FnThunk(() => callFunction(f, [i, x], null, loc));
    }
    return out;
  });
  def('flatMap', ['func', 'arr'], (a, loc) => {
    const [f, arr] = a;
    if (!(f instanceof JFunc)) throw rt(`std.flatMap first param must be function, got ${typeName(f)}`, loc);
    if (Array.isArray(arr)) {
      // std.flattenArrays = foldl(a + b, ..., []) without the quadratic copies.
      let acc: Val = [];
      let own = true;
      for (const x of arr) {
        const r = callFunction(f, [x], null, loc);
        if (own && Array.isArray(acc) && Array.isArray(r)) {
          checkArrayLength(acc.length + r.length, loc);
          charge(r.length * COST.element, loc);
          for (const y of r) acc.push(y);
        } else {
          acc = plus(acc, r, loc);
          own = false;
        }
      }
      return acc;
    }
    if (typeof arr === 'string') {
      let out = '';
      let first = true;
      const xs = cpArray(arr);
      for (let i = 0; i < xs.length; i++) {
        const r = callFunction(f, [xs[i]], null, loc);
        if (r === null) continue;
        if (typeof r !== 'string') throw rt(`expected string but arr[${i}] was ${typeName(r)}`, loc);
        if (!first) out += '';
        first = false;
        checkStringLength(out.length + r.length, loc);
        out += r;
      }
      charge(out.length, loc);
      return out;
    }
    throw rt(`std.flatMap second param must be array / string, got ${typeName(arr)}`, loc);
  });
  def('equals', ['a', 'b'], (a, loc) => {
    try {
      return equals(a[0], a[1]);
    } catch (e) {
      if (e instanceof RuntimeError) e.addFrame(loc);
      throw e;
    }
  });
}

export type { JArr };

/** More natives for hot std.jsonnet functions: a fast path for well-typed input, else the
 * std.jsonnet definition (so that error messages stay identical). */
function addMoreOverrides(def: Def, ctx: BuiltinContext): void {
  const slow = (name: string, args: Val[], loc?: Loc): Val => callFunction(ctx.stdJsonnet(name), args, null, loc);
  const isType = (name: string, t: string): void => def(name, ['v'], (a) => typeName(a[0]) === t);
  isType('isString', 'string');
  isType('isNumber', 'number');
  isType('isBoolean', 'boolean');
  isType('isObject', 'object');
  isType('isArray', 'array');
  isType('isFunction', 'function');
  def('toString', ['a'], (a, loc) => {
    // A string is itself, a number or a constant a few characters.
    if (a[0] === null || typeof a[0] !== 'object') return toStringValue(a[0]);
    const text = toStringValue(a[0]);
    chargeString(text.length, loc);
    return text;
  });
  def('format', ['str', 'vals'], (a, loc) => {
    if (typeof a[0] !== 'string') return slow('format', a, loc);
    try {
      const text = stdFormat(a[0], a[1]);
      chargeString(text.length);
      return text;
    } catch (e) {
      if (e instanceof RuntimeError) e.addFrame(loc);
      throw e;
    }
  });
  def('escapeStringJson', ['str_'], (a, loc) => {
    if (typeof a[0] !== 'string') return slow('escapeStringJson', a, loc);
    let text: string;
    try {
      text = stdEscapeStringJson(a[0]);
    } catch (e) {
      throw rt((e as Error).message, loc);
    }
    chargeString(text.length, loc);
    return text;
  });
  def('startsWith', ['a', 'b'], (a, loc) => {
    const [x, y] = a;
    if (typeof x !== 'string' || typeof y !== 'string') return slow('startsWith', a, loc);
    return x.startsWith(y);
  });
  def('endsWith', ['a', 'b'], (a, loc) => {
    const [x, y] = a;
    if (typeof x !== 'string' || typeof y !== 'string') return slow('endsWith', a, loc);
    return x.endsWith(y);
  });
  def('stringChars', ['str'], (a, loc) => {
    if (typeof a[0] !== 'string') return slow('stringChars', a, loc);
    return cpArray(a[0]);
  });
  def('split', ['str', 'c'], (a, loc) => {
    const [x, c] = a;
    if (typeof x !== 'string' || typeof c !== 'string' || c === '') return slow('split', a, loc);
    const parts = splitWithin(x, c);
    chargeArray(parts.length, COST.element + COST.string, loc);
    return parts;
  });
  def('lines', ['arr'], (a, loc) => {
    const arr = a[0];
    if (!Array.isArray(arr)) return slow('lines', a, loc);
    let out = '';
    for (let i = 0; i < arr.length; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      const e = force(arr[i]);
      if (e === null) continue;
      if (typeof e !== 'string') return slow('lines', a, loc);
      checkStringLength(out.length + e.length + 1, loc);
      out += e + '\n';
    }
    charge(out.length, loc);
    return out;
  });
  def('member', ['arr', 'x'], (a, loc) => {
    const [arr, x] = a;
    if (Array.isArray(arr)) {
      for (let i = 0; i < arr.length; i++) {
        if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
        if (equals(force(arr[i]), x)) return true;
      }
      return false;
    }
    if (typeof arr === 'string' && typeof x === 'string' && x !== '') return arr.includes(x);
    return slow('member', a, loc);
  });
  def('count', ['arr', 'x'], (a, loc) => {
    const [arr, x] = a;
    if (!Array.isArray(arr)) return slow('count', a, loc);
    let n = 0;
    for (let i = 0; i < arr.length; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      if (equals(force(arr[i]), x)) n++;
    }
    return n;
  });

  const ID: Val = null; // identity keyF is detected by name below
  const keysOf = (arr: JArr, keyF: Val, loc?: Loc): Val[] | null => {
    if (!(keyF instanceof JFunc)) return null;
    void ID;
    charge(arr.length * COST.element, loc);
    const keys: Val[] = new Array(arr.length);
    let kind = '';
    for (let i = 0; i < arr.length; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      const k = keyF.native && keyF.name === 'id' ? force(arr[i]) : callFunction(keyF, [arr[i]], null, loc);
      const t = typeName(k);
      if (t !== 'number' && t !== 'string') return null;
      if (kind === '') kind = t;
      else if (kind !== t) return null;
      keys[i] = k;
    }
    return keys;
  };
  const cmpKeys = (x: Val, y: Val): number =>
    typeof x === 'number' ? (x as number) - (y as number) : compareCodePoints(x as string, y as string);
  const sortNative = (arr: JArr, keyF: Val, loc?: Loc): JArr | null => {
    const keys = keysOf(arr, keyF, loc);
    if (!keys) return null;
    charge(arr.length * 2 * COST.element, loc);
    const idx = arr.map((_, i) => i);
    // The comparator looks at the clock: a sort of millions of elements runs for seconds inside one call.
    let compared = 0;
    idx.sort((i, j) => {
      if ((++compared & LOOP_CHECK) === 0) checkTime();
      const c = cmpKeys(keys[i], keys[j]);
      return c < 0 ? -1 : c > 0 ? 1 : i - j;
    });
    return idx.map((i) => arr[i]);
  };
  const uniqNative = (arr: JArr, keyF: Val, loc?: Loc): JArr | null => {
    const keys = keysOf(arr, keyF, loc);
    if (!keys) return null;
    charge(arr.length * COST.element, loc);
    const out: Lazy[] = [];
    let lastKey: Val = null;
    for (let i = 0; i < arr.length; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      if (out.length === 0 || keys[i] !== lastKey) {
        out.push(arr[i]);
        lastKey = keys[i];
      }
    }
    return out;
  };
  def('sort', ['arr', 'keyF'], (a, loc) => {
    const [arr, keyF] = a;
    if (Array.isArray(arr)) {
      const r = sortNative(arr, keyF, loc);
      if (r) return r;
    }
    return slow('sort', a, loc);
  });
  def('uniq', ['arr', 'keyF'], (a, loc) => {
    const [arr, keyF] = a;
    if (Array.isArray(arr)) {
      const r = uniqNative(arr, keyF, loc);
      if (r) return r;
    }
    return slow('uniq', a, loc);
  });
  def('set', ['arr', 'keyF'], (a, loc) => {
    const [arr, keyF] = a;
    if (Array.isArray(arr)) {
      const s = sortNative(arr, keyF, loc);
      const r = s && uniqNative(s, keyF, loc);
      if (r) return r;
    }
    return slow('set', a, loc);
  });
  void compare;

  // manifestJsonEx: the natively materialised value, or std.jsonnet on anything unusual
  // (functions, non-string indents...), which also reproduces its error messages.
  const manifestEx = (name: string, value: Val, indent: Val, newline: Val, sep: Val, args: Val[], loc?: Loc): Val => {
    if (typeof indent === 'string' && typeof newline === 'string' && typeof sep === 'string') {
      let text: string | undefined;
      try {
        text = manifestJsonEx(materialize(value), indent, newline, sep);
      } catch (e) {
        if (e instanceof LimitError) throw e;
        // else: fall back for the exact error
      }
      if (text !== undefined) {
        chargeString(text.length, loc);
        return text;
      }
    }
    return slow(name, args, loc);
  };
  def('manifestJsonEx', ['value', 'indent', 'newline', 'key_val_sep'], (a, loc) => manifestEx('manifestJsonEx', a[0], a[1], a[2], a[3], a, loc));
  def('manifestJson', ['value'], (a, loc) => manifestEx('manifestJson', a[0], '    ', '\n', ': ', a, loc));
  def('manifestJsonMinified', ['value'], (a, loc) => manifestEx('manifestJsonMinified', a[0], '', '', ':', a, loc));

  const isIdx = (v: Val): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;
  def('slice', ['indexable', 'index', 'end', 'step'], (a, loc) => {
    const [x, i0, e0, s0] = a;
    const isStr = typeof x === 'string';
    if ((isStr || Array.isArray(x)) && (i0 === null || isIdx(i0)) && (e0 === null || isIdx(e0)) && (s0 === null || (isIdx(s0) && s0 > 0))) {
      const items: Lazy[] = isStr ? cpArray(x) : (x as JArr);
      const len = items.length;
      const start = i0 === null ? 0 : i0;
      const end = Math.min(e0 === null ? len : e0, len);
      const step = s0 === null ? 1 : s0;
      charge(Math.max(0, end - start) * COST.element, loc);
      if (step === 1 && !isStr) return items.slice(start, Math.max(start, end));
      const out: Lazy[] = [];
      for (let i = start; i < end; i += step) {
        if ((out.length & LOOP_CHECK) === LOOP_CHECK) checkTime();
        out.push(items[i]);
      }
      return isStr ? (out as string[]).join('') : out;
    }
    return slow('slice', a, loc);
  });
  def('flattenArrays', ['arrs'], (a, loc) => {
    const arrs = a[0];
    if (!Array.isArray(arrs)) return slow('flattenArrays', a, loc);
    let acc: Val = [];
    let own = true;
    for (let i = 0; i < arrs.length; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      const r = force(arrs[i]);
      if (own && Array.isArray(acc) && Array.isArray(r)) {
        checkArrayLength(acc.length + r.length, loc);
        charge(r.length * COST.element, loc);
        for (const y of r) acc.push(y);
      } else {
        acc = plus(acc, r, loc);
        own = false;
      }
    }
    return acc;
  });
  def('repeat', ['what', 'count'], (a, loc) => {
    const [what, count] = a;
    if (!isIdx(count)) return slow('repeat', a, loc);
    if (typeof what === 'string') {
      chargeString(what.length * count, loc);
      return what.repeat(count);
    }
    if (Array.isArray(what)) {
      chargeArray(what.length * count, COST.element, loc);
      const out: Lazy[] = [];
      for (let i = 0; i < count; i++) {
        if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
        for (const y of what) out.push(y);
      }
      return out;
    }
    return slow('repeat', a, loc);
  });
  const charSet = (chars: Val): ((c: string) => boolean) | null => {
    if (typeof chars === 'string') return (c) => chars.includes(c);
    if (Array.isArray(chars)) return (c) => chars.some((e) => force(e) === c);
    return null;
  };
  const strip = (name: string, left: boolean, right: boolean): void =>
    def(name, ['str', 'chars'], (a, loc) => {
      const [str, chars] = a;
      const has = charSet(chars);
      if (typeof str !== 'string' || !has) return slow(name, a, loc);
      const cs = cpArray(str);
      let i = 0;
      let j = cs.length;
      if (right) while (j > 0 && has(cs[j - 1])) j--;
      if (left) while (i < j && has(cs[i])) i++;
      return i === 0 && j === cs.length ? str : cs.slice(i, j).join('');
    });
  strip('lstripChars', true, false);
  strip('rstripChars', false, true);
  strip('stripChars', true, true);
  def('findSubstr', ['pat', 'str'], (a, loc) => {
    const [pat, str] = a;
    if (typeof pat !== 'string' || typeof str !== 'string') return slow('findSubstr', a, loc);
    const out: Lazy[] = [];
    if (pat.length === 0 || str.length === 0 || pat.length > str.length) return out;
    const found = (i: number): void => {
      if ((out.length & LOOP_CHECK) === LOOP_CHECK) checkTime();
      if (out.length >= budget.maxArrayLength) checkArrayLength(out.length + 1, loc);
      charge(COST.element, loc);
      out.push(i);
    };
    if (!hasSurrogates(str)) {
      for (let i = str.indexOf(pat); i >= 0; i = str.indexOf(pat, i + 1)) found(i);
      return out;
    }
    const cs = cpArray(str);
    const ps = cpArray(pat);
    for (let i = 0; i + ps.length <= cs.length; i++) {
      if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();
      let ok = true;
      for (let k = 0; k < ps.length && ok; k++) if (cs[i + k] !== ps[k]) ok = false;
      if (ok) found(i);
    }
    return out;
  });
  const setOp = (name: string, run: (ka: Val[], kb: Val[], x: JArr, y: JArr) => Lazy[]): void => {
    def(name, ['a', 'b', 'keyF'], (a, loc) => {
      const [x, y, keyF] = a;
      if (Array.isArray(x) && Array.isArray(y)) {
        const ka = keysOf(x, keyF, loc);
        const kb = ka && keysOf(y, keyF, loc);
        if (ka && kb && (ka.length === 0 || kb.length === 0 || typeof ka[0] === typeof kb[0])) {
          // The result is at most both inputs long.
          charge((x.length + y.length) * COST.element, loc);
          return run(ka, kb, x, y);
        }
      }
      return slow(name, a, loc);
    });
  };
  setOp('setUnion', (ka, kb, x, y) => {
    const out: Lazy[] = [];
    let i = 0;
    let j = 0;
    while (i < x.length && j < y.length) {
      const c = cmpKeys(ka[i], kb[j]);
      if (c === 0) {
        out.push(x[i++]);
        j++;
      } else if (c < 0) out.push(x[i++]);
      else out.push(y[j++]);
    }
    while (i < x.length) out.push(x[i++]);
    while (j < y.length) out.push(y[j++]);
    return out;
  });
  setOp('setInter', (ka, kb, x) => {
    const out: Lazy[] = [];
    let i = 0;
    let j = 0;
    while (i < ka.length && j < kb.length) {
      const c = cmpKeys(ka[i], kb[j]);
      if (c === 0) {
        out.push(x[i++]);
        j++;
      } else if (c < 0) i++;
      else j++;
    }
    return out;
  });
  setOp('setDiff', (ka, kb, x) => {
    const out: Lazy[] = [];
    let i = 0;
    let j = 0;
    while (i < ka.length) {
      if (j >= kb.length) {
        out.push(x[i++]);
        continue;
      }
      const c = cmpKeys(ka[i], kb[j]);
      if (c === 0) {
        i++;
        j++;
      } else if (c < 0) out.push(x[i++]);
      else j++;
    }
    return out;
  });
}

/** Natives whose trailing `keyF` parameter defaults to the identity. */
export const KEYF_DEFAULT = ['sort', 'uniq', 'set'];
export const KEYF_DEFAULT3 = ['setUnion', 'setInter', 'setDiff'];
