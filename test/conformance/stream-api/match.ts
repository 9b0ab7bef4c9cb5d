/**
 * Matching of an actual response body against an `expected-response.json` of the Stream API
 * conformance suite.
 *
 * Expected files use the PHPUnit `StringMatchesFormat` wildcards (`%s`, `%d`, `%x`, `%A`, ...),
 * sometimes unquoted (`"duration": %d`) and sometimes in place of whole object members or array
 * elements (`{ "sinkId": "a", %A }`), so they are not always valid JSON. The reference runner
 * matched them as text against the actual body pretty-printed in the server's own key order. Here
 * key order must not matter, and a plain "sort both texts" approach breaks `%A` used as "any other
 * members" (the other members sort before and after the listed ones). So the expected text is
 * parsed into a pattern tree with a lenient JSON grammar and matched leaf by leaf:
 *
 * - object: listed keys must be present and match; other keys are allowed only if the object
 *   holds a bare `%A` member; key order never matters;
 * - array: order-sensitive; a bare `%A` element matches any run of elements (possibly none);
 * - quoted string: the wildcards apply to the JSON-escaped string content, as in the text form;
 * - bare token (`%d`, `12`, `true`, `-%d`): matched against the compact JSON text of the actual
 *   value; a bare `%A` as a value matches any value.
 *
 * An expected text that does not parse as such (a text body) is matched as a whole, wildcards
 * to regex, against the actual text (pretty-printed with sorted keys when it is JSON).
 */

// ---------------------------------------------------------------------------------------------
// Wildcards

/** PHPUnit StringMatchesFormatDescription wildcards, as regex sources (used with the `s` flag). */
const WILDCARDS: Record<string, string> = {
  e: '/',
  s: '[^\\r\\n]+',
  S: '[^\\r\\n]*',
  a: '.+',
  A: '.*',
  w: '\\s*',
  i: '[+-]?\\d+',
  d: '\\d+',
  x: '[0-9a-fA-F]+',
  f: '[+-]?\\.?\\d+\\.?\\d*(?:[Ee][+-]?\\d+)?',
  c: '.',
};

const escapeRegex = (s: string): string => s.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');

/** Splits a format string into literal text and wildcard tokens; `%%` is a literal `%`. */
export function splitFormat(format: string): Array<{ literal: string } | { wildcard: string }> {
  const parts: Array<{ literal: string } | { wildcard: string }> = [];
  let lit = '';
  for (let i = 0; i < format.length; i++) {
    const ch = format[i];
    if (ch === '%' && i + 1 < format.length) {
      const next = format[i + 1];
      if (next === '%') {
        lit += '%';
        i++;
        continue;
      }
      if (Object.prototype.hasOwnProperty.call(WILDCARDS, next)) {
        if (lit) parts.push({ literal: lit });
        lit = '';
        parts.push({ wildcard: next });
        i++;
        continue;
      }
    }
    lit += ch;
  }
  if (lit) parts.push({ literal: lit });
  return parts;
}

export const hasWildcard = (format: string): boolean => splitFormat(format).some((p) => 'wildcard' in p);

/** The regex source of a format string (no anchors), literal parts mapped by `mapLiteral`. */
export function formatToRegexSource(format: string, mapLiteral: (s: string) => string = (s) => s): string {
  return splitFormat(format)
    .map((p) => ('wildcard' in p ? `(?:${WILDCARDS[p.wildcard]})` : escapeRegex(mapLiteral(p.literal))))
    .join('');
}

/** Whether the whole `text` matches the format string. */
export function matchesFormat(format: string, text: string): boolean {
  return new RegExp(`^${formatToRegexSource(format)}$`, 's').test(text);
}

// ---------------------------------------------------------------------------------------------
// Pattern tree

export type Pattern =
  | { kind: 'object'; members: Array<{ key: string; rawKey: string; value: Pattern }>; rest: boolean }
  | { kind: 'array'; items: Array<Pattern | { kind: 'restItems' }> }
  /** `raw` is the content between the quotes, still JSON-escaped. */
  | { kind: 'string'; raw: string }
  /** An unquoted token: a JSON literal, or a wildcard form such as `%d`. */
  | { kind: 'bare'; raw: string };

class PatternSyntaxError extends Error {}

const STRUCTURAL = new Set(['{', '}', '[', ']', ',', ':', '"']);
const isSpace = (ch: string): boolean => ch === ' ' || ch === '\t' || ch === '\n' || ch === '\r';
const isAnyMarker = (raw: string): boolean => raw === '%A' || raw === '%a';

/** Parses an expected body into a pattern; returns undefined when the text is not JSON-like. */
export function parsePattern(text: string): Pattern | undefined {
  let pos = 0;
  const fail = (msg: string): never => {
    throw new PatternSyntaxError(`${msg} at offset ${pos}`);
  };
  const skipSpace = (): void => {
    while (pos < text.length && isSpace(text[pos])) pos++;
  };
  const peek = (): string | undefined => {
    skipSpace();
    return text[pos];
  };
  const readString = (): string => {
    // at '"'
    const start = ++pos;
    while (pos < text.length && text[pos] !== '"') {
      if (text[pos] === '\\') pos++;
      if (text[pos] === '\n') fail('newline in string');
      pos++;
    }
    if (pos >= text.length) fail('unterminated string');
    const raw = text.slice(start, pos);
    pos++;
    // Validate the escapes (wildcards contain no backslash, so this is safe on the raw form).
    try {
      JSON.parse(`"${raw}"`);
    } catch {
      fail('invalid string escape');
    }
    return raw;
  };
  const readBare = (): string => {
    const start = pos;
    while (pos < text.length && !STRUCTURAL.has(text[pos]) && !isSpace(text[pos])) pos++;
    if (pos === start) fail(`unexpected character ${JSON.stringify(text[pos] ?? 'end of input')}`);
    const raw = text.slice(start, pos);
    if (!hasWildcard(raw)) {
      try {
        JSON.parse(raw);
      } catch {
        fail(`invalid literal ${JSON.stringify(raw)}`);
      }
    }
    return raw;
  };
  const parseValue = (): Pattern => {
    const ch = peek();
    if (ch === '{') return parseObject();
    if (ch === '[') return parseArray();
    if (ch === '"') return { kind: 'string', raw: readString() };
    return { kind: 'bare', raw: readBare() };
  };
  const parseObject = (): Pattern => {
    pos++; // {
    const members: Array<{ key: string; rawKey: string; value: Pattern }> = [];
    let rest = false;
    for (;;) {
      const ch = peek();
      if (ch === '}') {
        pos++;
        break;
      }
      if (ch === ',') {
        pos++;
        continue;
      }
      if (ch === '"') {
        const rawKey = readString();
        if (peek() !== ':') fail('expected ":"');
        pos++;
        const value = parseValue();
        members.push({ key: JSON.parse(`"${rawKey}"`) as string, rawKey, value });
        continue;
      }
      if (ch === undefined) fail('unterminated object');
      const raw = readBare();
      if (!isAnyMarker(raw)) fail(`unexpected ${JSON.stringify(raw)} in an object`);
      rest = true;
    }
    return { kind: 'object', members, rest };
  };
  const parseArray = (): Pattern => {
    pos++; // [
    const items: Array<Pattern | { kind: 'restItems' }> = [];
    for (;;) {
      const ch = peek();
      if (ch === ']') {
        pos++;
        break;
      }
      if (ch === ',') {
        pos++;
        continue;
      }
      if (ch === undefined) fail('unterminated array');
      const item = parseValue();
      items.push(item.kind === 'bare' && item.raw === '%A' ? { kind: 'restItems' } : item);
    }
    return { kind: 'array', items };
  };

  try {
    const p = parseValue();
    if (peek() !== undefined) fail('trailing text');
    return p;
  } catch (err) {
    if (err instanceof PatternSyntaxError) return undefined;
    throw err;
  }
}

// ---------------------------------------------------------------------------------------------
// Matching

export interface Mismatch {
  /** JSONPath-like location, `$.a.b[0]`. */
  path: string;
  message: string;
}

const isPlainObject = (v: unknown): v is Record<string, unknown> =>
  typeof v === 'object' && v !== null && !Array.isArray(v);

const childPath = (path: string, key: string): string =>
  /^[A-Za-z_$][A-Za-z0-9_$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;

const describe = (v: unknown): string => {
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (isPlainObject(v)) return 'an object';
  const s = JSON.stringify(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
};

/** The literal parts of a string pattern re-escaped the way JSON.stringify escapes. */
const canonicalEscapes = (rawLiteral: string): string => {
  try {
    return JSON.stringify(JSON.parse(`"${rawLiteral}"`)).slice(1, -1);
  } catch {
    return rawLiteral;
  }
};

const stringPatternRegexes = new Map<string, RegExp>();
function stringPatternMatches(raw: string, actual: string): boolean {
  let re = stringPatternRegexes.get(raw);
  if (!re) {
    re = new RegExp(`^${formatToRegexSource(raw, canonicalEscapes)}$`, 's');
    stringPatternRegexes.set(raw, re);
  }
  return re.test(JSON.stringify(actual).slice(1, -1));
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((x, i) => deepEqual(x, b[i]));
  if (isPlainObject(a) && isPlainObject(b)) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => k in b && deepEqual(a[k], b[k]));
  }
  return false;
}

/** Matches a value against a pattern; returns the first mismatch found, or undefined. */
export function matchPattern(p: Pattern, actual: unknown, path = '$'): Mismatch | undefined {
  switch (p.kind) {
    case 'bare': {
      if (isAnyMarker(p.raw)) return undefined;
      if (!hasWildcard(p.raw)) {
        const expected = JSON.parse(p.raw) as unknown;
        return deepEqual(expected, actual) ? undefined : { path, message: `expected ${p.raw}, got ${describe(actual)}` };
      }
      const text = isPlainObject(actual) || Array.isArray(actual) ? prettyJson(actual) : JSON.stringify(actual);
      return matchesFormat(p.raw, text) ? undefined : { path, message: `expected ${p.raw}, got ${describe(actual)}` };
    }
    case 'string': {
      if (typeof actual !== 'string') return { path, message: `expected a string "${p.raw}", got ${describe(actual)}` };
      return stringPatternMatches(p.raw, actual) ? undefined : { path, message: `expected "${p.raw}", got ${describe(actual)}` };
    }
    case 'object': {
      if (!isPlainObject(actual)) return { path, message: `expected an object, got ${describe(actual)}` };
      const remaining = new Set(Object.keys(actual));
      const wildcardMembers: typeof p.members = [];
      for (const m of p.members) {
        if (hasWildcard(m.rawKey)) {
          wildcardMembers.push(m);
          continue;
        }
        if (!Object.prototype.hasOwnProperty.call(actual, m.key)) return { path, message: `missing key ${JSON.stringify(m.key)}` };
        remaining.delete(m.key);
        const sub = matchPattern(m.value, actual[m.key], childPath(path, m.key));
        if (sub) return sub;
      }
      for (const m of wildcardMembers) {
        const found = [...remaining].find(
          (k) => stringPatternMatches(m.rawKey, k) && !matchPattern(m.value, actual[k], childPath(path, k)),
        );
        if (found === undefined) return { path, message: `no key matching "${m.rawKey}" with a matching value` };
        remaining.delete(found);
      }
      if (!p.rest && remaining.size > 0) {
        return { path, message: `unexpected key(s) ${[...remaining].map((k) => JSON.stringify(k)).join(', ')}` };
      }
      return undefined;
    }
    case 'array': {
      if (!Array.isArray(actual)) return { path, message: `expected an array, got ${describe(actual)}` };
      const items = p.items;
      const hasRest = items.some((i) => i.kind === 'restItems');
      if (!hasRest) {
        for (let i = 0; i < Math.min(items.length, actual.length); i++) {
          const sub = matchPattern(items[i] as Pattern, actual[i], `${path}[${i}]`);
          if (sub) return sub;
        }
        return items.length === actual.length
          ? undefined
          : { path, message: `expected ${items.length} item(s), got ${actual.length}` };
      }
      return arrayWithRestMatches(items, actual, path)
        ? undefined
        : { path, message: `no alignment of the ${actual.length} item(s) with the expected items and %A` };
    }
  }
}

/** Order-sensitive match of items where `restItems` stands for any run of elements. */
function arrayWithRestMatches(items: Array<Pattern | { kind: 'restItems' }>, actual: unknown[], path: string): boolean {
  const memo = new Map<string, boolean>();
  const go = (i: number, j: number): boolean => {
    const key = `${i},${j}`;
    const cached = memo.get(key);
    if (cached !== undefined) return cached;
    let ok: boolean;
    if (i === items.length) ok = j === actual.length;
    else {
      const item = items[i];
      if (item.kind === 'restItems') ok = go(i + 1, j) || (j < actual.length && go(i, j + 1));
      else ok = j < actual.length && !matchPattern(item, actual[j], `${path}[${j}]`) && go(i + 1, j + 1);
    }
    memo.set(key, ok);
    return ok;
  };
  return go(0, 0);
}

// ---------------------------------------------------------------------------------------------
// Rendering (sorted keys, two-space indentation) and diff

/** A render tree: JSON structure whose leaves are already-rendered text. */
type Doc =
  | { t: 'raw'; text: string }
  | { t: 'obj'; entries: Array<{ sortKey: string; keyText: string; value: Doc }>; tail: string[] }
  | { t: 'arr'; items: Doc[] };

function toDoc(v: unknown): Doc {
  if (Array.isArray(v)) return { t: 'arr', items: v.map(toDoc) };
  if (isPlainObject(v)) {
    return {
      t: 'obj',
      entries: Object.keys(v).map((k) => ({ sortKey: k, keyText: JSON.stringify(k), value: toDoc(v[k]) })),
      tail: [],
    };
  }
  return { t: 'raw', text: v === undefined ? 'null' : JSON.stringify(v) };
}

function patternDoc(p: Pattern | { kind: 'restItems' }): Doc {
  switch (p.kind) {
    case 'restItems':
      return { t: 'raw', text: '%A' };
    case 'bare':
      return { t: 'raw', text: p.raw };
    case 'string':
      return { t: 'raw', text: `"${p.raw}"` };
    case 'object':
      return {
        t: 'obj',
        entries: p.members.map((m) => ({ sortKey: m.key, keyText: `"${m.rawKey}"`, value: patternDoc(m.value) })),
        tail: p.rest ? ['%A'] : [],
      };
    case 'array':
      return { t: 'arr', items: p.items.map(patternDoc) };
  }
}

/**
 * The expected side of the diff: the actual value wherever the pattern matched it, the pattern
 * text where it did not, so that a line diff against the actual shows only the real differences.
 */
function projectDoc(p: Pattern, actual: unknown): Doc {
  if (!matchPattern(p, actual)) return toDoc(actual);
  if (p.kind === 'object' && isPlainObject(actual)) {
    const entries: Array<{ sortKey: string; keyText: string; value: Doc }> = [];
    const listed = new Set<string>();
    for (const m of p.members) {
      if (hasWildcard(m.rawKey)) continue;
      listed.add(m.key);
      const value = Object.prototype.hasOwnProperty.call(actual, m.key)
        ? projectDoc(m.value, actual[m.key])
        : patternDoc(m.value);
      entries.push({ sortKey: m.key, keyText: JSON.stringify(m.key), value });
    }
    const wildcardMembers = p.members.filter((m) => hasWildcard(m.rawKey));
    for (const k of Object.keys(actual)) {
      if (listed.has(k)) continue;
      // Unlisted keys are expected when `%A` or a wildcard key allows them; otherwise they are
      // left out so the diff shows them as unexpected.
      if (p.rest || wildcardMembers.some((m) => stringPatternMatches(m.rawKey, k))) {
        entries.push({ sortKey: k, keyText: JSON.stringify(k), value: toDoc(actual[k]) });
      }
    }
    return { t: 'obj', entries, tail: [] };
  }
  if (p.kind === 'array' && Array.isArray(actual) && !p.items.some((i) => i.kind === 'restItems')) {
    const items: Doc[] = p.items.map((item, i) =>
      i < actual.length ? projectDoc(item as Pattern, actual[i]) : patternDoc(item),
    );
    return { t: 'arr', items };
  }
  return patternDoc(p);
}

function renderDoc(doc: Doc, indent = ''): string {
  const inner = `${indent}  `;
  switch (doc.t) {
    case 'raw':
      return doc.text;
    case 'arr':
      if (doc.items.length === 0) return '[]';
      return `[\n${doc.items.map((d) => inner + renderDoc(d, inner)).join(',\n')}\n${indent}]`;
    case 'obj': {
      const sorted = [...doc.entries].sort((a, b) => (a.sortKey < b.sortKey ? -1 : a.sortKey > b.sortKey ? 1 : 0));
      const lines = sorted.map((e) => `${inner}${e.keyText}: ${renderDoc(e.value, inner)}`);
      lines.push(...doc.tail.map((t) => inner + t));
      if (lines.length === 0) return '{}';
      return `{\n${lines.join(',\n')}\n${indent}}`;
    }
  }
}

/** JSON with two-space indentation and keys sorted at every level. */
export function prettyJson(v: unknown): string {
  return renderDoc(toDoc(v));
}

/** The expected text normalised: sorted keys, two-space indentation, wildcards kept. */
export function normalizeExpected(text: string): string {
  const p = parsePattern(text);
  return p ? renderDoc(patternDoc(p)) : text.trim();
}

/**
 * A line diff (LCS) of `expected` vs `actual`, `- ` for expected-only lines, `+ ` for actual-only
 * lines, with `context` lines around each change, at most `maxLines` lines of output.
 */
export function lineDiff(
  expected: string,
  actual: string,
  eq: (e: string, a: string) => boolean = (e, a) => e === a,
  context = 3,
  maxLines = 60,
): { text: string; firstDifferingLine?: number } {
  const e = expected.split('\n');
  const a = actual.split('\n');
  const n = e.length;
  const m = a.length;
  // LCS lengths from the end.
  const lcs: Uint32Array[] = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      lcs[i][j] = eq(e[i], a[j]) ? lcs[i + 1][j + 1] + 1 : Math.max(lcs[i + 1][j], lcs[i][j + 1]);
    }
  }
  const ops: Array<{ op: ' ' | '-' | '+'; text: string; eLine: number }> = [];
  let i = 0;
  let j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && eq(e[i], a[j])) {
      ops.push({ op: ' ', text: a[j], eLine: i + 1 });
      i++;
      j++;
    } else if (i < n && (j >= m || lcs[i + 1][j] >= lcs[i][j + 1])) {
      ops.push({ op: '-', text: e[i], eLine: i + 1 });
      i++;
    } else {
      ops.push({ op: '+', text: a[j], eLine: i + 1 });
      j++;
    }
  }
  const firstChange = ops.findIndex((o) => o.op !== ' ');
  if (firstChange < 0) return { text: '' };
  const keep = new Array<boolean>(ops.length).fill(false);
  ops.forEach((o, k) => {
    if (o.op === ' ') return;
    for (let c = Math.max(0, k - context); c <= Math.min(ops.length - 1, k + context); c++) keep[c] = true;
  });
  const out: string[] = [];
  let skipped = false;
  for (let k = 0; k < ops.length; k++) {
    if (!keep[k]) {
      skipped = true;
      continue;
    }
    if (skipped && out.length > 0) out.push('  ...');
    skipped = false;
    out.push(`${ops[k].op} ${ops[k].text}`);
  }
  const truncated = out.length > maxLines;
  const shown = truncated ? out.slice(0, maxLines) : out;
  if (truncated) shown.push(`  ... (${out.length - maxLines} more diff lines)`);
  return { text: shown.join('\n'), firstDifferingLine: ops[firstChange].eLine };
}

export interface BodyMatchResult {
  ok: boolean;
  /** One-line reason, e.g. `$.version.number: expected 1, got 2`. */
  reason?: string;
  /** Multi-line readable diff, `- expected` / `+ actual`. */
  diff?: string;
}

/**
 * Matches an actual response body text against an expected text (placeholders already
 * substituted). An empty actual body counts as `{}` when a JSON body is expected, as in the
 * reference runner.
 */
export function matchBody(expectedText: string, actualText: string): BodyMatchResult {
  const expected = expectedText.trim();
  const actualTrimmed = actualText.trim();
  let actual: unknown;
  let actualIsJson = false;
  if (actualTrimmed === '') {
    actual = {};
    actualIsJson = true;
  } else {
    try {
      actual = JSON.parse(actualTrimmed);
      actualIsJson = true;
    } catch {
      actualIsJson = false;
    }
  }

  const pattern = parsePattern(expected);
  if (pattern && actualIsJson) {
    const mismatch = matchPattern(pattern, actual);
    if (!mismatch) return { ok: true };
    const exp = renderDoc(projectDoc(pattern, actual));
    const act = prettyJson(actual);
    const d = lineDiff(exp, act);
    return {
      ok: false,
      reason: `${mismatch.path}: ${mismatch.message}`,
      diff: `--- expected (normalised; matched parts shown as actual)\n+++ actual (sorted keys)\n${
        d.firstDifferingLine !== undefined ? `first differing line: ${d.firstDifferingLine}\n` : ''
      }${d.text}`,
    };
  }

  // Text comparison: the whole expected format against the actual text.
  const actualForText = actualIsJson ? prettyJson(actual) : actualTrimmed;
  if (matchesFormat(expected, actualForText)) return { ok: true };
  const expForDiff = pattern ? renderDoc(patternDoc(pattern)) : expected;
  const d = lineDiff(expForDiff, actualForText, (e, a) => matchesFormat(e, a));
  return {
    ok: false,
    reason: pattern && !actualIsJson ? 'expected a JSON body, got a non-JSON body' : 'body text does not match',
    diff: `--- expected\n+++ actual\n${
      d.firstDifferingLine !== undefined ? `first differing line: ${d.firstDifferingLine}\n` : ''
    }${d.text}`,
  };
}
