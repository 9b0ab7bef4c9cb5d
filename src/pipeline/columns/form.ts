/**
 * application/x-www-form-urlencoded bodies, parsed into the same ordered JSON tree as JSON
 * bodies, with the reference's nested keys:
 *
 *   one=two&five=&six          {"one":"two","five":"","six":""}
 *   seven[0]=a&seven[1]=b      {"seven":["a","b"]}
 *   ten[]=x&ten[]=y            {"ten":["x","y"]}
 *   k[x][2]=z                  {"k":{"x":[null,null,"z"]}}
 *
 * A repeated plain key keeps its first position and its last value.
 */
import { JsonObject, type JsonValue } from './json.js';

export class FormSyntaxError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'FormSyntaxError';
  }
}

/** Largest array index a form key may address (guards against `a[999999999]=x`). */
const MAX_INDEX = 10_000;

export function parseForm(body: string): JsonObject {
  const root = new JsonObject();
  let semicolon = false;
  let rest = body;
  while (rest !== '') {
    const amp = rest.indexOf('&');
    let pair: string;
    if (amp < 0) {
      pair = rest;
      rest = '';
    } else {
      pair = rest.slice(0, amp);
      rest = rest.slice(amp + 1);
    }
    if (pair.includes(';')) {
      semicolon = true;
      continue;
    }
    if (pair === '') continue;
    const eq = pair.indexOf('=');
    const rawKey = eq < 0 ? pair : pair.slice(0, eq);
    const rawValue = eq < 0 ? '' : pair.slice(eq + 1);
    const key = queryUnescape(rawKey);
    const value = queryUnescape(rawValue);
    const { steps, append } = parseKey(key);
    if (append) appendAt(root, steps, value);
    else setAt(root, steps, value);
  }
  if (semicolon) throw new FormSyntaxError('invalid semicolon separator in query');
  return root;
}

/** Go's url.QueryUnescape: "+" is a space, %XX a byte; the bytes are UTF-8. */
export function queryUnescape(s: string): string {
  if (!s.includes('%')) return s.includes('+') ? s.replace(/\+/g, ' ') : s;
  const bytes: number[] = [];
  for (let i = 0; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c === 0x25 /* % */) {
      const h1 = hexVal(s.charCodeAt(i + 1));
      const h2 = hexVal(s.charCodeAt(i + 2));
      if (i + 2 >= s.length || h1 < 0 || h2 < 0) {
        throw new FormSyntaxError(`invalid URL escape ${JSON.stringify(s.slice(i, i + 3))}`);
      }
      bytes.push(h1 * 16 + h2);
      i += 2;
    } else if (c === 0x2b /* + */) {
      bytes.push(0x20);
    } else if (c < 0x80) {
      bytes.push(c);
    } else {
      // Non-ASCII text: re-encode the character as UTF-8.
      const cp = s.codePointAt(i)!;
      if (cp > 0xffff) i++;
      for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) bytes.push(b);
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

function hexVal(c: number): number {
  if (c >= 0x30 && c <= 0x39) return c - 0x30;
  if (c >= 0x61 && c <= 0x66) return c - 0x57;
  if (c >= 0x41 && c <= 0x46) return c - 0x37;
  return -1;
}

type Step = string | number;

/** "a[b][0][]" -> steps ["a", "b", 0], append = true. */
function parseKey(key: string): { steps: Step[]; append: boolean } {
  const parts = key.split('[').filter((p) => p !== '');
  const steps: Step[] = [];
  for (let i = 0; i < parts.length; i++) {
    let part = parts[i];
    if (i === 0) {
      steps.push(part);
      continue;
    }
    if (!part.endsWith(']')) throw new FormSyntaxError(`Unable to parse key ${JSON.stringify(key)}`);
    part = part.slice(0, -1);
    if (part === '') {
      if (i === parts.length - 1) return { steps, append: true };
      throw new FormSyntaxError(`Unable to parse key ${JSON.stringify(key)}`);
    }
    if (/^[+-]?\d+$/.test(part)) {
      const n = Number(part);
      if (n < 0 || n > MAX_INDEX) throw new FormSyntaxError(`Unable to parse key ${JSON.stringify(key)}`);
      steps.push(n);
    } else {
      steps.push(part);
    }
  }
  return { steps, append: false };
}

type Container = JsonObject | JsonValue[];

function getChild(c: Container, step: Step): JsonValue | undefined {
  if (typeof step === 'number') return Array.isArray(c) ? c[step] : undefined;
  return c instanceof JsonObject ? c.get(step) : undefined;
}

function setChild(c: Container, step: Step, v: JsonValue, key: Step[]): void {
  if (typeof step === 'number') {
    if (!Array.isArray(c)) throw typeMismatch(key);
    while (c.length < step) c.push(null);
    c[step] = v;
  } else {
    if (!(c instanceof JsonObject)) throw typeMismatch(key);
    c.set(step, v);
  }
}

function typeMismatch(steps: Step[]): FormSyntaxError {
  return new FormSyntaxError(`invalid square brackets in query: key "${formatSteps(steps)}"`);
}

function formatSteps(steps: Step[]): string {
  return steps.map((s, i) => (typeof s === 'number' ? `[${s}]` : i === 0 ? s : `[${s}]`)).join('');
}

/** Walks to the parent of the last step, creating objects/arrays as the next step needs. */
function parentOf(root: JsonObject, steps: Step[]): Container {
  let cur: Container = root;
  for (let i = 0; i < steps.length - 1; i++) {
    const next = steps[i + 1];
    let child = getChild(cur, steps[i]);
    const wantArray = typeof next === 'number';
    if (child === undefined || child === null) {
      child = wantArray ? [] : new JsonObject();
      setChild(cur, steps[i], child, steps);
    } else if (wantArray ? !Array.isArray(child) : !(child instanceof JsonObject)) {
      throw typeMismatch(steps);
    }
    cur = child as Container;
  }
  return cur;
}

function setAt(root: JsonObject, steps: Step[], value: string): void {
  setChild(parentOf(root, steps), steps[steps.length - 1], value, steps);
}

function appendAt(root: JsonObject, steps: Step[], value: string): void {
  const parent = parentOf(root, steps);
  const last = steps[steps.length - 1];
  const existing = getChild(parent, last);
  if (existing === undefined || existing === null) {
    setChild(parent, last, [value], steps);
  } else if (Array.isArray(existing)) {
    existing.push(value);
  } else {
    throw new FormSyntaxError('invalid square brackets in query');
  }
}
