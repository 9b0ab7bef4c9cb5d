/**
 * Decimal numbers read exactly from their text (a JSON number's source text, or a string), for
 * the INTEGER and NUMERIC columns: through a double, `12345678901234567890` or `0.1` would not
 * reach the table as sent. BigInt does the arithmetic; nothing here goes through a double.
 */

/** `-12.5e3`: an optional sign, digits, an optional fraction and exponent (JSON's number, with "+" and leading zeros allowed). */
const DECIMAL_TEXT = /^([+-]?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/;

/** A decimal value: `(negative ? -1 : 1) * digits * 10^exponent`, with `digits` free of leading and trailing zeros ('' for zero). */
export interface Decimal {
  readonly negative: boolean;
  readonly digits: string;
  readonly exponent: number;
}

/** The decimal a text spells, or undefined when it is not a decimal number. */
export function parseDecimal(text: string): Decimal | undefined {
  const m = DECIMAL_TEXT.exec(text);
  if (!m) return undefined;
  const fraction = m[3] ?? '';
  const all = (m[2] + fraction).replace(/^0+/, '');
  const digits = all.replace(/0+$/, '');
  if (digits === '') return { negative: false, digits: '', exponent: 0 };
  // A huge written exponent is kept as a huge number: the callers' range checks refuse it.
  const written = m[4] === undefined ? 0 : Number(m[4]);
  return { negative: m[1] === '-', digits, exponent: written - fraction.length + (all.length - digits.length) };
}

/** Digits before the point (0 for a value below 1). */
function integerDigits(d: Decimal): number {
  return d.digits === '' ? 0 : Math.max(0, d.digits.length + d.exponent);
}

const INT64_MIN = -(2n ** 63n);
const INT64_MAX = 2n ** 63n - 1n;

/** The value as a decimal integer text (`-42`) when it is a whole number within 64 bits; otherwise undefined. */
export function int64Text(d: Decimal): string | undefined {
  if (d.digits === '') return '0';
  if (d.exponent < 0 || integerDigits(d) > 19) return undefined;
  const n = BigInt(d.digits + '0'.repeat(d.exponent)) * (d.negative ? -1n : 1n);
  return n < INT64_MIN || n > INT64_MAX ? undefined : n.toString();
}

/**
 * The value as a plain decimal text (`-1.5`, `0.00000015`, no exponent), rounded half away from
 * zero to `scale` digits after the point; undefined when more than `precision - scale` digits
 * stand before the point (it would not fit a DECIMAL(precision, scale)).
 */
export function plainDecimalText(d: Decimal, precision: number, scale: number): string | undefined {
  if (d.digits === '') return '0';
  if (integerDigits(d) > precision - scale) return undefined;
  let units: bigint;
  if (d.exponent >= -scale) {
    units = BigInt(d.digits + '0'.repeat(d.exponent + scale));
  } else {
    // More digits after the point than the scale keeps: round the cut digits.
    const cut = -scale - d.exponent;
    if (cut > d.digits.length) {
      // Below half of the last kept unit (the first cut digit is a 0).
      return '0';
    }
    const kept = d.digits.slice(0, d.digits.length - cut);
    units = BigInt(kept === '' ? '0' : kept) + (d.digits.charCodeAt(d.digits.length - cut) >= 0x35 ? 1n : 0n);
  }
  if (units === 0n) return '0';
  const text = units.toString().padStart(scale + 1, '0');
  const whole = text.slice(0, text.length - scale);
  const fraction = text.slice(text.length - scale).replace(/0+$/, '');
  // Rounding up can carry into a new integer digit (999…9.9999999995): checked again.
  if (whole.length > precision - scale) return undefined;
  return `${d.negative ? '-' : ''}${whole}${fraction === '' ? '' : `.${fraction}`}`;
}

/** Whether the text is a decimal number (the FLOAT column reads it with Number then). */
export function isDecimalText(text: string): boolean {
  return DECIMAL_TEXT.test(text);
}
