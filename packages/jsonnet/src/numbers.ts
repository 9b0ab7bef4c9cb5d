/**
 * Number formatting exactly as libjsonnet v0.20 prints numbers
 * (`jsonnet_unparse_number` in core/parser.cpp), used for manifestation,
 * `std.toString`, string concatenation and `%s`.
 *
 * - Integral values (`v == floor(v)`): `%.0f`, i.e. the full exact decimal
 *   expansion (`1e21` → `1000000000000000000000`, `-0` → `-0`).
 * - Everything else: `%.17g` with glibc's exact rounding (round half to even on
 *   the exact binary value): `0.1` → `0.10000000000000001`,
 *   `1e-7` → `9.9999999999999995e-08`.
 */

const TWO_53 = 9007199254740992;

const f64 = new Float64Array(1);
const u32 = new Uint32Array(f64.buffer);
// Index of the high word: little endian on every platform Node supports, but check.
const HI = (() => {
  f64[0] = 1;
  return u32[1] === 0x3ff00000 ? 1 : 0;
})();
const LO = 1 - HI;

/** Formats a number as libjsonnet prints it. */
export function formatNumber(n: number): string {
  if (Number.isInteger(n)) {
    if (n === 0) return Object.is(n, -0) ? '-0' : '0';
    if (n > -TWO_53 && n < TWO_53) return String(n);
    return BigInt(n).toString();
  }
  if (n !== n) return 'nan'; // unreachable from Jsonnet (runtime error), as glibc prints it
  if (n === Infinity) return 'inf';
  if (n === -Infinity) return '-inf';
  return formatG17(n);
}

/**
 * `%.17g` of a finite, non-integral double. Uses V8's correctly rounded
 * `toExponential(16)` (ties away from zero) whenever an exact tie at 17
 * significant digits is impossible, else the exact BigInt expansion.
 */
export function formatG17(n: number): string {
  f64[0] = n;
  const hi = u32[HI];
  const lo = u32[LO];
  const neg = hi >>> 31 === 1;
  const bexp = (hi >>> 20) & 0x7ff;
  // Significand as m * 2^e (m < 2^53).
  let mHi = hi & 0xfffff;
  let e: number;
  if (bexp === 0) {
    e = -1074;
  } else {
    mHi |= 0x100000;
    e = bexp - 1075;
  }
  // Number of trailing zero bits of the 53-bit significand (it is non-zero here).
  let tz: number;
  if (lo !== 0) tz = 31 - Math.clz32(lo & -lo);
  else tz = 32 + (31 - Math.clz32(mHi & -mHi));
  const fracBits = -(e + tz); // binary digits after the point; > 0 as n is non-integral
  // The exact expansion of an odd m * 2^-k has k fractional digits and ends in 5;
  // its significant digits are those of m * 5^k. A tie at 17 digits needs exactly
  // 18 significant digits, hence 5^k < 10^18, hence k <= 25.
  if (fracBits > 25) {
    return fromExponential(n.toExponential(16));
  }
  // Significant digits of the exact expansion = digits of mOdd * 5^k; a tie needs 18 of
  // them, i.e. a product in [1e17, 1e18) (checked with a margin for rounding).
  const mOdd = (mHi * 4294967296 + lo) / 2 ** tz;
  const p = mOdd * 5 ** fracBits;
  if (p < 0.99e17 || p >= 1.01e18) {
    return fromExponential(n.toExponential(16));
  }
  const m = (BigInt(mHi) << 32n) | BigInt(lo);
  return exactG17(neg, m, e);
}

/** Converts JS `d.dddde±X` (17 significant digits) into C's `%.17g` form. */
function fromExponential(s: string): string {
  const neg = s.charCodeAt(0) === 45;
  const body = neg ? s.slice(1) : s;
  const ePos = body.indexOf('e');
  const digits = body[0] + body.slice(2, ePos);
  const exp = Number(body.slice(ePos + 1));
  return layout(neg, digits, exp);
}

/** `%.17g` of (-1)^neg * m * 2^e, computed exactly (e < 0 here). */
function exactG17(neg: boolean, m: bigint, e: number): string {
  let digitsBig: bigint;
  let pointFromRight: number; // value = digitsBig * 10^-pointFromRight
  if (e >= 0) {
    digitsBig = m << BigInt(e);
    pointFromRight = 0;
  } else {
    digitsBig = m * 5n ** BigInt(-e);
    pointFromRight = -e;
  }
  let s = digitsBig.toString();
  // Decimal exponent of the leading digit.
  let exp = s.length - 1 - pointFromRight;
  if (s.length > 17) {
    const head = s.slice(0, 17);
    const first = s.charCodeAt(17) - 48;
    let roundUp: boolean;
    if (first > 5) roundUp = true;
    else if (first < 5) roundUp = false;
    else {
      let restZero = true;
      for (let i = 18; i < s.length; i++) {
        if (s.charCodeAt(i) !== 48) {
          restZero = false;
          break;
        }
      }
      roundUp = restZero ? (head.charCodeAt(16) - 48) % 2 === 1 : true;
    }
    if (roundUp) {
      const r = (BigInt(head) + 1n).toString();
      if (r.length > 17) {
        s = r.slice(0, 17);
        exp += 1;
      } else s = r;
    } else s = head;
  } else {
    s = s.padEnd(17, '0');
  }
  return layout(neg, s, exp);
}

/** Lays out 17 significant digits with decimal exponent `exp` as `%.17g` does. */
function layout(neg: boolean, digits: string, exp: number): string {
  // %g removes trailing zeros (no '#' flag).
  let end = digits.length;
  while (end > 1 && digits.charCodeAt(end - 1) === 48) end--;
  const d = digits.slice(0, end);
  let out: string;
  if (exp < -4 || exp >= 17) {
    const mant = d.length > 1 ? d[0] + '.' + d.slice(1) : d;
    const ae = Math.abs(exp);
    out = mant + (exp < 0 ? 'e-' : 'e+') + (ae < 10 ? '0' + ae : String(ae));
  } else if (exp < 0) {
    out = '0.' + '0'.repeat(-exp - 1) + d;
  } else if (d.length > exp + 1) {
    out = d.slice(0, exp + 1) + '.' + d.slice(exp + 1);
  } else {
    out = d + '0'.repeat(exp + 1 - d.length);
  }
  return neg ? '-' + out : out;
}

/** Slow reference path: exact `%.17g` for any finite non-zero double (for tests). */
export function formatG17Exact(n: number): string {
  f64[0] = n;
  const hi = u32[HI];
  const lo = u32[LO];
  const neg = hi >>> 31 === 1;
  const bexp = (hi >>> 20) & 0x7ff;
  let mHi = hi & 0xfffff;
  let e: number;
  if (bexp === 0) e = -1074;
  else {
    mHi |= 0x100000;
    e = bexp - 1075;
  }
  const m = (BigInt(mHi) << 32n) | BigInt(lo);
  return exactG17(neg, m, e);
}
