/**
 * Native port of `std.format` from std.jsonnet v0.20 (Apache-2.0, Copyright 2015 Google Inc.):
 * the same algorithm with the same double arithmetic, so results and error texts are identical.
 */
import { RuntimeError } from './errors.js';
import { budget, checkStringLength } from './limits.js';
import { formatNumber } from './numbers.js';
import {
  JArr, JObject, Lazy, Val, checkNumber, cpArray, cpLength, force, objectField, objectHas, toStringValue, typeName,
} from './values.js';

function err(msg: string): RuntimeError {
  return new RuntimeError(msg);
}

interface Code {
  mkey: string | null;
  alt: boolean;
  zero: boolean;
  left: boolean;
  blank: boolean;
  plus: boolean;
  fw: number | '*';
  prec: number | '*' | null;
  ctype: string;
  caps: boolean;
}

function parseCodes(str: string): (string | Code)[] {
  const s = cpArray(str);
  const n = s.length;
  const out: (string | Code)[] = [];
  let cur = '';
  let i = 0;
  const need = (j: number): void => {
    if (!(j < n)) throw err('Truncated format code.');
  };
  while (i < n) {
    const c = s[i];
    if (c !== '%') {
      cur += c;
      i++;
      continue;
    }
    i++;
    need(i);
    // mapping key
    let mkey: string | null = null;
    if (s[i] === '(') {
      let j = i + 1;
      let v = '';
      for (;;) {
        if (j >= n) throw err('Truncated format code.');
        if (s[j] !== ')') v += s[j++];
        else break;
      }
      mkey = v;
      i = j + 1;
    }
    // flags
    const code: Code = { mkey, alt: false, zero: false, left: false, blank: false, plus: false, fw: 0, prec: null, ctype: '', caps: false };
    for (;;) {
      need(i);
      const f = s[i];
      if (f === '#') code.alt = true;
      else if (f === '0') code.zero = true;
      else if (f === '-') code.left = true;
      else if (f === ' ') code.blank = true;
      else if (f === '+') code.plus = true;
      else break;
      i++;
    }
    const fieldWidth = (): number | '*' => {
      if (i < n && s[i] === '*') {
        i++;
        return '*';
      }
      let v = 0;
      for (;;) {
        need(i);
        const d = s[i];
        if (d >= '0' && d <= '9' && d.length === 1) {
          v = v * 10 + (d.charCodeAt(0) - 48);
          i++;
        } else return v;
      }
    };
    code.fw = fieldWidth();
    need(i);
    if (s[i] === '.') {
      i++;
      code.prec = fieldWidth();
    }
    need(i);
    if (s[i] === 'h' || s[i] === 'l' || s[i] === 'L') i++;
    need(i);
    const t = s[i];
    switch (t) {
      case 'd': case 'i': case 'u': code.ctype = 'd'; break;
      case 'o': code.ctype = 'o'; break;
      case 'x': code.ctype = 'x'; break;
      case 'X': code.ctype = 'x'; code.caps = true; break;
      case 'e': code.ctype = 'e'; break;
      case 'E': code.ctype = 'e'; code.caps = true; break;
      case 'f': code.ctype = 'f'; break;
      case 'F': code.ctype = 'f'; code.caps = true; break;
      case 'g': code.ctype = 'g'; break;
      case 'G': code.ctype = 'g'; code.caps = true; break;
      case 'c': code.ctype = 'c'; break;
      case 's': code.ctype = 's'; break;
      case '%': code.ctype = '%'; break;
      default: throw err(`Unrecognised conversion type: ${t}`);
    }
    i++;
    out.push(cur, code);
    cur = '';
  }
  out.push(cur);
  return out;
}

/**
 * `w` copies of `s`. A width comes from the format string or a value: its length is checked
 * first (std.format charges its whole text after).
 */
function padding(w: number, s: string): string {
  if (!(w > 0)) return '';
  const n = Math.ceil(w) * s.length;
  if (n > budget.maxStringLength) checkStringLength(n);
  return s.repeat(Math.ceil(w));
}
// No width (the common `%s`, `%d`): nothing to pad, whatever the string's length in code points.
function padLeft(str: string, w: number, s: string): string {
  return w <= 0 ? str : padding(w - cpLength(str), s) + str;
}
function padRight(str: string, w: number, s: string): string {
  return w <= 0 ? str : str + padding(w - cpLength(str), s);
}

function digits(mag: number, radix: number, zeroPrefix: string): string {
  // aux(n) = if n == 0 then zero_prefix else aux(floor(n / radix)) + (n % radix)
  const ds: number[] = [];
  let n = mag;
  while (n !== 0) {
    ds.push(n % radix);
    n = Math.floor(n / radix);
  }
  let out = zeroPrefix;
  for (let k = ds.length - 1; k >= 0; k--) out += formatNumber(ds[k]);
  return out;
}

function renderInt(neg: boolean, mag: number, minChars: number, minDigits: number, blank: boolean, plus: boolean, radix: number, zeroPrefix: string): string {
  const dec = mag === 0 ? '0' : digits(mag, radix, zeroPrefix);
  const zp = minChars - (neg || blank || plus ? 1 : 0);
  const zp2 = Math.max(zp, minDigits);
  const dec2 = padLeft(dec, zp2, '0');
  return (neg ? '-' : plus ? '+' : blank ? ' ' : '') + dec2;
}

function renderHex(n: number, minChars: number, minDigits: number, blank: boolean, plus: boolean, addZerox: boolean, capitals: boolean): string {
  const numerals = capitals ? '0123456789ABCDEF' : '0123456789abcdef';
  const a = Math.abs(n);
  let hex: string;
  if (Math.floor(a) === 0) hex = '0';
  else {
    let m = Math.floor(a);
    const ds: string[] = [];
    while (m !== 0) {
      ds.push(numerals[m % 16]);
      m = Math.floor(m / 16);
    }
    hex = ds.reverse().join('');
  }
  const neg = n < 0;
  const zp = minChars - (neg || blank || plus ? 1 : 0) - (addZerox ? 2 : 0);
  const zp2 = Math.max(zp, minDigits);
  const hex2 = (addZerox ? (capitals ? '0X' : '0x') : '') + padLeft(hex, zp2, '0');
  return (neg ? '-' : plus ? '+' : blank ? ' ' : '') + hex2;
}

function stripTrailingZero(str: string): string {
  let i = str.length - 1;
  while (i >= 0 && str[i] === '0') i--;
  return i < 0 ? '' : str.slice(0, i + 1);
}

function sign(n: number): number {
  return n > 0 ? 1 : n < 0 ? -1 : 0;
}

function renderFloatDec(n: number, zeroPad: number, blank: boolean, plus: boolean, ensurePt: boolean, trailing: boolean, prec: number): string {
  const a = Math.abs(n);
  const denominator = checkNumber(Math.pow(10, prec));
  const numerator = checkNumber(checkNumber(Math.abs(a) * denominator) + 0.5);
  const whole = sign(a) * Math.floor(numerator / denominator);
  if (denominator === 0) throw err('division by zero.');
  const frac = Math.floor(numerator) % denominator;
  const dotSize = prec === 0 && !ensurePt ? 0 : 1;
  const zp = zeroPad - prec - dotSize;
  const str = renderInt(n < 0, whole, zp, 0, blank, plus, 10, '');
  if (prec === 0) return str + (ensurePt ? '.' : '');
  if (trailing || frac > 0) {
    const fracStr = renderInt(false, frac, prec, 0, false, false, 10, '');
    return str + '.' + (!trailing ? stripTrailingZero(fracStr) : fracStr);
  }
  return str;
}

function jlog(x: number): number {
  return checkNumber(Math.log(x));
}

function renderFloatSci(n: number, zeroPad: number, blank: boolean, plus: boolean, ensurePt: boolean, trailing: boolean, caps: boolean, prec: number): string {
  const exponent = n === 0 ? 0 : Math.floor(jlog(Math.abs(n)) / jlog(10));
  const suff = (caps ? 'E' : 'e') + renderInt(exponent < 0, Math.abs(exponent), 3, 0, false, true, 10, '');
  let mantissa: number;
  if (exponent === -324) mantissa = checkNumber((n * 10) / checkNumber(Math.pow(10, exponent + 1)));
  else {
    const d = checkNumber(Math.pow(10, exponent));
    if (d === 0) throw err('division by zero.');
    mantissa = checkNumber(n / d);
  }
  const zp2 = zeroPad - cpLength(suff);
  return renderFloatDec(mantissa, zp2, blank, plus, ensurePt, trailing, prec) + suff;
}

function formatCode(val: Val, code: Code, fw: number, precOrNull: number | null, i: string): string {
  const fpprec = precOrNull !== null ? precOrNull : 6;
  const iprec = precOrNull !== null ? precOrNull : 0;
  const zp = code.zero && !code.left ? fw : 0;
  const needNum = (): number => {
    if (typeof val !== 'number') throw err(`Format required number at ${i}, got ${typeName(val)}`);
    return val;
  };
  switch (code.ctype) {
    case 's': return toStringValue(val);
    case 'd': {
      const v = needNum();
      return renderInt(v <= -1, Math.floor(Math.abs(v)), zp, iprec, code.blank, code.plus, 10, '');
    }
    case 'o': {
      const v = needNum();
      return renderInt(v <= -1, Math.floor(Math.abs(v)), zp, iprec, code.blank, code.plus, 8, code.alt ? '0' : '');
    }
    case 'x': {
      const v = needNum();
      return renderHex(Math.floor(v), zp, iprec, code.blank, code.plus, code.alt, code.caps);
    }
    case 'f': return renderFloatDec(needNum(), zp, code.blank, code.plus, code.alt, true, fpprec);
    case 'e': return renderFloatSci(needNum(), zp, code.blank, code.plus, code.alt, true, code.caps, fpprec);
    case 'g': {
      const v = needNum();
      const exponent = Math.floor(jlog(Math.abs(v)) / jlog(10));
      if (exponent < -4 || exponent >= fpprec) {
        return renderFloatSci(v, zp, code.blank, code.plus, code.alt, code.alt, code.caps, fpprec - 1);
      }
      const digitsBeforePt = Math.max(1, exponent + 1);
      return renderFloatDec(v, zp, code.blank, code.plus, code.alt, code.alt, fpprec - digitsBeforePt);
    }
    case 'c': {
      if (typeof val === 'number') {
        const l = Math.trunc(val);
        if (l < 0) throw err(`codepoints must be >= 0, got ${l}`);
        if (l >= 0x110000) throw err(`invalid unicode codepoint, got ${l}`);
        return String.fromCodePoint(l);
      }
      if (typeof val === 'string') {
        const len = cpLength(val);
        if (len === 1) return val;
        throw err(`%c expected 1-sized string got: ${len}`);
      }
      throw err(`%c expected number / string, got: ${typeName(val)}`);
    }
    default:
      throw err(`Unknown code: ${code.ctype}`);
  }
}

function asNumber(v: Val): number {
  if (typeof v !== 'number') {
    // `w - std.length(str)` in std.jsonnet
    throw err(`binary operator - requires matching types, got ${typeName(v)} and number.`);
  }
  return v;
}

const codeCache = new Map<string, (string | Code)[]>();

export function stdFormat(str: string, vals: Val): string {
  let codes = codeCache.get(str);
  if (!codes) {
    codes = parseCodes(str);
    if (codeCache.size > 1000) codeCache.clear();
    codeCache.set(str, codes);
  }
  if (vals instanceof JObject) return formatObj(codes, vals);
  const arr: JArr = Array.isArray(vals) ? vals : [vals];
  return formatArr(codes, arr);
}

function formatArr(codes: (string | Code)[], arr: Lazy[]): string {
  let j = 0;
  let v = '';
  const len = arr.length;
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i];
    if (typeof code === 'string') {
      v += code;
      continue;
    }
    let fw: Val;
    if (code.fw === '*') {
      if (j >= len) throw err(`Not enough values to format: ${len}, expected at least ${j}`);
      fw = force(arr[j]);
      j++;
    } else fw = code.fw;
    let prec: Val;
    if (code.prec === '*') {
      if (j >= len) throw err(`Not enough values to format: ${len}, expected at least ${j}`);
      prec = force(arr[j]);
      j++;
    } else prec = code.prec;
    const j2 = j;
    let s: string;
    if (code.ctype === '%') s = '%';
    else {
      if (j2 >= len) throw err(`Not enough values to format: ${len}, expected more than ${j2}`);
      s = formatCode(force(arr[j2]), code, fw as number, prec as number | null, String(j2));
    }
    v += code.left ? padRight(s, asNumber(fw), ' ') : padLeft(s, asNumber(fw), ' ');
    j = code.ctype === '%' ? j2 : j2 + 1;
  }
  if (j < len) throw err(`Too many values to format: ${len}, expected ${j}`);
  return v;
}

function formatObj(codes: (string | Code)[], obj: JObject): string {
  let v = '';
  for (let i = 0; i < codes.length; i++) {
    const code = codes[i];
    if (typeof code === 'string') {
      v += code;
      continue;
    }
    // std.jsonnet evaluates these lazily: the value (key) first, then width and precision.
    let s: string;
    if (code.ctype === '%') s = '%';
    else {
      if (code.mkey === null) throw err('Mapping keys required.');
      const f = code.mkey;
      if (!objectHas(obj, f, true)) throw err(`No such field: ${f}`);
      const val = objectField(obj, f);
      if (code.prec === '*') throw err('Cannot use * precision with object.');
      if (code.fw === '*') throw err('Cannot use * field width with object.');
      s = formatCode(val, code, code.fw, code.prec, f);
    }
    if (code.fw === '*') throw err('Cannot use * field width with object.');
    const fw = code.fw;
    v += code.left ? padRight(s, fw, ' ') : padLeft(s, fw, ' ');
  }
  return v;
}
