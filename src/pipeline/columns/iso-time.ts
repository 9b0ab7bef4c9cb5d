/**
 * Dates and times as the DATE and TIMESTAMP columns read them, checked against the calendar
 * and written in the one form the targets import (common to both): `YYYY-MM-DD`, and
 * `YYYY-MM-DDTHH:MM:SS.sss[sss]Z` in UTC. Years 0001 to 9999 only: the form has four digits.
 */
import type { Decimal } from './decimal-text.js';

const DATE = /^(\d{4})-(\d{2})-(\d{2})$/;
/** RFC 3339 and ISO 8601's extended form: seconds optional, a fraction of any length, a zone required. */
const TIMESTAMP = /^(\d{4})-(\d{2})-(\d{2})[Tt ](\d{2}):(\d{2})(?::(\d{2})(?:[.,](\d+))?)?(?:([Zz])|([+-])(\d{2})(?::?(\d{2}))?)$/;

/** The UTC day's midnight (ms since 1970), or undefined when the day does not exist (2026-02-30) or its year is 0000. */
function dayStart(year: number, month: number, day: number): number | undefined {
  if (year < 1 || month < 1 || month > 12 || day < 1) return undefined;
  const t = new Date(0);
  // setUTCFullYear, not Date.UTC: Date.UTC reads the years 0 to 99 as 1900 to 1999.
  t.setUTCFullYear(year, month - 1, day);
  return t.getUTCMonth() === month - 1 && t.getUTCDate() === day ? t.getTime() : undefined;
}

/** The text when it is a calendar date `YYYY-MM-DD` (years 0001 to 9999); otherwise undefined. */
export function dateText(text: string): string | undefined {
  const m = DATE.exec(text);
  return m && dayStart(Number(m[1]), Number(m[2]), Number(m[3])) !== undefined ? text : undefined;
}

/**
 * `ms` (since 1970, a whole number) and `micros` (0 to 999: the microseconds below it) as the
 * column's text: milliseconds always, microseconds when there are any; undefined outside the
 * years 0001 to 9999.
 */
function utcText(ms: number, micros: number): string | undefined {
  const t = new Date(ms);
  const year = t.getUTCFullYear();
  // An Invalid Date (beyond the Date's range) has a NaN year, which fails this test too.
  if (!(year >= 1 && year <= 9999)) return undefined;
  const iso = t.toISOString();
  return micros === 0 ? iso : `${iso.slice(0, 23)}${String(micros).padStart(3, '0')}Z`;
}

/**
 * An ISO 8601 time with a zone (`2026-11-27T02:02:03.456789+01:00`, `...Z`) as UTC text;
 * undefined when it is not one, names a time that does not exist (hour 24, second 60, day 31 of
 * a 30-day month) or falls outside the years 0001 to 9999. Digits of a second's fraction beyond
 * microseconds, which neither target keeps, are cut.
 */
export function timestampText(text: string): string | undefined {
  const m = TIMESTAMP.exec(text);
  if (!m) return undefined;
  const day = dayStart(Number(m[1]), Number(m[2]), Number(m[3]));
  const [hour, minute, second] = [Number(m[4]), Number(m[5]), Number(m[6] ?? '0')];
  if (day === undefined || hour > 23 || minute > 59 || second > 59) return undefined;
  let offsetMinutes = 0;
  if (m[8] === undefined) {
    const [h, min] = [Number(m[10]), Number(m[11] ?? '0')];
    if (h > 23 || min > 59) return undefined;
    offsetMinutes = (m[9] === '-' ? -1 : 1) * (h * 60 + min);
  }
  const fraction = (m[7] ?? '').padEnd(6, '0');
  const ms = day + ((hour * 60 + minute - offsetMinutes) * 60 + second) * 1000 + Number(fraction.slice(0, 3));
  return utcText(ms, Number(fraction.slice(3, 6)));
}

/** Seconds since 1970 (a decimal, fractions to the microsecond; below it cut towards the past) as UTC text; undefined out of range. */
export function epochSecondsText(seconds: Decimal): string | undefined {
  if (seconds.digits === '') return utcText(0, 0);
  // Beyond 17 digits of seconds lies no year below 10000: refused before any big arithmetic.
  if (seconds.digits.length + seconds.exponent > 17) return undefined;
  const shift = seconds.exponent + 6;
  let micros: bigint;
  if (shift >= 0) {
    micros = BigInt(seconds.digits + '0'.repeat(shift));
  } else {
    const kept = seconds.digits.slice(0, Math.max(0, seconds.digits.length + shift));
    micros = BigInt(kept === '' ? '0' : kept);
    // A negative time with a cut fraction lies one microsecond further in the past.
    if (seconds.negative) micros += 1n;
  }
  if (seconds.negative) micros = -micros;
  const ms = micros / 1000n - (micros % 1000n < 0n ? 1n : 0n);
  return utcText(Number(ms), Number(micros - ms * 1000n));
}
