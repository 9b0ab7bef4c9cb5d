/**
 * A JSON object body read without building its tree: one validating pass over the text notes
 * where each top-level member's key and value are, and a path lookup then materialises only
 * the value it lands on (a string sliced out, a number as its text, an object or array parsed
 * on its own). The sinks' path columns and `Body(path)` read a few fields of each record; the
 * whole tree (every key, string and number of `resource`, `scope`, ...) was most of the
 * mapping's allocations, kept alive for the whole batch, and so most of its GC.
 *
 * The values are those of the exact parser (json.ts) on the same text: keys compared decoded,
 * the last of duplicate keys wins, numbers keep their text. Anything the pass is not sure of
 * (invalid JSON, which the exact parser words; a top level that is not an object; nesting
 * deeper than json-scan.ts follows) gives no index, and the caller parses the whole text as before.
 */
import { columnText, JsonNumber, parseJson, stringifyJson, type JsonValue } from './json.js';
import { scanned, skipString, skipValue, skipWs } from './json-scan.js';
import type { BodyPath } from './path.js';

export class JsonIndex {
  /**
   * Per top-level member, four numbers: the key's start and end (its quotes included), then
   * the value's; the key's start is negated when the key has an escape (compared decoded).
   */
  private constructor(
    private readonly text: string,
    private readonly members: readonly number[],
    /**
     * Some number has an exponent of three digits or more (past the leading zeros), so it may
     * be beyond the double range: a reader that holds numbers as doubles has to look closer.
     */
    readonly largeExponent: boolean,
  ) {}

  /** The index of a JSON object's text; undefined when the text is anything else (see above). */
  static of(text: string): JsonIndex | undefined {
    const members: number[] = [];
    scanned.largeExponent = false;
    let i = skipWs(text, 0);
    if (text.charCodeAt(i) !== 0x7b /* { */) return undefined;
    i = skipWs(text, i + 1);
    if (text.charCodeAt(i) === 0x7d /* } */) return skipWs(text, i + 1) === text.length ? new JsonIndex(text, members, scanned.largeExponent) : undefined;
    for (;;) {
      if (text.charCodeAt(i) !== 0x22) return undefined;
      const keyStart = i;
      i = skipString(text, i);
      if (i < 0) return undefined;
      const escaped = scanned.escape;
      const keyEnd = i;
      i = skipWs(text, i);
      if (text.charCodeAt(i) !== 0x3a /* : */) return undefined;
      i = skipWs(text, i + 1);
      const valueStart = i;
      i = skipValue(text, i, 1);
      if (i < 0) return undefined;
      members.push(escaped ? -keyStart - 1 : keyStart, keyEnd, valueStart, i);
      i = skipWs(text, i);
      const c = text.charCodeAt(i);
      if (c === 0x2c /* , */) {
        i = skipWs(text, i + 1);
        continue;
      }
      if (c === 0x7d) return skipWs(text, i + 1) === text.length ? new JsonIndex(text, members, scanned.largeExponent) : undefined;
      return undefined;
    }
  }

  /** The value at a path, as parseJson + lookupPath give it; undefined when missing. */
  valueAt(path: BodyPath): JsonValue | undefined {
    // No step: the whole body (callers that keep the tree parse it once themselves).
    if (path.length === 0) return parseJson(this.text);
    const span = this.spanAt(path);
    return span === undefined ? undefined : materialise(this.text, span[0], span[1]);
  }

  /**
   * The value at a path as a column writes it: a string's text when `rawString`, otherwise its
   * compact JSON, as stringifyJson(valueAt(path)) gives it; undefined when missing.
   */
  textAt(path: BodyPath, rawString: boolean): string | undefined {
    if (path.length === 0) return columnText(parseJson(this.text), rawString);
    const span = this.spanAt(path);
    if (span === undefined) return undefined;
    const [start, end] = span;
    const first = this.text.charCodeAt(start);
    if (first === 0x7b || first === 0x5b) return compactJson(this.text, start, end);
    return columnText(materialise(this.text, start, end), rawString);
  }

  /** Where the value at a (non-empty) path is written: [start, end) of the text; undefined when missing. */
  private spanAt(path: BodyPath): [number, number] | undefined {
    const text = this.text;
    const key = path[0].key;
    const m = this.members;
    let start = -1;
    let end = -1;
    // The last of duplicate keys wins.
    for (let k = m.length - 4; k >= 0; k -= 4) {
      if (keyEquals(text, m[k], m[k + 1], key)) {
        start = m[k + 2];
        end = m[k + 3];
        break;
      }
    }
    if (start < 0) return undefined;
    for (let s = 1; s < path.length; s++) {
      const span = stepInto(text, start, path[s].key, path[s].index);
      if (span === undefined) return undefined;
      start = span[0];
      end = span[1];
    }
    return [start, end];
  }
}

/**
 * The compact JSON of the object or array written at [start, end), remembered by its text:
 * records of one request repeat their resource and scope (and often their attributes), and
 * parsing a container only to write it again was a good part of a path column's cost. Texts up
 * to COMPACT_TEXT_CHARS are remembered, COMPACT_KEPT of them at most (then forgotten at once).
 */
const compactTexts = new Map<string, string>();
const COMPACT_KEPT = 512;
const COMPACT_TEXT_CHARS = 4096;

function compactJson(text: string, start: number, end: number): string {
  const written = text.slice(start, end);
  if (written.length > COMPACT_TEXT_CHARS) return stringifyJson(parseJson(written));
  let compact = compactTexts.get(written);
  if (compact === undefined) {
    compact = stringifyJson(parseJson(written));
    if (compactTexts.size >= COMPACT_KEPT) compactTexts.clear();
    compactTexts.set(written, compact);
  }
  return compact;
}

/** Whether the key written at [start, end) (quotes included; start negated when escaped) is `key`. */
function keyEquals(text: string, start: number, end: number, key: string): boolean {
  if (start < 0) return (parseJson(text.slice(-start - 1, end)) as string) === key;
  return end - start - 2 === key.length && text.startsWith(key, start + 1);
}

/**
 * The span of the member `key` of the object, or of element `index` of the array, whose
 * (already validated) text starts at `start`; undefined when there is none or it is a scalar.
 */
function stepInto(text: string, start: number, key: string, index: number): [number, number] | undefined {
  const open = text.charCodeAt(start);
  let i = skipWs(text, start + 1);
  if (open === 0x7b) {
    let found: [number, number] | undefined;
    if (text.charCodeAt(i) === 0x7d) return undefined;
    for (;;) {
      const keyStart = i;
      i = skipString(text, i);
      const keyEnd = i;
      const escaped = scanned.escape;
      i = skipWs(text, skipWs(text, i) + 1);
      const valueStart = i;
      i = skipValue(text, i, 1);
      if (keyEquals(text, escaped ? -keyStart - 1 : keyStart, keyEnd, key)) found = [valueStart, i];
      i = skipWs(text, i);
      if (text.charCodeAt(i) !== 0x2c) return found;
      i = skipWs(text, i + 1);
    }
  }
  if (open === 0x5b /* [ */) {
    if (index < 0 || text.charCodeAt(i) === 0x5d) return undefined;
    for (let n = 0; ; n++) {
      const valueStart = i;
      i = skipValue(text, i, 1);
      if (n === index) return [valueStart, i];
      i = skipWs(text, i);
      if (text.charCodeAt(i) !== 0x2c) return undefined;
      i = skipWs(text, i + 1);
    }
  }
  return undefined;
}

/** The JsonValue written at [start, end) of valid text. */
function materialise(text: string, start: number, end: number): JsonValue {
  switch (text.charCodeAt(start)) {
    case 0x22: {
      const close = end - 1;
      const backslash = text.indexOf('\\', start + 1);
      return backslash < 0 || backslash >= close ? text.slice(start + 1, close) : (parseJson(text.slice(start, end)) as string);
    }
    case 0x7b:
    case 0x5b:
      return parseJson(text.slice(start, end));
    case 0x74:
      return true;
    case 0x66:
      return false;
    case 0x6e:
      return null;
    default:
      return new JsonNumber(text.slice(start, end));
  }
}
