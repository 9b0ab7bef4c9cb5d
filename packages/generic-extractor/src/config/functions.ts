/**
 * User functions (keboola/php-codebuilder as the reference extractor uses it): configuration
 * values like `{"function": "concat", "args": [...]}` or references `{"attr": "key"}`,
 * `{"time": "previousStart"}`, `{"placeholder": "value"}`, `{"response": "path"}` are evaluated
 * against context objects; other objects are walked, scalars stay. The allowed functions are
 * md5, sha1, time, date, strtotime, base64_encode, hash_hmac, sprintf, concat, ifempty, implode
 * (and urlencode where the reference allows it). Dates use UTC, as the reference's container.
 */
import { createHash, createHmac, getHashes } from 'node:crypto';
import { UserError } from '../errors.js';
import { csvCell, isObject, phpEmpty, phpFloatToString, phpUrlencode, type Json, type JsonObject } from '../php.js';

/** Context name → flattened values (`{"attr": "a.b"}` reads `contexts.attr["a.b"]`). */
export type FunctionContexts = Record<string, Record<string, Json>>;

const DEFAULT_FUNCTIONS = ['md5', 'sha1', 'time', 'date', 'strtotime', 'base64_encode', 'hash_hmac', 'sprintf', 'concat', 'ifempty', 'implode'];

/** Flattens nested objects from the second level on: `{a: {b: 1}}` → `{"a.b": 1}` (and `a` itself). */
export function flattenContext(value: unknown): Record<string, Json> {
  const out: Record<string, Json> = {};
  const walk = (v: unknown, prefix: string): void => {
    if (isObject(v) || Array.isArray(v)) {
      const entries: [string, unknown][] = Array.isArray(v) ? v.map((x, i) => [String(i), x]) : Object.entries(v);
      for (const [k, x] of entries) {
        const key = prefix === '' ? k : `${prefix}.${k}`;
        if (isObject(x) || Array.isArray(x)) walk(x, key);
        else out[key] = x as Json;
      }
    }
  };
  walk(value, '');
  return out;
}

function str(v: unknown): string {
  return csvCell(v);
}

// ---------------------------------------------------------------------------------------------
// date() and strtotime()

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = ['January', 'February', 'March', 'April', 'May', 'June', 'July', 'August', 'September', 'October', 'November', 'December'];
const pad = (n: number, w = 2) => String(n).padStart(w, '0');

/** PHP `date(format, timestamp)` in UTC. */
export function phpDate(format: string, timestamp: number): string {
  const d = new Date(Math.trunc(timestamp) * 1000);
  let out = '';
  for (let i = 0; i < format.length; i++) {
    const c = format[i];
    const h = d.getUTCHours();
    switch (c) {
      case 'd': out += pad(d.getUTCDate()); break;
      case 'D': out += DAYS[d.getUTCDay()].slice(0, 3); break;
      case 'j': out += d.getUTCDate(); break;
      case 'l': out += DAYS[d.getUTCDay()]; break;
      case 'N': out += d.getUTCDay() === 0 ? 7 : d.getUTCDay(); break;
      case 'w': out += d.getUTCDay(); break;
      case 'z': out += Math.floor((Date.UTC(d.getUTCFullYear(), d.getUTCMonth(), d.getUTCDate()) - Date.UTC(d.getUTCFullYear(), 0, 1)) / 86400000); break;
      case 'F': out += MONTHS[d.getUTCMonth()]; break;
      case 'M': out += MONTHS[d.getUTCMonth()].slice(0, 3); break;
      case 'm': out += pad(d.getUTCMonth() + 1); break;
      case 'n': out += d.getUTCMonth() + 1; break;
      case 't': out += new Date(Date.UTC(d.getUTCFullYear(), d.getUTCMonth() + 1, 0)).getUTCDate(); break;
      case 'L': { const y = d.getUTCFullYear(); out += (y % 4 === 0 && y % 100 !== 0) || y % 400 === 0 ? 1 : 0; break; }
      case 'Y': out += d.getUTCFullYear(); break;
      case 'y': out += pad(d.getUTCFullYear() % 100); break;
      case 'a': out += h < 12 ? 'am' : 'pm'; break;
      case 'A': out += h < 12 ? 'AM' : 'PM'; break;
      case 'g': out += h % 12 === 0 ? 12 : h % 12; break;
      case 'G': out += h; break;
      case 'h': out += pad(h % 12 === 0 ? 12 : h % 12); break;
      case 'H': out += pad(h); break;
      case 'i': out += pad(d.getUTCMinutes()); break;
      case 's': out += pad(d.getUTCSeconds()); break;
      case 'u': out += '000000'; break;
      case 'v': out += '000'; break;
      case 'e': out += 'UTC'; break;
      case 'T': out += 'UTC'; break;
      case 'P': out += '+00:00'; break;
      case 'p': out += 'Z'; break;
      case 'O': out += '+0000'; break;
      case 'Z': out += '0'; break;
      case 'I': out += '0'; break;
      case 'U': out += Math.trunc(timestamp); break;
      case 'c': out += phpDate('Y-m-d\\TH:i:sP', timestamp); break;
      case 'r': out += phpDate('D, d M Y H:i:s O', timestamp); break;
      case '\\': i++; out += format[i] ?? ''; break;
      default: out += c;
    }
  }
  return out;
}

const UNIT_SECONDS: Record<string, number> = { sec: 1, second: 1, min: 60, minute: 60, hour: 3600, day: 86400, week: 604800, fortnight: 1209600 };

/** PHP `strtotime` for the forms configurations use: absolute dates, `now`/`today`/…, `±N unit`. False when not understood. */
export function phpStrtotime(text: string, base: number): number | false {
  let s = text.trim().toLowerCase();
  let t = base;
  const abs = /^(\d{4})-(\d{2})-(\d{2})(?:[ t](\d{2}):(\d{2})(?::(\d{2}))?)?(?:z|\+00:?00)?/.exec(s);
  if (abs) {
    t = Date.UTC(+abs[1], +abs[2] - 1, +abs[3], +(abs[4] ?? 0), +(abs[5] ?? 0), +(abs[6] ?? 0)) / 1000;
    s = s.slice(abs[0].length).trim();
  } else if (/^@-?\d+/.test(s)) {
    const m = /^@(-?\d+)/.exec(s) as RegExpExecArray;
    t = Number(m[1]);
    s = s.slice(m[0].length).trim();
  }
  const midnight = (x: number) => Math.floor(x / 86400) * 86400;
  while (s !== '') {
    let m: RegExpExecArray | null;
    if ((m = /^now\b/.exec(s))) {
      // no change
    } else if ((m = /^(today|midnight)\b/.exec(s))) t = midnight(t);
    else if ((m = /^yesterday\b/.exec(s))) t = midnight(t) - 86400;
    else if ((m = /^tomorrow\b/.exec(s))) t = midnight(t) + 86400;
    else if ((m = /^([+-]?\s*\d+)\s*(sec|second|min|minute|hour|day|week|fortnight|month|year)s?\b/.exec(s))) {
      const n = Number(m[1].replace(/\s+/g, ''));
      if (m[2] === 'month' || m[2] === 'year') {
        const d = new Date(t * 1000);
        if (m[2] === 'month') d.setUTCMonth(d.getUTCMonth() + n);
        else d.setUTCFullYear(d.getUTCFullYear() + n);
        t = d.getTime() / 1000;
      } else t += n * UNIT_SECONDS[m[2]];
    } else if ((m = /^(ago)\b/.exec(s))) {
      t = base - (t - base);
    } else return false;
    s = s.slice(m[0].length).trim();
  }
  return Math.trunc(t);
}

// ---------------------------------------------------------------------------------------------
// sprintf()

/** PHP `sprintf`: %[argnum$][flags][width][.precision]specifier, flags `-+ 0` and `'c`. */
export function phpSprintf(format: string, args: unknown[]): string {
  let next = 0;
  return format.replace(/%(?:(\d+)\$)?((?:[-+ 0]|'.)*)(\d+)?(?:\.(\d+))?([%bcdeEfFgGosuxX])/g, (_m, argnum, flags: string, width, precision, spec: string) => {
    if (spec === '%') return '%';
    const arg = argnum ? args[Number(argnum) - 1] : args[next++];
    let padChar = ' ';
    let left = false;
    let plus = false;
    for (let i = 0; i < flags.length; i++) {
      const f = flags[i];
      if (f === "'") padChar = flags[++i];
      else if (f === '0') padChar = '0';
      else if (f === '-') left = true;
      else if (f === '+') plus = true;
    }
    const num = Number(typeof arg === 'boolean' ? (arg ? 1 : 0) : arg ?? 0);
    let out: string;
    switch (spec) {
      case 'd': out = String(Math.trunc(num) || 0); if (plus && num >= 0) out = `+${out}`; break;
      case 'u': out = String(Math.trunc(num) >>> 0); break;
      case 'f': case 'F': out = num.toFixed(precision ? Number(precision) : 6); if (plus && num >= 0) out = `+${out}`; break;
      case 'e': case 'E': out = num.toExponential(precision ? Number(precision) : 6).replace('e', spec === 'E' ? 'E' : 'e'); break;
      case 'g': case 'G': out = phpFloatToString(num, precision ? Number(precision) : 6); break;
      case 'x': out = (Math.trunc(num) >>> 0).toString(16); break;
      case 'X': out = (Math.trunc(num) >>> 0).toString(16).toUpperCase(); break;
      case 'o': out = (Math.trunc(num) >>> 0).toString(8); break;
      case 'b': out = (Math.trunc(num) >>> 0).toString(2); break;
      case 'c': out = String.fromCharCode(num); break;
      default: out = str(arg); if (precision) out = out.slice(0, Number(precision));
    }
    const w = width ? Number(width) : 0;
    if (out.length < w) {
      const fill = (left && padChar === '0' ? ' ' : padChar).repeat(w - out.length);
      if (left) out += fill;
      else if (padChar === '0' && /^[+-]/.test(out) && 'dfFeE'.includes(spec)) out = out[0] + fill + out.slice(1);
      else out = fill + out;
    }
    return out;
  });
}

// ---------------------------------------------------------------------------------------------
// The evaluator

function call(name: string, args: unknown[], now: () => number): Json {
  switch (name) {
    case 'md5':
      return createHash('md5').update(str(args[0])).digest('hex');
    case 'sha1':
      return createHash('sha1').update(str(args[0])).digest('hex');
    case 'base64_encode':
      return Buffer.from(str(args[0]), 'utf8').toString('base64');
    case 'hash_hmac': {
      const algo = str(args[0]).toLowerCase();
      if (!getHashes().includes(algo)) throw new UserError(`User script error: hash_hmac(): Unknown hashing algorithm: ${algo}`);
      return createHmac(algo, str(args[2])).update(str(args[1])).digest('hex');
    }
    case 'time':
      return Math.floor(now() / 1000);
    case 'date': {
      const ts = args.length > 1 ? Number(args[1]) : Math.floor(now() / 1000);
      return phpDate(str(args[0]), ts);
    }
    case 'strtotime': {
      const base = args.length > 1 ? Number(args[1]) : Math.floor(now() / 1000);
      const r = phpStrtotime(str(args[0]), base);
      return r === false ? false : r;
    }
    case 'sprintf':
      return phpSprintf(str(args[0]), args.slice(1));
    case 'concat':
      return args.map(str).join('');
    case 'ifempty':
      if (args.length !== 2) throw new UserError("User script error: Bad argument count for function 'ifempty'!");
      return (phpEmpty(args[0]) ? args[1] : args[0]) as Json;
    case 'implode': {
      const [glue, pieces] = args.length === 1 ? ['', args[0]] : [args[0], args[1]];
      if (!Array.isArray(pieces)) throw new UserError('User script error: implode(): Argument must be an array');
      return pieces.map(str).join(str(glue));
    }
    case 'urlencode':
      return phpUrlencode(str(args[0]));
    default:
      throw new UserError(`User script error: Illegal function '${name}'!`);
  }
}

export interface EvaluateOptions {
  /** Functions allowed beyond the default set (e.g. `urlencode` for placeholders). */
  allow?: string[];
  now?: () => number;
}

/** Evaluates one value: a function object, a context reference, an object to walk, or a scalar. */
export function evaluate(value: unknown, contexts: FunctionContexts, opts: EvaluateOptions = {}): Json {
  const allowed = opts.allow ? [...DEFAULT_FUNCTIONS, ...opts.allow] : DEFAULT_FUNCTIONS;
  const now = opts.now ?? Date.now;
  const walk = (v: unknown): Json => {
    if (Array.isArray(v)) return v.map(walk);
    if (!isObject(v)) return v as Json;
    if ('function' in v) {
      const name = v.function;
      if (typeof name !== 'string' || !allowed.includes(name)) {
        throw new UserError(`User script error: Illegal function '${typeof name === 'string' ? name : JSON.stringify(name)}'!`);
      }
      const args = Array.isArray(v.args) ? v.args.map(walk) : isObject(v.args) ? Object.values(v.args).map(walk) : [];
      return call(name, args, now);
    }
    const keys = Object.keys(v);
    if (keys.length === 1 && keys[0] in contexts) {
      const ctx = keys[0];
      const ref = v[ctx];
      if (isObject(ref)) throw new UserError(`User script error: Error evaluating user function - ${ctx} '${JSON.stringify(ref)}' is not a string!`);
      const found = contexts[ctx][String(ref)];
      if (found === undefined || found === null) {
        throw new UserError(`User script error: Error evaluating user function - ${ctx} '${String(ref)}' not found!`);
      }
      return found;
    }
    const out: JsonObject = {};
    for (const k of keys) out[k] = walk(v[k]);
    return out;
  };
  return walk(value);
}

/** `UserFunction::build`: evaluates each value of a map that is an object; others stay. */
export function buildValues(values: JsonObject, contexts: FunctionContexts, opts?: EvaluateOptions): JsonObject {
  const out: JsonObject = {};
  for (const [k, v] of Object.entries(values)) out[k] = isObject(v) ? evaluate(v, contexts, opts) : v;
  return out;
}

/** True when a value contains a function or a context reference anywhere. */
export function hasFunctions(value: unknown, contextNames: string[]): boolean {
  if (Array.isArray(value)) return value.some((v) => hasFunctions(v, contextNames));
  if (!isObject(value)) return false;
  const keys = Object.keys(value);
  if ('function' in value || (keys.length === 1 && contextNames.includes(keys[0]))) return true;
  return keys.some((k) => hasFunctions(value[k], contextNames));
}
