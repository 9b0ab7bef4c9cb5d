/**
 * goJsonString writes a JSON string literal as Go's encoding/json does (HTML-safe): printable
 * ASCII without anything to escape takes a shortcut, everything else JSON.stringify plus Go's
 * escapes of <, >, &, U+2028 and U+2029.
 */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { goJsonString } from '../../../src/pipeline/columns/json.js';

/** Go's output, spelled out: the standard escapes, then the HTML-safe ones. */
function goEncoding(s: string): string {
  return JSON.stringify(s).replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

describe('goJsonString', () => {
  it('writes every string as Go does, shortcut or not', () => {
    const chars = fc.constantFrom('a', ' ', '~', '"', '\\', '<', '>', '&', '\u0000', '\u001f', '\u007f', 'é', '\u2028', '\u2029', '\ud83d', '\ude00', '😀');
    fc.assert(fc.property(fc.oneof(fc.string(), fc.array(chars).map((cs) => cs.join(''))), (s) => {
      expect(goJsonString(s)).toBe(goEncoding(s));
    }), { numRuns: 5000 });
  });

  it('escapes what Go escapes', () => {
    expect(goJsonString('GET /api?a=1&b=<2>')).toBe('"GET /api?a=1\\u0026b=\\u003c2\\u003e"');
    expect(goJsonString('say "hi"\\')).toBe('"say \\"hi\\"\\\\"');
    expect(goJsonString('tab\there')).toBe('"tab\\there"');
    expect(goJsonString('')).toBe('""');
  });
});
