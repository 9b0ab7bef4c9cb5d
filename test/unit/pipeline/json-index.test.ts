import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonIndex } from '../../../src/pipeline/columns/json-index.js';
import { lookupPath, parseJson, parsePath, stringifyJson, type JsonValue } from '../../../src/pipeline/columns/index.js';
import { createRecordContext } from '../../../src/pipeline/columns/index.js';

/** What the exact parser answers for a path: the value's JSON, "missing", or the parse error. */
function exact(text: string, path: string): string {
  let root: JsonValue;
  try {
    root = parseJson(text);
  } catch (err) {
    return `error: ${(err as Error).message}`;
  }
  const v = lookupPath(root, parsePath(path));
  return v === undefined ? 'missing' : stringifyJson(v);
}

/** What the index answers for a path; its column texts (textAt, remembered for containers) must say the same. */
function indexed(text: string, path: string): string | undefined {
  const index = JsonIndex.of(text);
  if (index === undefined) return undefined;
  const v = index.valueAt(parsePath(path));
  // Twice: the second answer of a container comes from what the first remembered.
  for (let twice = 0; twice < 2; twice++) {
    expect(index.textAt(parsePath(path), false)).toBe(v === undefined ? undefined : stringifyJson(v));
    expect(index.textAt(parsePath(path), true)).toBe(v === undefined ? undefined : typeof v === 'string' ? v : stringifyJson(v));
  }
  return v === undefined ? 'missing' : stringifyJson(v);
}

/** JSON texts with the shapes that matter here: whitespace, escapes, duplicate and numeric keys, nesting. */
const keyArb = fc.oneof(fc.constantFrom('a', 'b', '0', '1', 'a.b', 'é', ''), fc.string({ maxLength: 4 }));
const ws = fc.constantFrom('', ' ', '\n\t ', '\r');
const leaf = fc.oneof(
  fc.string({ maxLength: 6 }).map((s) => JSON.stringify(s)),
  fc.constantFrom('"a\\"b"', '"\\u00e9\\n"', '"\\/"', '0', '-0', '1.5', '-12e3', '1E+400', '1e-400', '12345678901234567890', 'true', 'false', 'null'),
);
const jsonText: fc.Arbitrary<string> = fc.letrec<{ value: string }>((tie) => ({
  value: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.tuple(fc.array(fc.tuple(keyArb, tie('value'), ws), { maxLength: 5 }), ws).map(
      ([members, w]) => `{${w}${members.map(([k, v, w2]) => `${JSON.stringify(k).replace('a', '\\u0061')}${w2}:${w2}${v}`).join(`,${w}`)}${w}}`,
    ),
    fc.tuple(fc.array(tie('value'), { maxLength: 4 }), ws).map(([items, w]) => `[${w}${items.join(`${w},`)}]`),
  ),
})).value;
const pathArb = fc.array(fc.oneof(keyArb.filter((k) => !/[.[]/.test(k)), fc.nat(3).map((n) => `[${n}]`)), { minLength: 1, maxLength: 3 }).map((steps) =>
  steps.map((s, i) => (s.startsWith('[') || i === 0 ? s : `.${s}`)).join(''),
);
/** Texts a byte away from valid: the index must refuse every one the exact parser refuses. */
const mangled = fc.tuple(jsonText, fc.nat(), fc.constantFrom('', '"', '}', ',', '\\', '\u0001', 'x', '01', '-', '1.', '1e')).map(
  ([text, at, insert]) => {
    const i = at % (text.length + 1);
    return text.slice(0, i) + insert + text.slice(i + 1);
  },
);

describe('JsonIndex: a JSON object read by member spans', () => {
  it('answers every path as the exact parser does (values and column texts), and indexes every object it parses', () => {
    fc.assert(
      fc.property(jsonText.map((t) => `{"a":${t},"b":[${t}],"a":{"a":${t}}}`), pathArb, (text, path) => {
        expect(indexed(text, path)).toBe(exact(text, path));
      }),
      { numRuns: 2000 },
    );
    fc.assert(
      fc.property(jsonText, pathArb, (text, path) => {
        const expected = exact(text, path);
        const got = indexed(text, path);
        if (text.trimStart().startsWith('{')) expect(got).toBe(expected);
        else expect(got).toBeUndefined();
      }),
      { numRuns: 2000 },
    );
  });

  it('gives no index for a text the exact parser refuses, so that its error is the one a user reads', () => {
    fc.assert(
      fc.property(mangled.map((t) => `{"k":${t}}`), (text) => {
        if (exact(text, 'k').startsWith('error: ')) expect(JsonIndex.of(text)).toBeUndefined();
        else expect(indexed(text, 'k')).toBe(exact(text, 'k'));
      }),
      { numRuns: 5000 },
    );
    for (const bad of ['{"a":1}x', '{"a":01}', '{"a":"\u0001"}', '{"a":tru}', '{"a" 1}', '{"a":1,}', '{"a":[1,]}', '{"a":"\\x"}', '{"a":1e}', '{"a":-}']) {
      expect(JsonIndex.of(bad), bad).toBeUndefined();
    }
  });

  it('leaves to the exact parser what it does not read itself: a top level other than an object, nesting past its depth', () => {
    expect(JsonIndex.of('[1,2]')).toBeUndefined();
    expect(JsonIndex.of('"a"')).toBeUndefined();
    const deep = `{"a":${'['.repeat(100)}${']'.repeat(100)}}`;
    expect(JsonIndex.of(deep)).toBeUndefined();
    const ctx = createRecordContext({ receivedAt: new Date(), ip: '', headers: { 'Content-Type': 'application/json' }, body: Buffer.from(deep), signal: '' });
    expect(stringifyJson(ctx.bodyValue(parsePath('a[0]'))!)).toBe(`${'['.repeat(99)}${']'.repeat(99)}`);
  });

  it('notes a number that may be beyond the double range (an exponent of three digits), not one that is not', () => {
    expect(JsonIndex.of('{"a":1e400}')!.largeExponent).toBe(true);
    expect(JsonIndex.of('{"a":1E-0400}')!.largeExponent).toBe(true);
    expect(JsonIndex.of('{"a":1e+099,"b":"1e400"}')!.largeExponent).toBe(false);
  });

  it('reads a path column the same through the record context, before and after the whole body is parsed', () => {
    const body = '{"a": {"b": [10, {"c": "x\\u0041"}]}, "n": 1.50, "a": {"b": [20, {"c": "y"}]}}';
    const ctx = createRecordContext({ receivedAt: new Date(), ip: '', headers: { 'Content-Type': 'application/json' }, body: Buffer.from(body), signal: '' });
    const paths = ['a.b[1].c', 'a.b.0', 'n', 'a.x', 'a.b[2]'];
    const before = paths.map((p) => ctx.bodyValue(parsePath(p)));
    ctx.parsedBody();
    const after = paths.map((p) => ctx.bodyValue(parsePath(p)));
    expect(before.map((v) => (v === undefined ? 'missing' : stringifyJson(v)))).toEqual(['"y"', '20', '1.50', 'missing', 'missing']);
    expect(after).toEqual(before);
  });
});
