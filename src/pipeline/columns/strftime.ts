/**
 * strftime for `Now(format)`, with the conversions of the reference's formatter
 * (lestrrat-go/strftime, English names, UTC) plus `%f` = milliseconds (3 digits).
 * An unknown conversion or a trailing "%" is an error, as in the reference.
 */

export const DEFAULT_NOW_FORMAT = '%Y-%m-%dT%H:%M:%S.%fZ';

export class StrftimeError extends Error {
  constructor(format: string, reason: string) {
    super(`datetime format "${format}" is invalid: failed to compile format: ${reason}`);
    this.name = 'StrftimeError';
  }
}

const DAYS = ['Sunday', 'Monday', 'Tuesday', 'Wednesday', 'Thursday', 'Friday', 'Saturday'];
const MONTHS = [
  'January',
  'February',
  'March',
  'April',
  'May',
  'June',
  'July',
  'August',
  'September',
  'October',
  'November',
  'December',
];

const p2 = (n: number): string => (n < 10 ? '0' + n : String(n));
const s2 = (n: number): string => (n < 10 ? ' ' + n : String(n));
const p3 = (n: number): string => (n < 10 ? '00' + n : n < 100 ? '0' + n : String(n));

/** Go's "2006": at least 4 digits, sign for negative years. */
function year4(y: number): string {
  const a = Math.abs(y);
  const s = a < 10 ? '000' + a : a < 100 ? '00' + a : a < 1000 ? '0' + a : String(a);
  return y < 0 ? '-' + s : s;
}

/** Broken-down UTC time with the derived fields the conversions need. */
interface Parts {
  Y: number;
  m: number; // 1-12
  d: number;
  H: number;
  M: number;
  S: number;
  ms: number;
  wday: number; // 0 = Sunday
  yday: number; // 1-based
}

function partsOf(t: Date): Parts {
  const Y = t.getUTCFullYear();
  const start = Date.UTC(Y, 0, 1);
  const dayStart = Date.UTC(Y, t.getUTCMonth(), t.getUTCDate());
  return {
    Y,
    m: t.getUTCMonth() + 1,
    d: t.getUTCDate(),
    H: t.getUTCHours(),
    M: t.getUTCMinutes(),
    S: t.getUTCSeconds(),
    ms: t.getUTCMilliseconds(),
    wday: t.getUTCDay(),
    yday: Math.round((dayStart - start) / 86_400_000) + 1,
  };
}

/** ISO 8601 week-numbering year and week. */
function isoWeek(p: Parts): { year: number; week: number } {
  // Thursday of the current week decides the year.
  const dow = (p.wday + 6) % 7; // Monday = 0
  const thursday = new Date(Date.UTC(p.Y, p.m - 1, p.d - dow + 3));
  const year = thursday.getUTCFullYear();
  const jan1 = Date.UTC(year, 0, 1);
  const week = Math.floor((thursday.getTime() - jan1) / 86_400_000 / 7) + 1;
  return { year, week };
}

const hour12 = (h: number): number => (h === 0 ? 12 : h > 12 ? h - 12 : h);

type Conv = (p: Parts) => string;

const CONVERSIONS: Record<string, Conv> = {
  A: (p) => DAYS[p.wday],
  a: (p) => DAYS[p.wday].slice(0, 3),
  B: (p) => MONTHS[p.m - 1],
  b: (p) => MONTHS[p.m - 1].slice(0, 3),
  h: (p) => MONTHS[p.m - 1].slice(0, 3),
  C: (p) => p2(Math.trunc(p.Y / 100)),
  c: (p) =>
    `${DAYS[p.wday].slice(0, 3)} ${MONTHS[p.m - 1].slice(0, 3)} ${s2(p.d)} ${p2(p.H)}:${p2(p.M)}:${p2(p.S)} ${year4(p.Y)}`,
  D: (p) => `${p2(p.m)}/${p2(p.d)}/${p2(((p.Y % 100) + 100) % 100)}`,
  d: (p) => p2(p.d),
  e: (p) => s2(p.d),
  F: (p) => `${year4(p.Y)}-${p2(p.m)}-${p2(p.d)}`,
  f: (p) => p3(p.ms),
  G: (p) => year4(isoWeek(p).year),
  g: (p) => p2(((isoWeek(p).year % 100) + 100) % 100),
  H: (p) => p2(p.H),
  I: (p) => p2(hour12(p.H)),
  j: (p) => p3(p.yday),
  k: (p) => s2(p.H),
  l: (p) => s2(hour12(p.H)),
  M: (p) => p2(p.M),
  m: (p) => p2(p.m),
  n: () => '\n',
  p: (p) => (p.H < 12 ? 'AM' : 'PM'),
  R: (p) => `${p2(p.H)}:${p2(p.M)}`,
  r: (p) => `${p2(hour12(p.H))}:${p2(p.M)}:${p2(p.S)} ${p.H < 12 ? 'AM' : 'PM'}`,
  S: (p) => p2(p.S),
  T: (p) => `${p2(p.H)}:${p2(p.M)}:${p2(p.S)}`,
  t: () => '\t',
  U: (p) => p2(Math.floor((p.yday + 6 - p.wday) / 7)),
  u: (p) => String(p.wday === 0 ? 7 : p.wday),
  V: (p) => p2(isoWeek(p).week),
  v: (p) => `${s2(p.d)}-${MONTHS[p.m - 1].slice(0, 3)}-${year4(p.Y)}`,
  W: (p) => p2(Math.floor((p.yday + (p.wday === 0 ? 0 : 7 - p.wday)) / 7)),
  w: (p) => String(p.wday),
  X: (p) => `${p2(p.H)}:${p2(p.M)}:${p2(p.S)}`,
  x: (p) => `${p2(p.m)}/${p2(p.d)}/${p2(((p.Y % 100) + 100) % 100)}`,
  Y: (p) => year4(p.Y),
  y: (p) => p2(((p.Y % 100) + 100) % 100),
  Z: () => 'UTC',
  z: () => '+0000',
  '%': () => '%',
};

type Piece = string | Conv;

/** Compiles a format into literal text and conversions; throws StrftimeError. */
function compile(format: string): Piece[] {
  const pieces: Piece[] = [];
  let rest = format;
  while (rest.length > 0) {
    const i = rest.indexOf('%');
    if (i < 0) {
      pieces.push(rest);
      break;
    }
    if (i === rest.length - 1) throw new StrftimeError(format, 'stray % at the end of pattern');
    if (i > 0) pieces.push(rest.slice(0, i));
    const verb = rest[i + 1];
    const conv = CONVERSIONS[verb];
    if (conv === undefined) {
      throw new StrftimeError(
        format,
        `pattern compilation failed: lookup failed: '%${verb}' was not found in specification set`,
      );
    }
    pieces.push(conv);
    rest = rest.slice(i + 2);
  }
  return pieces;
}

const compiled = new Map<string, Piece[] | StrftimeError>();
const CACHE_LIMIT = 1000;

/** Formats a time (as UTC); throws StrftimeError for an invalid format. */
export function strftime(format: string, time: Date): string {
  if (format === DEFAULT_NOW_FORMAT) return time.toISOString();
  let pieces = compiled.get(format);
  if (pieces === undefined) {
    try {
      pieces = compile(format);
    } catch (e) {
      if (!(e instanceof StrftimeError)) throw e;
      pieces = e;
    }
    if (compiled.size >= CACHE_LIMIT) compiled.clear();
    compiled.set(format, pieces);
  }
  if (pieces instanceof StrftimeError) throw pieces;
  const p = partsOf(time);
  let out = '';
  for (const piece of pieces) out += typeof piece === 'string' ? piece : piece(p);
  return out;
}
