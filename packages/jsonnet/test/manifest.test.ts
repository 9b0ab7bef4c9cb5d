/**
 * Byte-exact manifestation and number formatting against libjsonnet v0.20.
 * The tables were produced by libjsonnet (@hanazuki/node-jsonnet); the differential
 * tests at the end re-run libjsonnet on seeded random doubles and strings.
 */
// The number tables deliberately use literals that round (e.g. 123456789012345678), as in Jsonnet source.
/* eslint-disable no-loss-of-precision */
import { createRequire } from 'node:module';
import { describe, expect, it } from 'vitest';
import { formatG17, formatG17Exact, formatNumber } from '../src/numbers.js';
import {
  ManifestError,
  compareCodePoints,
  escapeJsonString,
  escapeJsonStringBody,
  jsonnetToString,
  manifestJson,
  manifestJsonEx,
  manifestJsonInline,
  manifestJsonMinified,
  manifestJsonStd,
  sortedKeys,
  stdEscapeStringJson,
  type Json,
} from '../src/manifest.js';
import { mulberry32 } from './random.js';

// [Jsonnet expression, the same value in JS, std.toString / top-level output of libjsonnet]
const NUMBERS: Array<[string, number, string]> = [
  ["0.1", 0.1, "0.10000000000000001"],
  ["0.1+0.2", 0.1+0.2, "0.30000000000000004"],
  ["1/3", 1/3, "0.33333333333333331"],
  ["1e20", 1e20, "100000000000000000000"],
  ["1e21", 1e21, "1000000000000000000000"],
  ["-0", -0, "-0"],
  ["0", 0, "0"],
  ["1e-7", 1e-7, "9.9999999999999995e-08"],
  ["2.5e-300", 2.5e-300, "2.5e-300"],
  ["5e-324", 5e-324, "4.9406564584124654e-324"],
  ["123456789012345678", 123456789012345678, "123456789012345680"],
  ["123456789.5", 123456789.5, "123456789.5"],
  ["1e15", 1e15, "1000000000000000"],
  ["1e16", 1e16, "10000000000000000"],
  ["1e17", 1e17, "100000000000000000"],
  ["1.7976931348623157e308", 1.7976931348623157e308, "179769313486231570814527423731704356798070567525844996598917476803157260780028538760589558632766878171540458953514382464234321326889464182768467546703537516986049910576551282076245490090389328944075868508455133942304583236903222948165808559332123348274797826204144723168738177180919299881250404026184124858368"],
  ["std.pow(2,53)+1", 2 ** 53+1, "9007199254740992"],
  ["std.pow(2,53)", 2 ** 53, "9007199254740992"],
  ["2147039178361669.2", 2147039178361669.2, "2147039178361669.2"],
  ["1.5e-7", 1.5e-7, "1.4999999999999999e-07"],
  ["1e100", 1e100, "10000000000000000159028911097599180468360808563945281389781327557747838772170381060813469985856815104"],
  ["-1.5", -1.5, "-1.5"],
  ["0.5", 0.5, "0.5"],
  ["1e-5", 1e-5, "1.0000000000000001e-05"],
  ["1e-4", 1e-4, "0.0001"],
  ["0.001", 0.001, "0.001"],
  ["123.456", 123.456, "123.456"],
  ["1e22", 1e22, "10000000000000000000000"],
  ["-1e21", -1e21, "-1000000000000000000000"],
  ["2.2250738585072014e-308", 2.2250738585072014e-308, "2.2250738585072014e-308"],
  ["2.225073858507201e-308", 2.225073858507201e-308, "2.2250738585072009e-308"],
  ["4503599627370495.5", 4503599627370495.5, "4503599627370495.5"],
  ["0.30000000000000004", 0.30000000000000004, "0.30000000000000004"],
  ["1e16+2", 1e16+2, "10000000000000002"],
  ["12345678901234567.5", 12345678901234567.5, "12345678901234568"],
  ["100.5", 100.5, "100.5"],
  ["1e-320", 1e-320, "9.9998886718268301e-321"],
  ["-123456.789e-20", -123456.789e-20, "-1.23456789e-15"],
  ["9.5", 9.5, "9.5"],
  ["0.25", 0.25, "0.25"],
  ["1e300*10", 1e300*10, "10000000000000000525047602552044202487044685811081591549158541155118024579889081957863713750804478640437044438328838781769425232353604305756447921847867069828483872009265758037378302337947880900593689532349707999450811190389676408800746527427801424945792587888200568428381156694721963868654594005401600"],
  ["7e-5", 7e-5, "6.9999999999999994e-05"],
  ["99999999999999999999", 99999999999999999999, "100000000000000000000"],
  ["1.0000000000000002", 1.0000000000000002, "1.0000000000000002"],
  ["0.9999999999999999", 0.9999999999999999, "0.99999999999999989"],
  ["3.0000000000000004", 3.0000000000000004, "3.0000000000000004"],
  ["-2.5e-5", -2.5e-5, "-2.5000000000000001e-05"],
  ["1e23", 1e23, "99999999999999991611392"],
  ["5e-5", 5e-5, "5.0000000000000002e-05"],
  ["0.00009999999999999999", 0.00009999999999999999, "9.9999999999999991e-05"],
  ["123456789012345.67", 123456789012345.67, "123456789012345.67"],
];

// [string, std.escapeStringJson(s), top-level output without the final newline]
const STRINGS: Array<[string, string, string]> = [
  ["", "\"\"", "\"\""],
  ["a", "\"a\"", "\"a\""],
  ["\"", "\"\\\"\"", "\"\\\"\""],
  ["\\", "\"\\\\\"", "\"\\\\\""],
  ["/", "\"/\"", "\"/\""],
  ["'", "\"'\"", "\"'\""],
  ["\b\f\n\r\t", "\"\\b\\f\\n\\r\\t\"", "\"\\b\\f\\n\\r\\t\""],
  ["\u0001\u001f", "\"\\u0001\\u001f\"", "\"\\u0001\\u001f\""],
  ["\u007f", "\"\\u007f\"", "\"\\u007f\""],
  ["\u0080", "\"\\u0080\"", "\"\\u0080\""],
  ["\u009f", "\"\\u009f\"", "\"\\u009f\""],
  ["\u00a0", "\"\u00a0\"", "\"\u00a0\""],
  ["\u2028\u2029", "\"\u2028\u2029\"", "\"\u2028\u2029\""],
  ["é", "\"é\"", "\"é\""],
  ["😀", "\"😀\"", "\"😀\""],
  ["\uffff", "\"\uffff\"", "\"\uffff\""],
  ["\ufeff", "\"\ufeff\"", "\"\ufeff\""],
  ["a\"b\\c", "\"a\\\"b\\\\c\"", "\"a\\\"b\\\\c\""],
  ["\u0085", "\"\\u0085\"", "\"\\u0085\""],
  ["$%{}", "\"$%{}\"", "\"$%{}\""],
  ["\ud7ff\ue000", "\"\ud7ff\ue000\"", "\"\ud7ff\ue000\""],
];

interface ValueCase { src: string; value: Json; top: string; ex2: string; min: string; std: string; str: string; exOdd: string }
const VALUES: ValueCase[] = [
  {
    src: "{a: [], b: {}, c: [[]], d: \"\"}",
    value: {"a":[],"b":{},"c":[[]],"d":""},
    top: "{\n   \"a\": [ ],\n   \"b\": { },\n   \"c\": [\n      [ ]\n   ],\n   \"d\": \"\"\n}",
    ex2: "{\n  \"a\": [\n\n  ],\n  \"b\": {\n\n  },\n  \"c\": [\n    [\n\n    ]\n  ],\n  \"d\": \"\"\n}",
    min: "{\"a\":[],\"b\":{},\"c\":[[]],\"d\":\"\"}",
    std: "{\n    \"a\": [\n\n    ],\n    \"b\": {\n\n    },\n    \"c\": [\n        [\n\n        ]\n    ],\n    \"d\": \"\"\n}",
    str: "{\"a\": [ ], \"b\": { }, \"c\": [[ ]], \"d\": \"\"}",
    exOdd: "{\r\n\t\"a\" = [\r\n\r\n\t],\r\n\t\"b\" = {\r\n\r\n\t},\r\n\t\"c\" = [\r\n\t\t[\r\n\r\n\t\t]\r\n\t],\r\n\t\"d\" = \"\"\r\n}",
  },
  {
    src: "{a: [1, {b: null}], h:: 5, v::: 1}",
    value: {"a":[1,{"b":null}],"v":1},
    top: "{\n   \"a\": [\n      1,\n      {\n         \"b\": null\n      }\n   ],\n   \"v\": 1\n}",
    ex2: "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"v\": 1\n}",
    min: "{\"a\":[1,{\"b\":null}],\"v\":1}",
    std: "{\n    \"a\": [\n        1,\n        {\n            \"b\": null\n        }\n    ],\n    \"v\": 1\n}",
    str: "{\"a\": [1, {\"b\": null}], \"v\": 1}",
    exOdd: "{\r\n\t\"a\" = [\r\n\t\t1,\r\n\t\t{\r\n\t\t\t\"b\" = null\r\n\t\t}\r\n\t],\r\n\t\"v\" = 1\r\n}",
  },
  {
    src: "[]",
    value: [],
    top: "[ ]",
    ex2: "[\n\n]",
    min: "[]",
    std: "[\n\n]",
    str: "[ ]",
    exOdd: "[\r\n\r\n]",
  },
  {
    src: "{}",
    value: {},
    top: "{ }",
    ex2: "{\n\n}",
    min: "{}",
    std: "{\n\n}",
    str: "{ }",
    exOdd: "{\r\n\r\n}",
  },
  {
    src: "[[], {}]",
    value: [[],{}],
    top: "[\n   [ ],\n   { }\n]",
    ex2: "[\n  [\n\n  ],\n  {\n\n  }\n]",
    min: "[[],{}]",
    std: "[\n    [\n\n    ],\n    {\n\n    }\n]",
    str: "[[ ], { }]",
    exOdd: "[\r\n\t[\r\n\r\n\t],\r\n\t{\r\n\r\n\t}\r\n]",
  },
  {
    src: "null",
    value: null,
    top: "null",
    ex2: "null",
    min: "null",
    std: "null",
    str: "null",
    exOdd: "null",
  },
  {
    src: "true",
    value: true,
    top: "true",
    ex2: "true",
    min: "true",
    std: "true",
    str: "true",
    exOdd: "true",
  },
  {
    src: "\"x\"",
    value: "x",
    top: "\"x\"",
    ex2: "\"x\"",
    min: "\"x\"",
    std: "\"x\"",
    str: "x",
    exOdd: "\"x\"",
  },
  {
    src: "1.5",
    value: 1.5,
    top: "1.5",
    ex2: "1.5",
    min: "1.5",
    std: "1.5",
    str: "1.5",
    exOdd: "1.5",
  },
  {
    src: "[1, \"x\", [true, false, null], {z: 0.1, y: []}]",
    value: [1,"x",[true,false,null],{"y":[],"z":0.1}],
    top: "[\n   1,\n   \"x\",\n   [\n      true,\n      false,\n      null\n   ],\n   {\n      \"y\": [ ],\n      \"z\": 0.10000000000000001\n   }\n]",
    ex2: "[\n  1,\n  \"x\",\n  [\n    true,\n    false,\n    null\n  ],\n  {\n    \"y\": [\n\n    ],\n    \"z\": 0.10000000000000001\n  }\n]",
    min: "[1,\"x\",[true,false,null],{\"y\":[],\"z\":0.10000000000000001}]",
    std: "[\n    1,\n    \"x\",\n    [\n        true,\n        false,\n        null\n    ],\n    {\n        \"y\": [\n\n        ],\n        \"z\": 0.10000000000000001\n    }\n]",
    str: "[1, \"x\", [true, false, null], {\"y\": [ ], \"z\": 0.10000000000000001}]",
    exOdd: "[\r\n\t1,\r\n\t\"x\",\r\n\t[\r\n\t\ttrue,\r\n\t\tfalse,\r\n\t\tnull\r\n\t],\r\n\t{\r\n\t\t\"y\" = [\r\n\r\n\t\t],\r\n\t\t\"z\" = 0.10000000000000001\r\n\t}\r\n]",
  },
  {
    src: "{b: 1, a: 2, \"é\": 3, Z: 4, \"😀\": 5, \"\\uff5a\": 6, \"\\ue000\": 7, \"10\": 8, \"9\": 9, \"\": 10}",
    value: { b: 1, a: 2, "é": 3, Z: 4, "😀": 5, "\uff5a": 6, "\ue000": 7, "10": 8, "9": 9, "": 10 },
    top: "{\n   \"\": 10,\n   \"10\": 8,\n   \"9\": 9,\n   \"Z\": 4,\n   \"a\": 2,\n   \"b\": 1,\n   \"é\": 3,\n   \"\ue000\": 7,\n   \"ｚ\": 6,\n   \"😀\": 5\n}",
    ex2: "{\n  \"\": 10,\n  \"10\": 8,\n  \"9\": 9,\n  \"Z\": 4,\n  \"a\": 2,\n  \"b\": 1,\n  \"é\": 3,\n  \"\ue000\": 7,\n  \"ｚ\": 6,\n  \"😀\": 5\n}",
    min: "{\"\":10,\"10\":8,\"9\":9,\"Z\":4,\"a\":2,\"b\":1,\"é\":3,\"\ue000\":7,\"ｚ\":6,\"😀\":5}",
    std: "{\n    \"\": 10,\n    \"10\": 8,\n    \"9\": 9,\n    \"Z\": 4,\n    \"a\": 2,\n    \"b\": 1,\n    \"é\": 3,\n    \"\ue000\": 7,\n    \"ｚ\": 6,\n    \"😀\": 5\n}",
    str: "{\"\": 10, \"10\": 8, \"9\": 9, \"Z\": 4, \"a\": 2, \"b\": 1, \"é\": 3, \"\ue000\": 7, \"ｚ\": 6, \"😀\": 5}",
    exOdd: "{\r\n\t\"\" = 10,\r\n\t\"10\" = 8,\r\n\t\"9\" = 9,\r\n\t\"Z\" = 4,\r\n\t\"a\" = 2,\r\n\t\"b\" = 1,\r\n\t\"é\" = 3,\r\n\t\"\ue000\" = 7,\r\n\t\"ｚ\" = 6,\r\n\t\"😀\" = 5\r\n}",
  },
  {
    src: "{\"\\u0001k\": \"\\u007f\", \"a\\\"b\": {\"c\\\\d\": [{}]}}",
    value: {"\u0001k":"\u007f","a\"b":{"c\\d":[{}]}},
    top: "{\n   \"\\u0001k\": \"\\u007f\",\n   \"a\\\"b\": {\n      \"c\\\\d\": [\n         { }\n      ]\n   }\n}",
    ex2: "{\n  \"\\u0001k\": \"\\u007f\",\n  \"a\\\"b\": {\n    \"c\\\\d\": [\n      {\n\n      }\n    ]\n  }\n}",
    min: "{\"\\u0001k\":\"\\u007f\",\"a\\\"b\":{\"c\\\\d\":[{}]}}",
    std: "{\n    \"\\u0001k\": \"\\u007f\",\n    \"a\\\"b\": {\n        \"c\\\\d\": [\n            {\n\n            }\n        ]\n    }\n}",
    str: "{\"\\u0001k\": \"\\u007f\", \"a\\\"b\": {\"c\\\\d\": [{ }]}}",
    exOdd: "{\r\n\t\"\\u0001k\" = \"\\u007f\",\r\n\t\"a\\\"b\" = {\r\n\t\t\"c\\\\d\" = [\r\n\t\t\t{\r\n\r\n\t\t\t}\r\n\t\t]\r\n\t}\r\n}",
  },
  {
    src: "[[[1]]]",
    value: [[[1]]],
    top: "[\n   [\n      [\n         1\n      ]\n   ]\n]",
    ex2: "[\n  [\n    [\n      1\n    ]\n  ]\n]",
    min: "[[[1]]]",
    std: "[\n    [\n        [\n            1\n        ]\n    ]\n]",
    str: "[[[1]]]",
    exOdd: "[\r\n\t[\r\n\t\t[\r\n\t\t\t1\r\n\t\t]\r\n\t]\r\n]",
  },
];

describe('formatNumber: libjsonnet reference outputs', () => {
  it.each(NUMBERS)('%s', (_src, value, expected) => {
    expect(formatNumber(value)).toBe(expected);
    expect(manifestJson(value)).toBe(expected);
    expect(jsonnetToString(value)).toBe(expected);
  });

  it('ties at 17 digits round half to even on the exact value (not as toPrecision does)', () => {
    // 2147039178361669.25 exactly: JS rounds the tie up, glibc to even.
    expect((2147039178361669.2).toPrecision(17)).toBe('2147039178361669.3');
    expect(formatNumber(2147039178361669.2)).toBe('2147039178361669.2');
  });

  it('fast path equals the exact BigInt expansion on random doubles', () => {
    const rnd = mulberry32(12345);
    let checked = 0;
    for (let i = 0; i < 20000; i++) {
      const x = randomDouble(rnd, i);
      if (!Number.isFinite(x) || Number.isInteger(x)) continue;
      checked++;
      if (formatG17(x) !== formatG17Exact(x)) expect([x, formatG17(x)]).toEqual([x, formatG17Exact(x)]);
    }
    expect(checked).toBeGreaterThan(14000);
  });
});

describe('escapeJsonString: jsonnet_string_escape / std.escapeStringJson', () => {
  it.each(STRINGS)('%j', (s, escaped, top) => {
    expect(escapeJsonString(s)).toBe(escaped);
    expect(stdEscapeStringJson(s)).toBe(escaped);
    expect(escapeJsonStringBody(s)).toBe(escaped.slice(1, -1));
    expect(manifestJson(s)).toBe(top);
  });

  it('U+0000: \\u0000 in the CLI output and std.toString, a runtime error in std.escapeStringJson', () => {
    // libjsonnet: {"\u0000": "\u0000"} and std.toString(["\u0000"])
    expect(manifestJson({ '\u0000': '\u0000' })).toBe('{\n   "\\u0000": "\\u0000"\n}');
    expect(jsonnetToString(['\u0000'])).toBe('["\\u0000"]');
    expect(escapeJsonString('a\u0000b')).toBe('"a\\u0000b"');
    // std.escapeStringJson("a\u0000"), std.manifestJsonEx({"\u0000": 1}, " "), std.manifestJsonMinified(["\u0000"]):
    // RUNTIME ERROR: codepoint takes a string of length 1, got length 0
    expect(() => stdEscapeStringJson('a\u0000')).toThrow(ManifestError);
    expect(() => manifestJsonEx({ '\u0000': 1 }, ' ')).toThrow('codepoint takes a string of length 1, got length 0');
    expect(() => manifestJsonMinified(['\u0000'])).toThrow(ManifestError);
  });
});

describe('manifestation of values', () => {
  for (const c of VALUES) {
    it(c.src, () => {
      expect(manifestJson(c.value)).toBe(c.top);
      expect(manifestJsonEx(c.value, '  ')).toBe(c.ex2);
      expect(manifestJsonMinified(c.value)).toBe(c.min);
      expect(manifestJsonStd(c.value)).toBe(c.std);
      expect(jsonnetToString(c.value)).toBe(c.str);
      expect(manifestJsonEx(c.value, '\t', '\r\n', ' = ')).toBe(c.exOdd);
    });
  }

  it('reference outputs of the manifest functions', () => {
    expect(manifestJsonInline({ b: [1, 'x'], a: { c: null } })).toBe('{"a": {"c": null}, "b": [1, "x"]}');
    expect(manifestJsonInline({ a: 1.5, b: [true] })).toBe('{"a": 1.5, "b": [true]}');
    expect(manifestJsonEx({ a: [1, 2], b: {} }, '  ')).toBe('{\n  "a": [\n    1,\n    2\n  ],\n  "b": {\n\n  }\n}');
    expect(manifestJsonEx({ a: 0.1 }, '')).toBe('{\n"a": 0.10000000000000001\n}');
    expect(manifestJsonMinified({ b: 1, a: [1, {}] })).toBe('{"a":[1,{}],"b":1}');
    expect(jsonnetToString([0.1])).toBe('[0.10000000000000001]');
    // std.manifestJsonEx({a: []}, "  ", ""), std.manifestJsonEx([1,2], "  ", "")
    expect(manifestJsonEx({ a: [] }, '  ', '')).toBe('{  "a": [  ]}');
    expect(manifestJsonEx([1, 2], '  ', '')).toBe('[  1,  2]');
  });

  it('custom indent step for the CLI layout', () => {
    expect(manifestJson({ a: [1] }, '\t')).toBe('{\n\t"a": [\n\t\t1\n\t]\n}');
  });
});

describe('code-point ordering', () => {
  it('sorts surrogate pairs after U+E000..U+FFFF', () => {
    // std.sort(["\uff5a", "😀", "\ue000", "a", "B"])
    expect(['\uff5a', '😀', '\ue000', 'a', 'B'].sort(compareCodePoints)).toEqual(['B', 'a', '\ue000', '\uff5a', '😀']);
    // std.objectFields({"😀":1, "\uffff":2})
    expect(sortedKeys({ '😀': 1, '\uffff': 2 })).toEqual(['\uffff', '😀']);
    expect(compareCodePoints('\uff5a', '😀')).toBeLessThan(0);
    expect(compareCodePoints('a', 'ab')).toBeLessThan(0);
    expect(compareCodePoints('\u{10000}', '\u{10001}')).toBeLessThan(0);
    expect(compareCodePoints('\u{1ffff}', '\u{20000}')).toBeLessThan(0);
    expect(compareCodePoints('x', 'x')).toBe(0);
  });

  it('agrees with comparing code point arrays', () => {
    const rnd = mulberry32(7);
    const cps = (s: string) => Array.from(s, (ch) => ch.codePointAt(0)!);
    for (let i = 0; i < 5000; i++) {
      const a = randomString(rnd, 4, false);
      const b = rnd() < 0.3 ? a + randomString(rnd, 2, false) : randomString(rnd, 4, false);
      const x = cps(a);
      const y = cps(b);
      let ref = 0;
      for (let k = 0; k < Math.min(x.length, y.length) && ref === 0; k++) ref = Math.sign(x[k] - y[k]);
      if (ref === 0) ref = Math.sign(x.length - y.length);
      expect([a, b, Math.sign(compareCodePoints(a, b))]).toEqual([a, b, ref]);
    }
  });
});

// ---------------------------------------------------------------------------
// Differential tests against libjsonnet.

interface JsonnetVm {
  evaluateSnippet(snippet: string, filename?: string): Promise<string>;
}
const { Jsonnet } = createRequire(import.meta.url)('@hanazuki/node-jsonnet') as { Jsonnet: new () => JsonnetVm };

const F64 = new Float64Array(1);
const U32 = new Uint32Array(F64.buffer);

/** A mix of doubles: random bit patterns, decimals, dyadic values near 17/18-digit ties, integers, subnormals. */
function randomDouble(rnd: () => number, i: number): number {
  const sign = rnd() < 0.5 ? -1 : 1;
  switch (i % 9) {
    case 0: {
      U32[0] = (rnd() * 2 ** 32) >>> 0;
      U32[1] = (rnd() * 2 ** 32) >>> 0;
      const x = F64[0];
      return Number.isFinite(x) ? x : 1.5;
    }
    case 1:
      return sign * rnd() * 10 ** Math.floor(rnd() * 60 - 30);
    case 2: {
      // N / 2^k with about 18 significant digits: exact ties at 17 digits.
      const k = 1 + Math.floor(rnd() * 25);
      const n = Math.floor((1e18 / 5 ** k) * (0.1 + 0.9 * rnd()));
      return (sign * n) / 2 ** k;
    }
    case 3:
      return sign * (Math.floor(rnd() * 2 ** 52) + [0.25, 0.5, 0.75][Math.floor(rnd() * 3)]) / 2 ** Math.floor(rnd() * 4);
    case 4:
      return Math.round(rnd() * 10 ** Math.floor(rnd() * 9)) / 10 ** Math.floor(rnd() * 9);
    case 5:
      return sign * Math.floor(rnd() * 2 ** Math.floor(rnd() * 90));
    case 6:
      return sign * rnd() * 2 ** -1022 * (rnd() < 0.5 ? 1 : 2 ** -40);
    case 7:
      return sign * (10 ** Math.floor(rnd() * 40 - 20)) * (1 + Math.floor(rnd() * 3 - 1) * Number.EPSILON);
    default:
      return sign * (1e-5 + rnd() * 2e-4);
  }
}

/** Random string of odd code points (no lone surrogates; U+0000 only when allowed). */
function randomString(rnd: () => number, maxLen: number, allowNul: boolean): string {
  const len = Math.floor(rnd() * (maxLen + 1));
  let s = '';
  for (let i = 0; i < len; i++) {
    let cp: number;
    const r = rnd();
    if (r < 0.25) cp = 0x20 + Math.floor(rnd() * 0x5f);
    else if (r < 0.4) cp = Math.floor(rnd() * 0x20);
    else if (r < 0.5) cp = 0x7e + Math.floor(rnd() * 0x24);
    else if (r < 0.55) cp = [0x22, 0x5c, 0x2f, 0x27, 0x2028, 0x2029, 0xfeff, 0xfffd][Math.floor(rnd() * 8)];
    else if (r < 0.65) cp = 0xa0 + Math.floor(rnd() * 0x700);
    else if (r < 0.8) cp = 0xe000 + Math.floor(rnd() * 0x2000);
    else if (r < 0.9) cp = 0x10000 + Math.floor(rnd() * 0x100000);
    else cp = 0x800 + Math.floor(rnd() * 0xd000);
    if (cp >= 0xd800 && cp < 0xe000) cp = 0x61;
    if (cp === 0 && !allowNul) cp = 0x30;
    s += String.fromCodePoint(cp);
  }
  return s;
}

/** An exact Jsonnet literal for a double. */
function numberLiteral(x: number): string {
  if (Object.is(x, -0)) return '-0';
  return String(x);
}

/**
 * A Jsonnet string literal: JSON syntax with every non-ASCII UTF-16 unit as a \u escape
 * (Jsonnet joins escaped surrogate pairs). Raw UTF-8 is avoided on purpose: libjsonnet
 * 0.20's decode_utf8 shifts the lead byte of 4-byte sequences by 24 instead of 18, so raw
 * U+40000..U+10FFFF in source text turn into U+FFFD (an input bug, not a manifestation one).
 */
function stringLiteral(s: string): string {
  return JSON.stringify(s).replace(/[\u0080-\uffff]/g, (c) => '\\u' + c.charCodeAt(0).toString(16).padStart(4, '0'));
}

describe('differential: libjsonnet on random values', () => {
  it('4,000 random doubles: std.toString, CLI manifestation and manifestJsonMinified', { timeout: 60_000 }, async () => {
    const rnd = mulberry32(20261121);
    const nums: number[] = [];
    for (let i = 0; nums.length < 4000; i++) {
      const x = randomDouble(rnd, i);
      if (Number.isFinite(x)) nums.push(x);
    }
    nums.push(-0, 0, 5e-324, -5e-324, Number.MAX_VALUE, Number.MIN_VALUE * 3, 2 ** 53 - 1, -(2 ** 63), 2 ** 64);
    // Coverage: doubles whose 17-digit rounding is an exact tie (toPrecision differs).
    const ties = nums.filter((x) => !Number.isInteger(x) && isTieCase(x)).length;
    expect(ties).toBeGreaterThan(20);

    const snippet = `local a = [${nums.map(numberLiteral).join(',')}];\n{ raw: a, s: std.map(std.toString, a), m: std.manifestJsonMinified(a) }`;
    const out = await new Jsonnet().evaluateSnippet(snippet);
    const parsed = JSON.parse(out) as { s: string[] };
    const mismatches = nums.map((x, i) => [x, formatNumber(x), parsed.s[i]] as const).filter(([, a, b]) => a !== b);
    expect(mismatches.slice(0, 10)).toEqual([]);
    expect(manifestJson({ raw: nums, s: parsed.s, m: manifestJsonMinified(nums) }) + '\n').toBe(out);
  });

  it('1,500 random strings and objects with random keys', { timeout: 120_000 }, async () => {
    const rnd = mulberry32(4242);
    const strs: string[] = [];
    for (let i = 0; i < 1500; i++) strs.push(randomString(rnd, 12, rnd() < 0.05));
    const keys = new Set<string>();
    while (keys.size < 400) keys.add(randomString(rnd, 3, rnd() < 0.02));
    const obj: { [k: string]: Json } = {};
    let n = 0;
    for (const k of keys) obj[k] = n++ % 3 === 0 ? strs[n % strs.length] : n;
    // std.escapeStringJson is Jsonnet code (~2 ms per short string in libjsonnet): a subset.
    const noNul = strs.filter((s) => !s.includes('\u0000')).slice(0, 500);
    const few = noNul.slice(0, 150);
    const objNoNul: { [k: string]: Json } = {};
    for (const k of keys) if (!k.includes('\u0000') && !String(obj[k]).includes('\u0000')) objNoNul[k] = obj[k];
    const objLit = (o: { [k: string]: Json }) =>
      '{' + Object.keys(o).map((k) => `${stringLiteral(k)}: ${typeof o[k] === 'string' ? stringLiteral(o[k] as string) : String(o[k])}`).join(',\n') + '}';

    const snippet = [
      `local s = [${strs.map(stringLiteral).join(',\n')}];`,
      `local s0 = [${noNul.map(stringLiteral).join(',\n')}];`,
      `local o = ${objLit(obj)};`,
      `local o0 = ${objLit(objNoNul)};`,
      '{ raw: s, obj: o, esc: std.map(std.escapeStringJson, s0), ts: std.toString([s, o]),',
      '  min: std.manifestJsonMinified(s0[0:150]), ex: std.manifestJsonEx(o0, "  "), fields: std.objectFields(o) }',
    ].join('\n');
    const out = await new Jsonnet().evaluateSnippet(snippet);
    const parsed = JSON.parse(out) as { esc: string[]; fields: string[] };
    expect(parsed.fields).toEqual(sortedKeys(obj));
    const escMismatch = noNul.map((s, i) => [s, escapeJsonString(s), parsed.esc[i]] as const).filter(([, a, b]) => a !== b);
    expect(escMismatch.slice(0, 10)).toEqual([]);
    const mine =
      manifestJson({
        raw: strs,
        obj,
        esc: noNul.map(escapeJsonString),
        ts: jsonnetToString([strs, obj]),
        min: manifestJsonMinified(few),
        ex: manifestJsonEx(objNoNul, '  '),
        fields: sortedKeys(obj),
      }) + '\n';
    expect(mine).toBe(out);
  });

  it('nested random values: CLI output, std.toString, manifestJsonEx', { timeout: 60_000 }, async () => {
    const rnd = mulberry32(99);
    const gen = (depth: number): Json => {
      const r = rnd();
      if (depth > 3 || r < 0.35) {
        const t = Math.floor(rnd() * 5);
        return t === 0 ? null : t === 1 ? rnd() < 0.5 : t === 2 ? randomDouble(rnd, Math.floor(rnd() * 9)) : randomString(rnd, 5, false);
      }
      if (r < 0.65) return Array.from({ length: Math.floor(rnd() * 4) }, () => gen(depth + 1));
      const o: { [k: string]: Json } = {};
      for (let i = Math.floor(rnd() * 4); i > 0; i--) o[randomString(rnd, 2, false)] = gen(depth + 1);
      return o;
    };
    const values: Json[] = Array.from({ length: 300 }, () => gen(0));
    const lit = (v: Json): string => {
      if (v === null || typeof v === 'boolean') return String(v);
      if (typeof v === 'number') return Number.isFinite(v) ? numberLiteral(v) : '0';
      if (typeof v === 'string') return stringLiteral(v);
      if (Array.isArray(v)) return '[' + v.map(lit).join(', ') + ']';
      return '{' + Object.keys(v).map((k) => `${stringLiteral(k)}: ${lit(v[k])}`).join(', ') + '}';
    };
    const snippet = `local v = [${values.map(lit).join(',\n')}];\n{ raw: v, ts: std.map(std.toString, v), ex: std.manifestJsonEx(v, " ", "\\n", ":") }`;
    const out = await new Jsonnet().evaluateSnippet(snippet);
    const mine = manifestJson({ raw: values, ts: values.map(jsonnetToString), ex: manifestJsonEx(values, ' ', '\n', ':') }) + '\n';
    expect(mine).toBe(out);
  });
});

/** Whether `toExponential(16)` (ties rounded away from zero) gives other digits than `%.17g`. */
function isTieCase(x: number): boolean {
  const js = x.toExponential(16).replace(/^-/, '').split('e')[0].replace('.', '');
  const c = formatNumber(x).replace(/^-/, '').split('e')[0].replace('.', '').replace(/^0+/, '').padEnd(17, '0');
  return js !== c;
}
