import { describe, expect, it } from 'vitest';
import { lex, unescapeString } from '../src/lexer.js';
import { StaticError } from '../src/errors.js';

const kinds = (src: string): string[] => lex('f', src).map((t) => `${t.kind}:${t.data}`);

describe('jsonnet lexer', () => {
  it('tokenizes punctuation, identifiers, keywords, numbers and operators', () => {
    expect(kinds('local x = 1.5e3; {a: x + -2}')).toEqual([
      'KEYWORD:local', 'IDENTIFIER:x', 'OPERATOR:=', 'NUMBER:1.5e3', ';:', '{:', 'IDENTIFIER:a', 'OPERATOR::',
      'IDENTIFIER:x', 'OPERATOR:+', 'OPERATOR:-', 'NUMBER:2', '}:', 'EOF:',
    ]);
  });

  it('splits operators that may not end with + - ~ !', () => {
    expect(kinds('a+:-b')).toEqual(['IDENTIFIER:a', 'OPERATOR:+:', 'OPERATOR:-', 'IDENTIFIER:b', 'EOF:']);
    expect(kinds('a::: 1')).toEqual(['IDENTIFIER:a', 'OPERATOR::::', 'NUMBER:1', 'EOF:']);
    expect(kinds('1<=-2')).toEqual(['NUMBER:1', 'OPERATOR:<=', 'OPERATOR:-', 'NUMBER:2', 'EOF:']);
    expect(kinds('$.a')).toEqual(['$:', '.:', 'IDENTIFIER:a', 'EOF:']);
  });

  it('skips all three comment styles', () => {
    expect(kinds('1 // c\n# d\n/* e\n f */ 2')).toEqual(['NUMBER:1', 'NUMBER:2', 'EOF:']);
  });

  it('records positions with an exclusive end column', () => {
    const toks = lex('f', 'a\n  bcd');
    expect(toks[1].loc).toMatchObject({ line: 2, col: 3, endLine: 2, endCol: 6 });
  });

  it('lexes string forms', () => {
    expect(kinds(`'a\\'b' "c\\"d" @'e''f' @"g""h"`)).toEqual([
      "STRING_SINGLE:a\\'b", 'STRING_DOUBLE:c\\"d', "VERBATIM_SINGLE:e'f", 'VERBATIM_DOUBLE:g"h', 'EOF:',
    ]);
  });

  it('lexes text blocks, removing the indentation of the first line', () => {
    const toks = lex('f', '|||\n  foo\n    bar\n\n  baz\n|||');
    expect(toks[0].kind).toBe('STRING_BLOCK');
    expect(toks[0].data).toBe('foo\n  bar\n\nbaz\n');
  });

  it('rejects malformed input with libjsonnet messages', () => {
    expect(() => lex('f', '"abc')).toThrow('STATIC ERROR: f:1:1: unterminated string');
    expect(() => lex('f', '|||  x\n')).toThrow('text block syntax requires new line after |||.');
    expect(() => lex('f', '|||\n  a\n b|||')).toThrow('text block not terminated with |||');
    expect(() => lex('f', '1.x')).toThrow("couldn't lex number, junk after decimal point: x");
    expect(() => lex('f', '/* x')).toThrow('multi-line comment has no terminating */.');
    expect(() => lex('f', '`')).toThrow("Could not lex the character '`'");
  });

  it('unescapes JSON escapes and surrogate pairs', () => {
    expect(unescapeString('l', '\\n\\t\\u0041\\/\\ud83d\\ude00')).toBe('\n\tA/😀');
    expect(() => unescapeString('l', '\\ud83d')).toThrow(StaticError);
    expect(() => unescapeString('l', '\\q')).toThrow("Unknown escape sequence in string literal: 'q'");
    expect(() => unescapeString('l', '\\u12')).toThrow('Truncated unicode escape sequence in string literal.');
  });
});
