/** Jsonnet parser (port of libjsonnet 0.20 core/parser.cpp). */
import type { Arg, Bind, CompSpec, Field, Hide, Node, ObjAssert, Param } from './ast.js';
import { Loc, StaticError, formatLoc } from './errors.js';
import { Token, TokenKind, lex, unescapeString } from './lexer.js';

const BINARY_PREC: Record<string, number> = {
  '*': 5, '/': 5, '%': 5,
  '+': 6, '-': 6,
  '<<': 7, '>>': 7,
  '<': 8, '<=': 8, '>': 8, '>=': 8, in: 8,
  '==': 9, '!=': 9,
  '&': 10, '^': 11, '|': 12, '&&': 13, '||': 14,
};
const UNARY = new Set(['!', '~', '+', '-']);
const APPLY_PREC = 2;
const UNARY_PREC = 4;
const MAX_PREC = 15;

function kindName(t: Token): string {
  switch (t.kind) {
    case '{': case '}': case '[': case ']': case ',': case '$': case '.': case '(': case ')': case ';':
      return `"${t.kind}"`;
    case 'VERBATIM_DOUBLE': return 'VERBATIM_STRING_DOUBLE';
    case 'VERBATIM_SINGLE': return 'VERBATIM_STRING_SINGLE';
    case 'KEYWORD': return t.data;
    case 'EOF': return 'end of file';
    default: return t.kind;
  }
}
function tokStr(t: Token): string {
  if (t.data === '') return kindName(t);
  if (t.kind === 'OPERATOR') return `"${t.data}"`;
  return `(${kindName(t)}, "${t.data}")`;
}

function span(a: Loc, b: Loc): Loc {
  return { file: a.file, line: a.line, col: a.col, endLine: b.endLine, endCol: b.endCol };
}

function err(loc: Loc, msg: string): StaticError {
  return new StaticError(formatLoc(loc), msg);
}

class Parser {
  private pos = 0;
  constructor(private readonly toks: Token[]) {}

  peek(): Token {
    return this.toks[this.pos];
  }
  doublePeek(): Token {
    return this.toks[Math.min(this.pos + 1, this.toks.length - 1)];
  }
  pop(): Token {
    const t = this.toks[this.pos];
    if (this.pos < this.toks.length - 1) this.pos++;
    return t;
  }
  isKw(t: Token, kw: string): boolean {
    return t.kind === 'KEYWORD' && t.data === kw;
  }
  popExpect(kind: TokenKind, data?: string): Token {
    const t = this.pop();
    if (t.kind !== kind) {
      const want = kind === 'IDENTIFIER' ? 'IDENTIFIER' : kind === 'OPERATOR' ? 'OPERATOR' : `"${kind}"`;
      throw err(t.loc, `expected token ${want} but got ${tokStr(t)}`);
    }
    if (data !== undefined && t.data !== data) throw err(t.loc, `expected operator ${data} but got ${t.data}`);
    return t;
  }
  popKw(kw: string): Token {
    const t = this.pop();
    if (!this.isKw(t, kw)) throw err(t.loc, `expected token ${kw} but got ${tokStr(t)}`);
    return t;
  }
  unexpected(t: Token, while_: string): StaticError {
    return err(t.loc, `unexpected: ${kindName(t)} while ${while_}`);
  }

  parseArgs(elementKind: string): { args: Arg[]; end: Token } {
    const args: Arg[] = [];
    let gotComma = false;
    let first = true;
    for (;;) {
      const next = this.peek();
      if (next.kind === ')') return { args, end: this.pop() };
      if (!first && !gotComma) throw err(next.loc, `expected a comma before next ${elementKind}.`);
      let name: string | null = null;
      if (next.kind === 'IDENTIFIER') {
        const eq = this.doublePeek();
        if (eq.kind === 'OPERATOR' && eq.data === '=') {
          name = next.data;
          this.pop();
          this.pop();
        }
      }
      const expr = this.parse(MAX_PREC);
      gotComma = false;
      first = false;
      if (this.peek().kind === ',') {
        this.pop();
        gotComma = true;
      }
      args.push({ name, expr });
    }
  }

  parseParams(elementKind: string): Param[] {
    const { args } = this.parseArgs(elementKind);
    return args.map((a) => {
      if (a.name === null) {
        if (a.expr.t !== 'var') throw err(a.expr.loc, 'could not parse parameter here.');
        return { name: a.expr.name, def: null, loc: a.expr.loc };
      }
      return { name: a.name, def: a.expr, loc: a.expr.loc };
    });
  }

  parseBind(binds: Bind[]): Token {
    const id = this.popExpect('IDENTIFIER');
    for (const b of binds) if (b.name === id.data) throw err(id.loc, `duplicate local var: ${id.data}`);
    let params: Param[] | null = null;
    if (this.peek().kind === '(') {
      this.pop();
      params = this.parseParams('function parameter');
    }
    this.popExpect('OPERATOR', '=');
    const body = this.parse(MAX_PREC);
    const delim = this.pop();
    binds.push({ name: id.data, params, body, loc: id.loc });
    return delim;
  }

  stringLiteral(t: Token): Node | null {
    switch (t.kind) {
      case 'STRING_DOUBLE':
      case 'STRING_SINGLE':
        return { t: 'str', value: unescapeString(formatLoc(t.loc), t.data), block: false, loc: t.loc };
      case 'STRING_BLOCK':
        return { t: 'str', value: t.data, block: true, loc: t.loc };
      case 'VERBATIM_DOUBLE':
      case 'VERBATIM_SINGLE':
        return { t: 'str', value: t.data, block: false, loc: t.loc };
      default:
        return null;
    }
  }

  parseObjectRemainder(open: Token): { obj: Node; end: Token } {
    const fields: Field[] = [];
    const locals: Bind[] = [];
    const asserts: ObjAssert[] = [];
    const literalFields = new Set<string>();
    const bindNames = new Set<string>();
    let gotComma = false;
    let first = true;
    let next = this.pop();
    // order of members, needed for comprehension checks
    let numAsserts = 0;
    for (;;) {
      if (next.kind === '}') {
        return { obj: { t: 'object', fields, locals, asserts, loc: span(open.loc, next.loc) }, end: next };
      }
      if (this.isKw(next, 'for')) {
        if (numAsserts > 0) throw err(next.loc, 'object comprehension cannot have asserts.');
        if (fields.length !== 1) throw err(next.loc, 'object comprehension can only have one field.');
        const f = fields[0];
        if (f.hide !== 0) throw err(next.loc, 'object comprehensions cannot have hidden fields.');
        if (typeof f.name === 'string' || (f as Field & { lit?: boolean }).lit) {
          throw err(next.loc, 'object comprehensions can only have [e] fields.');
        }
        const specs: CompSpec[] = [];
        const last = this.parseCompSpecs('}', specs, next);
        let value = f.body;
        if (f.params) value = { t: 'func', params: f.params, body: value, loc: f.body.loc };
        return {
          obj: { t: 'objectComp', locals, key: f.name, value, plus: f.plus, specs, loc: span(open.loc, last.loc) },
          end: last,
        };
      }
      if (!gotComma && !first) throw err(next.loc, 'expected a comma before next field.');
      first = false;
      gotComma = false;
      const lit = this.stringLiteral(next);
      if (next.kind === '[' || next.kind === 'IDENTIFIER' || lit) {
        let name: string | Node;
        let isLit = false;
        if (next.kind === 'IDENTIFIER') name = next.data;
        else if (lit) {
          name = (lit as { value: string }).value;
          isLit = true;
        } else {
          name = this.parse(MAX_PREC);
          this.popExpect(']');
        }
        let params: Param[] | null = null;
        if (this.peek().kind === '(') {
          this.pop();
          params = this.parseParams('method parameter');
        }
        const op = this.popExpect('OPERATOR');
        let od = op.data;
        let plus = false;
        if (od.startsWith('+')) {
          plus = true;
          od = od.slice(1);
        }
        const bad = `expected one of :, ::, :::, +:, +::, +:::, got: ${op.data}`;
        if (!/^:*$/.test(od) || od.length < 1 || od.length > 3) throw err(next.loc, bad);
        const hide = (od.length === 1 ? 0 : od.length === 2 ? 1 : 2) as Hide;
        if (params && plus) throw err(next.loc, `cannot use +: syntax sugar in a method: ${next.data}`);
        if (typeof name === 'string') {
          if (literalFields.has(name)) throw err(next.loc, `duplicate field: ${name}`);
          literalFields.add(name);
        }
        const body = this.parse(MAX_PREC);
        const field: Field & { lit?: boolean } = { name, hide, plus, params, body, loc: span(next.loc, body.loc) };
        if (isLit) field.lit = true;
        fields.push(field);
        next = this.pop();
        if (next.kind === ',') {
          next = this.pop();
          gotComma = true;
        }
      } else if (this.isKw(next, 'local')) {
        const id = this.popExpect('IDENTIFIER');
        if (bindNames.has(id.data)) throw err(id.loc, `duplicate local var: ${id.data}`);
        let params: Param[] | null = null;
        if (this.peek().kind === '(') {
          this.pop();
          params = this.parseParams('function parameter');
        }
        this.popExpect('OPERATOR', '=');
        const body = this.parse(MAX_PREC);
        bindNames.add(id.data);
        locals.push({ name: id.data, params, body, loc: id.loc });
        next = this.pop();
        if (next.kind === ',') {
          next = this.pop();
          gotComma = true;
        }
      } else if (this.isKw(next, 'assert')) {
        const cond = this.parse(MAX_PREC);
        let msg: Node | null = null;
        if (this.peek().kind === 'OPERATOR' && this.peek().data === ':') {
          this.pop();
          msg = this.parse(MAX_PREC);
        }
        asserts.push({ cond, msg, loc: span(next.loc, (msg ?? cond).loc) });
        numAsserts++;
        next = this.pop();
        if (next.kind === ',') {
          next = this.pop();
          gotComma = true;
        }
      } else {
        throw this.unexpected(next, 'parsing field definition');
      }
    }
  }

  parseCompSpecs(end: TokenKind, specs: CompSpec[], forTok: Token): Token {
    let forLoc = forTok.loc;
    for (;;) {
      const id = this.popExpect('IDENTIFIER');
      this.popKw('in');
      const expr = this.parse(MAX_PREC);
      specs.push({ kind: 'for', name: id.data, expr, loc: span(forLoc, expr.loc) });
      let maybeIf = this.pop();
      for (; this.isKw(maybeIf, 'if'); maybeIf = this.pop()) {
        const cond = this.parse(MAX_PREC);
        specs.push({ kind: 'if', cond, loc: span(maybeIf.loc, cond.loc) });
      }
      if (maybeIf.kind === end) return maybeIf;
      if (!this.isKw(maybeIf, 'for')) {
        throw err(maybeIf.loc, `expected for, if or "${end}" after for clause, got: ${tokStr(maybeIf)}`);
      }
      forLoc = maybeIf.loc;
    }
  }

  parseTerminal(): Node {
    const tok = this.pop();
    switch (tok.kind) {
      case 'EOF':
        throw err(tok.loc, 'unexpected end of file.');
      case '}': case ']': case ',': case '.': case ')': case ';':
        throw this.unexpected(tok, 'parsing terminal');
      case 'OPERATOR': {
        if (!UNARY.has(tok.data)) throw err(tok.loc, `not a unary operator: ${tok.data}`);
        const expr = this.parse(UNARY_PREC);
        return { t: 'unary', op: tok.data, expr, loc: span(tok.loc, expr.loc) };
      }
      case '{':
        return this.parseObjectRemainder(tok).obj;
      case '[': {
        let next = this.peek();
        if (next.kind === ']') {
          const r = this.pop();
          return { t: 'array', elems: [], loc: span(tok.loc, r.loc) };
        }
        const firstE = this.parse(MAX_PREC);
        let gotComma = false;
        next = this.peek();
        if (next.kind === ',') {
          this.pop();
          next = this.peek();
          gotComma = true;
        }
        if (this.isKw(next, 'for')) {
          const forTok = this.pop();
          const specs: CompSpec[] = [];
          const last = this.parseCompSpecs(']', specs, forTok);
          return { t: 'arrayComp', body: firstE, specs, loc: span(tok.loc, last.loc) };
        }
        const elems = [firstE];
        for (;;) {
          if (next.kind === ']') {
            const r = this.pop();
            return { t: 'array', elems, loc: span(tok.loc, r.loc) };
          }
          if (!gotComma) throw err(next.loc, 'expected a comma before next array element.');
          elems.push(this.parse(MAX_PREC));
          gotComma = false;
          next = this.peek();
          if (next.kind === ',') {
            this.pop();
            next = this.peek();
            gotComma = true;
          }
        }
      }
      case '(': {
        const inner = this.parse(MAX_PREC);
        this.popExpect(')');
        return inner;
      }
      case 'NUMBER':
        return { t: 'num', value: Number(tok.data), loc: tok.loc };
      case 'STRING_DOUBLE': case 'STRING_SINGLE': case 'STRING_BLOCK': case 'VERBATIM_DOUBLE': case 'VERBATIM_SINGLE':
        return this.stringLiteral(tok)!;
      case 'IDENTIFIER':
        return { t: 'var', name: tok.data, loc: tok.loc };
      case '$':
        return { t: 'dollar', loc: tok.loc };
      case 'KEYWORD':
        switch (tok.data) {
          case 'false': return { t: 'false', loc: tok.loc };
          case 'true': return { t: 'true', loc: tok.loc };
          case 'null': return { t: 'null', loc: tok.loc };
          case 'self': return { t: 'self', loc: tok.loc };
          case 'super': {
            const next = this.pop();
            if (next.kind === '.') {
              const id = this.popExpect('IDENTIFIER');
              return { t: 'superIndex', index: { t: 'str', value: id.data, block: false, loc: id.loc }, loc: tok.loc };
            }
            if (next.kind === '[') {
              const index = this.parse(MAX_PREC);
              const r = this.popExpect(']');
              void r;
              return { t: 'superIndex', index, loc: tok.loc };
            }
            throw err(tok.loc, 'expected . or [ after super.');
          }
          default:
            throw this.unexpected(tok, 'parsing terminal');
        }
    }
    throw this.unexpected(tok, 'parsing terminal');
  }

  maybeGreedy(): Node | null {
    const begin = this.peek();
    if (begin.kind !== 'KEYWORD') return null;
    switch (begin.data) {
      case 'assert': {
        this.pop();
        const cond = this.parse(MAX_PREC);
        let msg: Node | null = null;
        if (this.peek().kind === 'OPERATOR' && this.peek().data === ':') {
          this.pop();
          msg = this.parse(MAX_PREC);
        }
        this.popExpect(';');
        const rest = this.parse(MAX_PREC);
        return { t: 'assert', cond, msg, rest, loc: span(begin.loc, rest.loc) };
      }
      case 'error': {
        this.pop();
        const expr = this.parse(MAX_PREC);
        return { t: 'error', expr, loc: span(begin.loc, expr.loc) };
      }
      case 'if': {
        this.pop();
        const cond = this.parse(MAX_PREC);
        this.popKw('then');
        const thenE = this.parse(MAX_PREC);
        if (this.isKw(this.peek(), 'else')) {
          this.pop();
          const elseE = this.parse(MAX_PREC);
          return { t: 'if', cond, then: thenE, else: elseE, loc: span(begin.loc, elseE.loc) };
        }
        return { t: 'if', cond, then: thenE, else: null, loc: span(begin.loc, thenE.loc) };
      }
      case 'function': {
        this.pop();
        const p = this.pop();
        if (p.kind !== '(') throw err(p.loc, `expected ( but got ${tokStr(p)}`);
        const params = this.parseParams('function parameter');
        const body = this.parse(MAX_PREC);
        return { t: 'func', params, body, loc: span(begin.loc, body.loc) };
      }
      case 'import': case 'importstr': case 'importbin': {
        this.pop();
        const body = this.parse(MAX_PREC);
        if (body.t === 'str') {
          if (body.block) throw err(body.loc, 'Cannot use text blocks in import statements.');
          return { t: 'import', kind: begin.data, file: body.value, loc: span(begin.loc, body.loc) };
        }
        throw err(body.loc, 'computed imports are not allowed.');
      }
      case 'local': {
        this.pop();
        const binds: Bind[] = [];
        for (;;) {
          const delim = this.parseBind(binds);
          if (delim.kind !== ';' && delim.kind !== ',') throw err(delim.loc, `expected , or ; but got ${tokStr(delim)}`);
          if (delim.kind === ';') break;
        }
        const body = this.parse(MAX_PREC);
        return { t: 'local', binds, body, loc: span(begin.loc, body.loc) };
      }
      default:
        return null;
    }
  }

  parse(maxPrec: number): Node {
    const g = this.maybeGreedy();
    if (g) return g;
    const begin = this.peek();
    let lhs = this.parseTerminal();
    for (;;) {
      const p = this.peek();
      let prec: number;
      if (p.kind === 'OPERATOR' || this.isKw(p, 'in')) {
        if (p.data === ':' || p.data === '::') return lhs;
        const bp = BINARY_PREC[p.data];
        if (bp === undefined) throw err(p.loc, `not a binary operator: ${p.data}`);
        prec = bp;
      } else if (p.kind === '.' || p.kind === '[' || p.kind === '(' || p.kind === '{') {
        prec = APPLY_PREC;
      } else return lhs;
      if (prec >= maxPrec) return lhs;
      const op = this.pop();
      switch (op.kind) {
        case '[': {
          let isSlice = false;
          let a: Node | null = null;
          let b: Node | null = null;
          let c: Node | null = null;
          if (this.peek().kind === ']') throw this.unexpected(this.pop(), 'parsing index');
          if (this.peek().data !== ':' && this.peek().data !== '::') a = this.parse(MAX_PREC);
          if (this.peek().kind === 'OPERATOR' && this.peek().data === '::') {
            isSlice = true;
            this.pop();
            if (this.peek().kind !== ']') c = this.parse(MAX_PREC);
          } else if (this.peek().kind !== ']') {
            isSlice = true;
            const d = this.pop();
            if (d.data !== ':') throw this.unexpected(d, 'parsing slice');
            if (this.peek().data !== ':' && this.peek().kind !== ']') b = this.parse(MAX_PREC);
            if (this.peek().kind !== ']') {
              const d2 = this.pop();
              if (d2.data !== ':') throw this.unexpected(d2, 'parsing slice');
              if (this.peek().kind !== ']') c = this.parse(MAX_PREC);
            }
          }
          const end = this.popExpect(']');
          const loc = span(begin.loc, end.loc);
          lhs = isSlice ? { t: 'slice', target: lhs, from: a, to: b, step: c, loc } : { t: 'index', target: lhs, index: a!, loc };
          break;
        }
        case '.': {
          const id = this.popExpect('IDENTIFIER');
          lhs = { t: 'index', target: lhs, index: { t: 'str', value: id.data, block: false, loc: id.loc }, loc: span(begin.loc, id.loc) };
          break;
        }
        case '(': {
          const { args, end } = this.parseArgs('function argument');
          let named = false;
          for (const a of args) {
            if (a.name !== null) named = true;
            else if (named) throw err(a.expr.loc, 'Positional argument after a named argument is not allowed');
          }
          let tailstrict = false;
          if (this.isKw(this.peek(), 'tailstrict')) {
            this.pop();
            tailstrict = true;
          }
          lhs = { t: 'apply', target: lhs, args, tailstrict, loc: span(begin.loc, end.loc) };
          break;
        }
        case '{': {
          const { obj, end } = this.parseObjectRemainder(op);
          lhs = { t: 'applyBrace', left: lhs, right: obj, loc: span(begin.loc, end.loc) };
          break;
        }
        default: {
          if (op.kind === 'KEYWORD' && this.isKw(this.peek(), 'super')) {
            const s = this.pop();
            lhs = { t: 'inSuper', key: lhs, loc: span(begin.loc, s.loc) };
          } else {
            const rhs = this.parse(prec);
            lhs = { t: 'binary', op: op.data, left: lhs, right: rhs, loc: span(begin.loc, rhs.loc) };
          }
        }
      }
    }
  }
}

export function parse(filename: string, code: string): Node {
  const toks = lex(filename, code);
  const p = new Parser(toks);
  const e = p.parse(MAX_PREC);
  const t = p.peek();
  if (t.kind !== 'EOF') throw err(t.loc, `did not expect: ${tokStr(t)}`);
  return e;
}
