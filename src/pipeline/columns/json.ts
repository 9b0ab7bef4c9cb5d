/**
 * The body's JSON value as the column renderers see it: objects keep their keys in insertion
 * order (also integer-like keys, which plain JS objects would move to the front) and numbers
 * keep their original text, so a `path` column re-encodes `12345678901234567890` or `1.0`
 * exactly as the client sent it (the reference reads the body with fastjson, which does the
 * same). Duplicate keys: the last value wins, at the first key's position.
 */

export type JsonValue = null | boolean | string | JsonNumber | JsonObject | JsonValue[];

/** A JSON number, kept as its source text. */
export class JsonNumber {
  constructor(readonly raw: string) {}
  valueOf(): number {
    return Number(this.raw);
  }
}

/** Above this many keys an object gets a Map index; below it a linear scan is faster. */
const INDEX_THRESHOLD = 12;

/** A JSON object with insertion-ordered keys. */
export class JsonObject {
  readonly keys: string[] = [];
  readonly values: JsonValue[] = [];
  private index: Map<string, number> | undefined;

  get size(): number {
    return this.keys.length;
  }

  private find(key: string): number {
    if (this.index !== undefined) {
      const i = this.index.get(key);
      return i === undefined ? -1 : i;
    }
    const keys = this.keys;
    for (let i = 0; i < keys.length; i++) {
      if (keys[i] === key) return i;
    }
    return -1;
  }

  get(key: string): JsonValue | undefined {
    const i = this.find(key);
    return i < 0 ? undefined : this.values[i];
  }

  has(key: string): boolean {
    return this.find(key) >= 0;
  }

  /** Sets a key; an existing key keeps its position and takes the new value. */
  set(key: string, value: JsonValue): void {
    const i = this.find(key);
    if (i >= 0) {
      this.values[i] = value;
      return;
    }
    this.keys.push(key);
    this.values.push(value);
    if (this.index !== undefined) {
      this.index.set(key, this.keys.length - 1);
    } else if (this.keys.length > INDEX_THRESHOLD) {
      this.index = new Map();
      for (let j = 0; j < this.keys.length; j++) this.index.set(this.keys[j], j);
    }
  }

  static fromEntries(entries: Iterable<readonly [string, JsonValue]>): JsonObject {
    const o = new JsonObject();
    for (const [k, v] of entries) o.set(k, v);
    return o;
  }
}

/** Thrown by parseJson; the message follows Go's encoding/json wording. */
export class JsonSyntaxError extends Error {
  constructor(
    message: string,
    readonly offset: number,
  ) {
    super(message);
    this.name = 'JsonSyntaxError';
  }
}

const MAX_DEPTH = 10_000;

/** Parses JSON text (RFC 8259) into a JsonValue; throws JsonSyntaxError. */
export function parseJson(text: string): JsonValue {
  const p = new Parser(text);
  p.skipWs();
  const v = p.value(0);
  p.skipWs();
  if (p.pos < text.length) throw p.err('after top-level value');
  return v;
}

function quoteChar(c: string): string {
  if (c === "'") return `'\\''`;
  if (c === '"') return `'"'`;
  const q = JSON.stringify(c);
  return `'${q.slice(1, -1)}'`;
}

class Parser {
  pos = 0;
  constructor(private readonly s: string) {}

  err(context: string): JsonSyntaxError {
    if (this.pos >= this.s.length) return new JsonSyntaxError('unexpected end of JSON input', this.pos);
    const cp = this.s.codePointAt(this.pos)!;
    return new JsonSyntaxError(`invalid character ${quoteChar(String.fromCodePoint(cp))} ${context}`, this.pos);
  }

  skipWs(): void {
    const s = this.s;
    let i = this.pos;
    for (;;) {
      const c = s.charCodeAt(i);
      if (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) i++;
      else break;
    }
    this.pos = i;
  }

  value(depth: number): JsonValue {
    const s = this.s;
    const c = s.charCodeAt(this.pos);
    switch (c) {
      case 0x7b /* { */:
        return this.object(depth + 1);
      case 0x5b /* [ */:
        return this.array(depth + 1);
      case 0x22 /* " */:
        return this.string();
      case 0x74 /* t */:
        this.literal('true');
        return true;
      case 0x66 /* f */:
        this.literal('false');
        return false;
      case 0x6e /* n */:
        this.literal('null');
        return null;
      default:
        if (c === 0x2d || (c >= 0x30 && c <= 0x39)) return this.number();
        throw this.err('looking for beginning of value');
    }
  }

  literal(word: string): void {
    const s = this.s;
    for (let k = 1; k < word.length; k++) {
      this.pos++;
      if (s.charCodeAt(this.pos) !== word.charCodeAt(k)) {
        throw this.err(`in literal ${word} (expecting '${word[k]}')`);
      }
    }
    this.pos++;
  }

  number(): JsonNumber {
    const s = this.s;
    const start = this.pos;
    let i = start;
    if (s.charCodeAt(i) === 0x2d) {
      i++;
      const d = s.charCodeAt(i);
      if (!(d >= 0x30 && d <= 0x39)) {
        this.pos = i;
        throw this.err('in numeric literal');
      }
    }
    if (s.charCodeAt(i) === 0x30) {
      i++;
    } else {
      while (i < s.length && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39) i++;
    }
    if (s.charCodeAt(i) === 0x2e /* . */) {
      i++;
      const d = s.charCodeAt(i);
      if (!(d >= 0x30 && d <= 0x39)) {
        this.pos = i;
        throw this.err('after decimal point in numeric literal');
      }
      while (i < s.length && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39) i++;
    }
    const e = s.charCodeAt(i);
    if (e === 0x65 || e === 0x45) {
      i++;
      const sign = s.charCodeAt(i);
      if (sign === 0x2b || sign === 0x2d) i++;
      const d = s.charCodeAt(i);
      if (!(d >= 0x30 && d <= 0x39)) {
        this.pos = i;
        throw this.err('in exponent of numeric literal');
      }
      while (i < s.length && s.charCodeAt(i) >= 0x30 && s.charCodeAt(i) <= 0x39) i++;
    }
    this.pos = i;
    return new JsonNumber(s.slice(start, i));
  }

  string(): string {
    const s = this.s;
    const start = this.pos + 1;
    let i = start;
    // Fast path: no escapes and no control characters.
    for (;;) {
      if (i >= s.length) {
        this.pos = i;
        throw this.err('in string literal');
      }
      const c = s.charCodeAt(i);
      if (c === 0x22) {
        this.pos = i + 1;
        return s.slice(start, i);
      }
      if (c === 0x5c || c < 0x20) break;
      i++;
    }
    let out = s.slice(start, i);
    for (;;) {
      if (i >= s.length) {
        this.pos = i;
        throw this.err('in string literal');
      }
      const c = s.charCodeAt(i);
      if (c === 0x22) {
        this.pos = i + 1;
        return out;
      }
      if (c < 0x20) {
        this.pos = i;
        throw this.err('in string literal');
      }
      if (c !== 0x5c) {
        const runStart = i;
        while (i < s.length) {
          const d = s.charCodeAt(i);
          if (d === 0x22 || d === 0x5c || d < 0x20) break;
          i++;
        }
        out += s.slice(runStart, i);
        continue;
      }
      i++;
      const esc = s.charCodeAt(i);
      switch (esc) {
        case 0x22:
          out += '"';
          break;
        case 0x5c:
          out += '\\';
          break;
        case 0x2f:
          out += '/';
          break;
        case 0x62:
          out += '\b';
          break;
        case 0x66:
          out += '\f';
          break;
        case 0x6e:
          out += '\n';
          break;
        case 0x72:
          out += '\r';
          break;
        case 0x74:
          out += '\t';
          break;
        case 0x75: {
          let code = 0;
          for (let k = 1; k <= 4; k++) {
            const h = s.charCodeAt(i + k);
            let v: number;
            if (h >= 0x30 && h <= 0x39) v = h - 0x30;
            else if (h >= 0x61 && h <= 0x66) v = h - 0x57;
            else if (h >= 0x41 && h <= 0x46) v = h - 0x37;
            else {
              this.pos = i + k;
              throw this.err('in \\u hexadecimal character escape');
            }
            code = code * 16 + v;
          }
          out += String.fromCharCode(code);
          i += 4;
          break;
        }
        default:
          this.pos = i;
          throw this.err('in string escape code');
      }
      i++;
    }
  }

  object(depth: number): JsonObject {
    if (depth > MAX_DEPTH) throw new JsonSyntaxError('exceeded max depth', this.pos);
    const s = this.s;
    const o = new JsonObject();
    this.pos++;
    this.skipWs();
    if (s.charCodeAt(this.pos) === 0x7d) {
      this.pos++;
      return o;
    }
    for (;;) {
      if (s.charCodeAt(this.pos) !== 0x22) throw this.err('looking for beginning of object key string');
      const key = this.string();
      this.skipWs();
      if (s.charCodeAt(this.pos) !== 0x3a) throw this.err('after object key');
      this.pos++;
      this.skipWs();
      o.set(key, this.value(depth));
      this.skipWs();
      const c = s.charCodeAt(this.pos);
      if (c === 0x2c) {
        this.pos++;
        this.skipWs();
        continue;
      }
      if (c === 0x7d) {
        this.pos++;
        return o;
      }
      throw this.err('after object key:value pair');
    }
  }

  array(depth: number): JsonValue[] {
    if (depth > MAX_DEPTH) throw new JsonSyntaxError('exceeded max depth', this.pos);
    const s = this.s;
    const a: JsonValue[] = [];
    this.pos++;
    this.skipWs();
    if (s.charCodeAt(this.pos) === 0x5d) {
      this.pos++;
      return a;
    }
    for (;;) {
      a.push(this.value(depth));
      this.skipWs();
      const c = s.charCodeAt(this.pos);
      if (c === 0x2c) {
        this.pos++;
        this.skipWs();
        continue;
      }
      if (c === 0x5d) {
        this.pos++;
        return a;
      }
      throw this.err('after array element');
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Encoding

/** Compact JSON of a JsonValue: keys in their order, numbers as sent, strings JSON-escaped. */
export function stringifyJson(v: JsonValue): string {
  if (typeof v === 'string') return JSON.stringify(v);
  if (v === null) return 'null';
  if (v === true) return 'true';
  if (v === false) return 'false';
  if (v instanceof JsonNumber) return v.raw;
  let out: string;
  if (Array.isArray(v)) {
    out = '[';
    for (let i = 0; i < v.length; i++) {
      if (i > 0) out += ',';
      out += stringifyJson(v[i]);
    }
    return out + ']';
  }
  out = '{';
  const { keys, values } = v;
  for (let i = 0; i < keys.length; i++) {
    if (i > 0) out += ',';
    out += JSON.stringify(keys[i]) + ':' + stringifyJson(values[i]);
  }
  return out + '}';
}

const GO_HTML_ESCAPE = /[<>&\u2028\u2029]/;
const GO_HTML_ESCAPE_G = /[<>&\u2028\u2029]/g;
const GO_ESCAPES: Record<string, string> = {
  '<': '\\u003c',
  '>': '\\u003e',
  '&': '\\u0026',
  '\u2028': '\\u2028',
  '\u2029': '\\u2029',
};

/** A value as a `path` column writes it: a string's text when `rawString`, otherwise its compact JSON. */
export function columnText(value: JsonValue, rawString: boolean): string {
  return rawString && typeof value === 'string' ? value : stringifyJson(value);
}

/** A JSON string literal as Go's encoding/json writes it (HTML-safe: <, >, & escaped). */
export function goJsonString(s: string): string {
  // Most strings are printable ASCII with nothing to escape: quoted as they are, without the
  // stringify and the pattern test (the flattening of OTLP writes several a record).
  let plain = true;
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c < 0x20 || c > 0x7e || c === 0x22 /* " */ || c === 0x5c /* \ */ || c === 0x3c /* < */ || c === 0x3e /* > */ || c === 0x26 /* & */) {
      plain = false;
      break;
    }
  }
  if (plain) return `"${s}"`;
  const q = JSON.stringify(s);
  return GO_HTML_ESCAPE.test(q) ? q.replace(GO_HTML_ESCAPE_G, (c) => GO_ESCAPES[c]) : q;
}

/** Plain JS value of a JsonValue (numbers as doubles, objects as plain objects). */
export function toPlain(v: JsonValue): unknown {
  if (v === null || typeof v !== 'object') return v;
  if (v instanceof JsonNumber) return Number(v.raw);
  if (Array.isArray(v)) return v.map(toPlain);
  const o: Record<string, unknown> = {};
  for (let i = 0; i < v.keys.length; i++) o[v.keys[i]] = toPlain(v.values[i]);
  return o;
}
