import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { STD_JSONNET } from '../src/stdlib/std-source.js';
import { JsonnetError, compile, evaluateToString, nativeFunction, type Json } from '../src/index.js';

interface JsonnetVm {
  extString(k: string, v: string): this;
  extCode(k: string, v: string): this;
  evaluateSnippet(code: string, filename?: string): Promise<string>;
}
const { Jsonnet } = createRequire(import.meta.url)('@hanazuki/node-jsonnet') as { Jsonnet: new () => JsonnetVm };

const EXT = { x: { kind: 'string' as const, value: 'hello' }, y: { kind: 'code' as const, value: '{a: 1, b: [1, 2]}' } };

async function oracle(code: string): Promise<string> {
  const vm = new Jsonnet().extString('x', 'hello').extCode('y', '{a: 1, b: [1, 2]}');
  try {
    return await vm.evaluateSnippet(code, 'snippet');
  } catch (e) {
    return (e as Error).message;
  }
}
function mine(code: string): string {
  try {
    return evaluateToString(code, { filename: 'snippet', extVars: EXT });
  } catch (e) {
    return (e as Error).message;
  }
}
const firstLine = (s: string): string => (/^(RUNTIME|STATIC) ERROR/.test(s) ? s.split('\n')[0] : s);

/** Programs that succeed: compared with libjsonnet in one batch (one array). */
const SUCCESS = [
  // literals, numbers, strings
  'null', 'true', '[1, 2.5, -0, 1e21, 0.1, 1/3, 1e-7, 5e-324, 123456789012345678]', '"a\\u00e9\\ud83d\\ude00"',
  "@'a''b'", '|||\n  text\n    block\n|||', '"\\u0000\\u001f\\u007f\\u0080\\u2028 / \\" \\\\"',
  // locals and functions
  'local f(x, y=x * 2) = x + y; [f(1), f(1, 5), f(y=3, x=1)]',
  'local fib(n) = if n < 2 then n else fib(n - 1) + fib(n - 2); fib(15)',
  'local a = [b, 1], b = 2; a', 'local sum(x, v) = if x <= 0 then v else sum(x - 1, x + v) tailstrict; sum(10000, 0)',
  '(function(x) function(y) x * y)(3)(4)', 'std.length(function(a, b) a)',
  // objects, self, super, $
  '{a: 1, b: self.a + 1, c:: 3, d::: 4}', '{a: 1} + {a: 10, b: super.a}', '{a: {b: 1}} + {a+: {c: 2}}',
  '{x: 1, y: {z: $.x}}', '{local l = self.a * 2, a: 3, b: l}', '{a:::1}+{a::2}+{a:3}', '{a::1}+{a:2}',
  '{f(x): x * 2, g:: self.f(3)}.g', '{a: "a" in super, b: "b" in self, c:: 1}', '({a: 1} + {b: super.a}).b',
  '{[k]: k + "!" for k in ["b", "a"]}', '{[if k == "a" then null else k]: 1 for k in ["a", "b"]}',
  '{a: 1} {b: 2}', 'std.objectFields({b: 1, a:: 2, c: 3})', '{a: 1} == {a: 1, b:: 2}',
  '{b: 1, a: 2, "é": 3, Z: 4, "😀": 5, "\\uff5a": 6, "\\ue000": 7, "10": 8, "9": 9, "": 10}',
  '{assert self.a > 0, a: 1}', 'local o = {a: 1, b: self.a + 1}; (o + {a: 10}).b',
  // arrays, comprehensions, slices
  '[x * y for x in [1, 2] for y in [10, 20] if x * y != 20]', '[x * x for x in [1, 2, error "e"]][0]',
  '[1, 2, 3, 4, 5][1:4:2]', '"hello"[1:]', '[1, 2] + [3]', '[1, 2] < [1, 3]', '"a😀bc"[1:3]',
  // operators
  '[-5 % 3, 5.5 % 2, 1 << 62, -1 >> 1, ~0, 5 & 3.7, 2e18 | 0, 6 ^ 3]', '"x" + 1 + [1] + {a: 1}', '"%s-%d" % ["a", 3]',
  '"\\uff5a" < "😀"', '!true || false && true', '1 != 2', 'if 1 > 2 then 3',
  // std
  'std.format("%5.2f|%-5d|%05d|%x|%o|%e|%g", [3.14159, 42, 42, 255, 8, 12345.678, 0.0001])',
  'std.manifestJsonEx({a: [1, 2], b: {}}, "  ")', 'std.toString({b: [1, "x"], a: {c: null}})',
  'std.manifestYamlDoc({a: [1, "x: y"], b: {}})', 'std.sort(["\\uff5a", "😀", "\\ue000", "a", "B"])',
  'std.map(function(x) x * 2, [1, 2])', 'std.foldl(function(a, b) a + b, std.range(1, 100), 0)',
  'std.foldr(function(a, b) a + b, ["a", "b"], "")', 'std.filter(function(x) x % 2 == 0, std.range(1, 10))',
  'std.join(",", ["a", null, "b"])', 'std.split("a,b,,c", ",")', 'std.splitLimit("a,b,c", ",", 1)',
  'std.strReplace("aaa", "a", "bb")', 'std.substr("a😀bc", 1, 2)', 'std.stringChars("a😀")', 'std.codepoint("😀")',
  'std.char(128512)', 'std.md5("😀")', 'std.base64("é")', 'std.encodeUTF8("😀")', 'std.decodeUTF8([104, 105])',
  'std.parseJson("{\\"a\\": [1, 2.5, null]}")', 'std.mergePatch({a: 1, b: {c: 2}}, {b: {c: null, d: 3}})',
  'std.set([3, 1, 2, 1])', 'std.setUnion([1, 3], [2, 3])', 'std.uniq([1, 1, 2])', 'std.reverse("ab")',
  'std.flatMap(function(x) [x, x], [1, 2])', 'std.mapWithIndex(function(i, x) i + x, [10, 20])',
  'std.makeArray(3, function(i) i * i)', 'std.type(std)', 'std.thisFile', 'std.extVar("x")', 'std.extVar("y")',
  'std.prune({a: null, b: [], c: {d: null}})', 'std.manifestIni({sections: {s: {a: 1}}})', 'std.lines(["a", "b"])',
  'std.asciiUpper("abc é")', 'std.exponent(8) + std.mantissa(8)', 'std.pow(2, 10)', 'std.floor(-1.5)',
  'std.objectValues({a: 1, b: 2})', 'std.mapWithKey(function(k, v) k + v, {a: "x"})', 'std.escapeStringJson("\\u007f")',
  // natives that replace std.jsonnet functions
  '[std.format("%05.2f|%+d|%x|%o|%#x|% d|%-4s|%c", [i / 7, i, i * 255, i + 8, 255, i, "ab", 65]) for i in std.range(-3, 3)]',
  'std.format("%(a)s %(b)05.1f %%", {a: "x", b: 2.25})', 'std.format("%.3e|%g|%G|%.0f|%.1f", [12345.678, 0.0001, 1e-10, 2.5, 0.25])',
  'std.format("%*d|%-*d|%.*f", [5, 42, 4, 7, 2, 3.14159])', '"%s" % [[0.1]]', 'std.format("%d", -3.9)',
  'std.setUnion([1, 3, 5], [2, 3, 4])', 'std.setInter(["a", "b"], ["b", "c"])', 'std.setDiff([1, 2, 3], [2])',
  'std.setMember(2, [1, 2, 3])', 'std.set([{a: 2}, {a: 1}, {a: 2}], function(x) x.a)', 'std.sort([[3], [1]])',
  'std.slice([1, 2, 3, 4, 5], 1, 4, 2)', 'std.slice("abcdef", 1, null, 2)', 'std.flattenArrays([[1], [2, [3]], []])',
  'std.repeat("ab", 2)', 'std.stripChars("xxaxx", "xa")', 'std.findSubstr("aa", "aaaa")', 'std.member("abc", "bc")',
  'std.count([1, 1, 2], 1)', 'std.lines(["a", null, "b"])', 'std.startsWith("abc", "ab")', 'std.split("a::b::c", "::")',
];

/** Programs that fail: compared with libjsonnet one by one (first line). */
const ERRORS = [
  'x', '1/0', 'error "foo"', 'error {a: 1}', '{a: 1}.b', '[1][1]', '[1][0.5]', '[1]["a"]', '"abc"[5]', 'null[0]',
  'local f(x) = x; f(1, 2)', 'local f(x) = x; f(y=1)', 'local f(x, y) = x; f(1)', 'local f(x) = x; f(1, x=2)',
  'assert false; 1', 'assert false : "msg"; 1', '{assert false, a: 1}.a', 'if 1 then 2', '1 + null', '"a" * 2',
  '-"a"', '!1', '1 in {}', '{a: 1} + 1', 'std.length(1)', '1e309', '1.5e300 * 1e10', 'std.sqrt(-1)',
  '{[k]: 1 for k in ["b", "a", "b"]}', '[x for x in 1]', 'function(x) x', '{a: function(x) x}',
  'local f(x) = f(x + 1); f(0)', '(function(x) x) == (function(x) x)', 'std.makeArray(-1, function(i) i)',
  'std.codepoint("ab")', 'std.char(-1)', 'std.extVar("nope")', '5 % 0', '1 << -1', 'self', 'super.a',
  '{a: 1, a: 2}', '{a: 1 b: 2}', 'std.join(",", ["a", 1])', 'std.substr("a", -1, 1)', '"\\ud83d"', 'local x = 1, x = 2; x',
  'function(x, x) x', '{a: super.b}.a', '"%d" % "a"', 'std.format("%s %s", ["a"])',
  'std.format("%z", 1)', 'std.format("%(a)s", {})', 'std.format("%", [])', 'std.setUnion([1], ["a"])', 'std.sort([3, "a"])',
  'std.slice([1, 2, 3], -1, null, null)', 'std.flattenArrays([[1], 2])', 'std.repeat(1, 2)', 'std.stripChars(1, "a")',
  'std.member(1, 1)', 'std.lines(["a", 1])', 'std.split("a,b", "")', '[1, "a"] < [1, 2]', 'std.foldl(function(a, b) a + b, 1, 0)',
  'std.parseJson("broken")', 'std.parseJson("[1, 2")', 'std.parseJson("{\\"a\\" 1}")', 'std.parseJson("\\"a\\\\qb\\"")',
  'std.parseJson("\\n\\n  x")', 'std.parseJson("1 2")', 'std.escapeStringJson("a\\u0000")',
  'local f(n) = if n == 0 then 0 else 1 + f(n - 1); f(495)', 'local f(n) = if n == 0 then {v: 0} else {v: 1 + f(n - 1).v}; f(495).v',
];

describe('jsonnet evaluator against libjsonnet', () => {
  it('agrees on successful programs (one batch)', async () => {
    const batch = `[\n${SUCCESS.join(',\n')}\n]`;
    const expected = await oracle(batch);
    expect(expected).not.toMatch(/ERROR/);
    const got = mine(batch);
    if (got !== expected) {
      // Localise the difference for a readable failure.
      for (const c of SUCCESS) expect([c, mine(c)]).toEqual([c, await oracle(c)]);
    }
    expect(got).toBe(expected);
  });

  it('agrees on the first line of errors', async () => {
    const expected = await Promise.all(ERRORS.map(oracle));
    for (let i = 0; i < ERRORS.length; i++) {
      expect(expected[i]).toMatch(/^(RUNTIME|STATIC) ERROR/);
      expect([ERRORS[i], firstLine(mine(ERRORS[i]))]).toEqual([ERRORS[i], firstLine(expected[i])]);
    }
  });
});

describe('jsonnet evaluator', () => {
  it('embeds the vendored std.jsonnet unchanged', () => {
    const file = readFileSync(new URL('../src/stdlib/std.jsonnet', import.meta.url), 'utf8');
    // If this fails: node packages/jsonnet/src/stdlib/generate-std-source.mjs
    expect(STD_JSONNET).toBe(file);
    expect(file).toContain('Copyright 2015 Google Inc.');
  });

  it('prints like the jsonnet CLI', () => {
    expect(evaluateToString('{a: [], b: {}, c: [[]], d: ""}')).toBe('{\n   "a": [ ],\n   "b": { },\n   "c": [\n      [ ]\n   ],\n   "d": ""\n}\n');
    expect(evaluateToString('0.1')).toBe('0.10000000000000001\n');
  });

  it('evaluates a compiled program many times with different external variables', () => {
    const p = compile("{a: std.extVar('x') + 1}", { extVars: { x: { kind: 'code', value: '1' } } });
    expect(p.evaluate()).toEqual({ a: 2 });
    expect(p.evaluate({ x: { kind: 'code', value: '41' } })).toEqual({ a: 42 });
    expect(p.evaluate({ x: { kind: 'string', value: 'a' } })).toEqual({ a: 'a1' });
  });

  it('binds top-level arguments', () => {
    const out = evaluateToString('function(a, b=2) {a: a, b: b}', { tlaVars: { a: { kind: 'string', value: 's' } } });
    expect(JSON.parse(out)).toEqual({ a: 's', b: 2 });
  });

  it('throws JsonnetError with the libjsonnet text', () => {
    expect(() => evaluateToString('{a: 1}.b')).toThrow(JsonnetError);
    expect(() => evaluateToString('{a: 1}.b')).toThrow(/^RUNTIME ERROR: field does not exist: b\n/);
    expect(() => evaluateToString('x', { filename: 't.jsonnet' })).toThrow('STATIC ERROR: t.jsonnet:1:1: Unknown variable: x');
  });

  it('bounds the stack depth', () => {
    expect(() => evaluateToString('local f(x) = 1 + f(x); f(0)')).toThrow(/^RUNTIME ERROR: max stack frames exceeded\./);
    expect(() => evaluateToString('local f(n) = if n == 0 then 0 else 1 + f(n - 1); f(50)', { maxStack: 10 })).toThrow('max stack frames exceeded.');
    expect(evaluateToString('local f(n) = if n == 0 then 0 else 1 + f(n - 1); f(50)', { maxStack: 100 })).toBe('50\n');
  });

  it('calls native callbacks through std.native', () => {
    const out = evaluateToString('[std.native("add")(1, 2), std.native("missing")]', {
      nativeCallbacks: { add: { params: ['a', 'b'], fn: (a, b) => (a as number) + (b as number) } },
    });
    expect(JSON.parse(out)).toEqual([3, null]);
    expect(() => evaluateToString('std.native("id")([1])', { nativeCallbacks: { id: { params: ['x'], fn: (x) => x } } })).toThrow(
      'RUNTIME ERROR: native extensions can only take primitives.',
    );
  });

  it('imports binary files as bytes when the callback gives them', () => {
    const out = evaluateToString('importbin "b.bin"', {
      importCallback: (base, rel) => ({ path: base + rel, content: '', bytes: Uint8Array.from([255, 0, 1]) }),
    });
    expect(JSON.parse(out)).toEqual([255, 0, 1]);
  });

  it('stops runaway programs at the time budget', () => {
    const t0 = Date.now();
    expect(() => evaluateToString('local f(x) = f(x + 1) tailstrict; f(0)', { timeoutMs: 50 })).toThrow(
      'RUNTIME ERROR: evaluation exceeded its time budget of 50 ms',
    );
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(evaluateToString('std.length(std.range(1, 100000))', { timeoutMs: 5000 })).toBe('100000\n');
  });

  it('refuses imports without an import callback', () => {
    expect(() => evaluateToString('import "a.libsonnet"')).toThrow('RUNTIME ERROR: couldn\'t open import "a.libsonnet"');
    const files: Record<string, string> = { 'lib/a.libsonnet': '{v: importstr "b.txt", f: std.thisFile}', 'lib/b.txt': 'B' };
    const out = evaluateToString('(import "lib/a.libsonnet")', {
      importCallback: (base, rel) => (files[base + rel] === undefined ? undefined : { path: base + rel, content: files[base + rel] }),
    });
    expect(JSON.parse(out)).toEqual({ v: 'B', f: 'lib/a.libsonnet' });
  });

  it('binds globals: per evaluation, or once with natives', () => {
    let current: Json = null;
    const p = compile("{v: Body('a'), d: Body('zz', 'dflt'), g: G}", {
      globals: {
        Body: nativeFunction(['path', 'default'], (path, d) => {
          const v = (current as Record<string, Json>)[path as string];
          return v === undefined ? d : v;
        }, [undefined, null]),
        G: 1,
      },
    });
    current = { a: 5 };
    expect(p.evaluate()).toEqual({ v: 5, d: 'dflt', g: 1 });
    current = { a: [1, { b: 2 }] };
    expect(p.evaluate(undefined, { G: 'x' })).toEqual({ v: [1, { b: 2 }], d: 'dflt', g: 'x' });
    const q = compile('x + 1', { globals: ['x'] });
    expect(q.evaluate(undefined, { x: 41 })).toBe(42);
    expect(() => q.evaluate()).toThrow('RUNTIME ERROR: binary operator + requires matching types, got null and number.');
  });

  it('reports the call site of failing natives', () => {
    const p = compile("f('a')", { filename: 't', globals: { f: nativeFunction(['x'], () => { throw new Error('nope'); }) } });
    expect(() => p.evaluate()).toThrow('RUNTIME ERROR: nope\n\tt:1:1-7\t\n');
  });

  it('prints stack traces in the libjsonnet format', () => {
    expect(mine('local f(x) = error "a"; f(1)')).toBe('RUNTIME ERROR: a\n\tsnippet:1:14-23\tfunction <f>\n\tsnippet:1:25-29\t\n');
    expect(mine('local g(x) = x + 1; g("a" * 2)')).toBe(
      'RUNTIME ERROR: binary operator * requires matching types, got string and number.\n\tsnippet:1:23-30\tthunk <x>\n\tsnippet:1:14\tfunction <g>\n\tsnippet:1:21-31\t\n',
    );
  });

  it('keeps array elements, fields and locals lazy', () => {
    expect(evaluateToString('local x = error "no"; [1, error "e"][0] + {a: error "x", b: 2}.b')).toBe('3\n');
  });
});
