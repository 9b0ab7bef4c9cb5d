import { describe, expect, it } from 'vitest';
import type { Node } from '../src/ast.js';
import { parse } from '../src/parser.js';

/** A compact Lisp-like rendering of the AST, enough to check structure and precedence. */
function show(n: Node): string {
  switch (n.t) {
    case 'num': return String(n.value);
    case 'str': return JSON.stringify(n.value);
    case 'var': return n.name;
    case 'null': case 'true': case 'false': case 'self': return n.t;
    case 'dollar': return '$';
    case 'binary': return `(${n.op} ${show(n.left)} ${show(n.right)})`;
    case 'unary': return `(${n.op} ${show(n.expr)})`;
    case 'index': return `(. ${show(n.target)} ${show(n.index)})`;
    case 'apply': return `(call ${show(n.target)}${n.args.map((a) => ' ' + (a.name ? a.name + '=' : '') + show(a.expr)).join('')}${n.tailstrict ? ' tailstrict' : ''})`;
    case 'if': return `(if ${show(n.cond)} ${show(n.then)}${n.else ? ' ' + show(n.else) : ''})`;
    case 'local': return `(local ${n.binds.map((b) => `${b.name}${b.params ? '(' + b.params.map((p) => p.name).join(',') + ')' : ''}=${show(b.body)}`).join(' ')} ${show(n.body)})`;
    case 'func': return `(fn (${n.params.map((p) => p.name + (p.def ? '=' + show(p.def) : '')).join(' ')}) ${show(n.body)})`;
    case 'array': return `[${n.elems.map(show).join(' ')}]`;
    case 'slice': return `(slice ${show(n.target)} ${n.from ? show(n.from) : '_'} ${n.to ? show(n.to) : '_'} ${n.step ? show(n.step) : '_'})`;
    case 'applyBrace': return `(+obj ${show(n.left)} ${show(n.right)})`;
    case 'object':
      return `{${n.fields.map((f) => `${typeof f.name === 'string' ? f.name : '[' + show(f.name) + ']'}${f.plus ? '+' : ''}${':'.repeat(f.hide + 1)}${f.params ? `(fn (${f.params.map((q) => q.name).join(' ')}) ${show(f.body)})` : show(f.body)}`).join(' ')}}`;
    case 'superIndex': return `(super ${show(n.index)})`;
    case 'inSuper': return `(in-super ${show(n.key)})`;
    case 'error': return `(error ${show(n.expr)})`;
    case 'assert': return `(assert ${show(n.cond)} ${show(n.rest)})`;
    case 'arrayComp': return `[comp ${show(n.body)} ${n.specs.length}]`;
    case 'objectComp': return `{comp ${show(n.key)} ${show(n.value)} ${n.specs.length}}`;
    case 'import': return `(${n.kind} ${n.file})`;
  }
}
const p = (src: string): string => show(parse('f', src));

describe('jsonnet parser', () => {
  it('applies binary precedence and left associativity', () => {
    expect(p('1 + 2 * 3 - 4')).toBe('(- (+ 1 (* 2 3)) 4)');
    expect(p('a || b && c == d < e << f + g')).toBe('(|| a (&& b (== c (< d (<< e (+ f g))))))');
    expect(p('a & b ^ c | d')).toBe('(| (^ (& a b) c) d)');
    expect(p('-a.b')).toBe('(- (. a "b"))');
    expect(p('!a in b')).toBe('(in (! a) b)');
  });

  it('parses postfix forms', () => {
    expect(p('f(1, x=2).y[0]')).toBe('(. (. (call f 1 x=2) "y") 0)');
    expect(p('f(1) tailstrict')).toBe('(call f 1 tailstrict)');
    expect(p('a[1:2]')).toBe('(slice a 1 2 _)');
    expect(p('a[::2]')).toBe('(slice a _ _ 2)');
    expect(p('a[:3:]')).toBe('(slice a _ 3 _)');
    expect(p('a {b: 1}')).toBe('(+obj a {b:1})');
  });

  it('parses greedy constructs', () => {
    expect(p('local f(x) = x, y = 2; f(y)')).toBe('(local f(x)=x y=2 (call f y))');
    expect(p('if a then b else c + 1')).toBe('(if a b (+ c 1))');
    expect(p('function(x, y=1) x + y')).toBe('(fn (x y=1) (+ x y))');
    expect(p('assert x; y')).toBe('(assert x y)');
    expect(p('error "e" + 1')).toBe('(error (+ "e" 1))');
  });

  it('parses objects with every field form', () => {
    expect(p('{a: 1, "b":: 2, [c]::: 3, d+: 4, f(x): x}')).toBe('{a:1 b::2 [c]:::3 d+:4 f:(fn (x) x)}');
    expect(p('{a: super.b, c: "d" in super}')).toBe('{a:(super "b") c:(in-super "d")}');
    expect(p('{[k]: v for k in ks if k != null}')).toBe('{comp k v 2}');
    expect(p('[x for x in xs for y in ys]')).toBe('[comp x 2]');
  });

  it('reports syntax errors as libjsonnet does', () => {
    expect(() => parse('f', '{a: 1 b: 2}')).toThrow('STATIC ERROR: f:1:7: expected a comma before next field.');
    expect(() => parse('f', '[1 2]')).toThrow('STATIC ERROR: f:1:4: expected a comma before next array element.');
    expect(() => parse('f', '{a: 1, "a"+"": 2}')).toThrow('STATIC ERROR: f:1:8-11: expected one of :, ::, :::, +:, +::, +:::, got: +');
    expect(() => parse('f', 'f(a=1, 2)')).toThrow('Positional argument after a named argument is not allowed');
    expect(() => parse('f', '{a: 1, a: 2}')).toThrow('duplicate field: a');
    expect(() => parse('f', 'local x = 1, x = 2; x')).toThrow('duplicate local var: x');
    expect(() => parse('f', 'import "a" + "b"')).toThrow('computed imports are not allowed.');
    expect(() => parse('f', '1 +')).toThrow('STATIC ERROR: f:1:4: unexpected end of file.');
    expect(() => parse('f', '1 2')).toThrow('did not expect: (NUMBER, "2")');
    expect(() => parse('f', '{f(x)+: x}')).toThrow('cannot use +: syntax sugar in a method: f');
  });
});
