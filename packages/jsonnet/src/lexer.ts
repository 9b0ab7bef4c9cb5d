/** Jsonnet lexer (port of libjsonnet 0.20 core/lexer.cpp). */
import { Loc, StaticError } from './errors.js';

export type TokenKind =
  | '{' | '}' | '[' | ']' | ',' | '.' | '(' | ')' | ';' | '$'
  | 'NUMBER' | 'STRING_DOUBLE' | 'STRING_SINGLE' | 'VERBATIM_DOUBLE' | 'VERBATIM_SINGLE' | 'STRING_BLOCK'
  | 'IDENTIFIER' | 'OPERATOR' | 'KEYWORD' | 'EOF';

export interface Token {
  kind: TokenKind;
  data: string;
  loc: Loc;
}

export const KEYWORDS = new Set([
  'assert', 'else', 'error', 'false', 'for', 'function', 'if', 'import', 'importstr', 'importbin',
  'in', 'local', 'null', 'tailstrict', 'then', 'self', 'super', 'true',
]);

const SYMBOLS = new Set(['!', '$', ':', '~', '+', '-', '&', '|', '^', '=', '<', '>', '*', '/', '%']);

function isIdFirst(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}
function isId(c: string): boolean {
  return isIdFirst(c) || (c >= '0' && c <= '9');
}
function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

export function lex(filename: string, input: string): Token[] {
  let line = 1;
  let lineStart = 0;
  let i = 0;
  const n = input.length;
  const out: Token[] = [];
  const at = (k: number): string => (k < n ? input[k] : '\0');
  // libjsonnet counts columns in UTF-8 bytes.
  const ascii = !/[\u0080-\uffff]/.test(input);
  const colOf = (k: number): number => (ascii ? k - lineStart + 1 : Buffer.byteLength(input.slice(lineStart, k), 'utf8') + 1);
  const err = (l: number, c: number, msg: string): StaticError => new StaticError(`${filename}:${l}:${c}`, msg);

  const lexWs = (): void => {
    while (i < n) {
      const c = input[i];
      if (c === '\n') {
        i++;
        line++;
        lineStart = i;
      } else if (c === ' ' || c === '\t' || c === '\r') i++;
      else break;
    }
  };

  while (true) {
    lexWs();
    if (i >= n) break;
    const bl = line;
    const bc = colOf(i);
    const c = input[i];
    let kind: TokenKind;
    let data = '';
    switch (c) {
      case '{': case '}': case '[': case ']': case ',': case '.': case '(': case ')': case ';':
        kind = c;
        i++;
        break;
      case '0': case '1': case '2': case '3': case '4': case '5': case '6': case '7': case '8': case '9': {
        kind = 'NUMBER';
        data = lexNumber();
        break;
      }
      case '"': case "'": {
        i++;
        for (;; i++) {
          if (i >= n) throw err(bl, bc, 'unterminated string');
          const d = input[i];
          if (d === c) break;
          if (d === '\\' && i + 1 < n) {
            data += d;
            i++;
          }
          if (input[i] === '\n') {
            line++;
            lineStart = i + 1;
          }
          data += input[i];
        }
        i++;
        kind = c === '"' ? 'STRING_DOUBLE' : 'STRING_SINGLE';
        break;
      }
      case '@': {
        i++;
        const q = at(i);
        if (q !== '"' && q !== "'") throw err(bl, bc, `couldn't lex verbatim string, junk after '@': ${q}`);
        i++;
        for (;; i++) {
          if (i >= n) throw err(bl, bc, 'unterminated verbatim string');
          if (input[i] === q) {
            if (at(i + 1) === q) i++;
            else break;
          }
          if (input[i] === '\n') {
            line++;
            lineStart = i + 1;
          }
          data += input[i];
        }
        i++;
        kind = q === '"' ? 'VERBATIM_DOUBLE' : 'VERBATIM_SINGLE';
        break;
      }
      default: {
        if (isIdFirst(c)) {
          const s = i;
          while (i < n && isId(input[i])) i++;
          data = input.slice(s, i);
          kind = KEYWORDS.has(data) ? 'KEYWORD' : 'IDENTIFIER';
        } else if (SYMBOLS.has(c) || c === '#') {
          if (c === '#' || (c === '/' && at(i + 1) === '/')) {
            while (i < n && input[i] !== '\n') i++;
            continue;
          }
          if (c === '/' && at(i + 1) === '*') {
            i += 2;
            while (!(at(i) === '*' && at(i + 1) === '/')) {
              if (i >= n) throw err(bl, bc, 'multi-line comment has no terminating */.');
              if (input[i] === '\n') {
                line++;
                lineStart = i + 1;
              }
              i++;
            }
            i += 2;
            continue;
          }
          if (c === '|' && at(i + 1) === '|' && at(i + 2) === '|') {
            i += 3;
            while (at(i) === ' ' || at(i) === '\t' || at(i) === '\r') i++;
            if (at(i) !== '\n') throw err(bl, bc, 'text block syntax requires new line after |||.');
            let block = '';
            i++;
            line++;
            while (at(i) === '\n') {
              line++;
              i++;
              block += '\n';
            }
            lineStart = i;
            const first = i;
            const wsCheck = (b: number): number => {
              let k = 0;
              while (at(first + k) === ' ' || at(first + k) === '\t') {
                if (at(b + k) !== at(first + k)) return 0;
                k++;
              }
              return k;
            };
            let ws = wsCheck(i);
            if (ws === 0) throw err(bl, bc, "text block's first line must start with whitespace.");
            for (;;) {
              for (i += ws; at(i) !== '\n'; i++) {
                if (i >= n) throw err(bl, bc, 'unexpected EOF');
                block += input[i];
              }
              block += '\n';
              i++;
              line++;
              lineStart = i;
              while (at(i) === '\n') {
                line++;
                i++;
                block += '\n';
              }
              ws = wsCheck(i);
              if (ws === 0) {
                while (at(i) === ' ' || at(i) === '\t') i++;
                if (!(at(i) === '|' && at(i + 1) === '|' && at(i + 2) === '|')) {
                  throw err(bl, bc, 'text block not terminated with |||');
                }
                i += 3;
                data = block;
                kind = 'STRING_BLOCK';
                break;
              }
            }
            break;
          }
          const s = i;
          for (; i < n && SYMBOLS.has(input[i]); i++) {
            if (input[i] === '/' && (at(i + 1) === '/' || at(i + 1) === '*')) break;
            if (input[i] === '|' && at(i + 1) === '|' && at(i + 2) === '|') break;
          }
          while (i > s + 1 && '+-~!$'.includes(input[i - 1])) i--;
          data = input.slice(s, i);
          if (data === '$') {
            kind = '$';
            data = '';
          } else kind = 'OPERATOR';
        } else {
          const code = c.charCodeAt(0);
          throw err(bl, bc, `Could not lex the character ${code < 32 ? `code ${code}` : `'${c}'`}`);
        }
      }
    }
    out.push({ kind, data, loc: { file: filename, line: bl, col: bc, endLine: line, endCol: colOf(i) } });
  }
  const col = colOf(i);
  out.push({ kind: 'EOF', data: '', loc: { file: filename, line, col, endLine: line, endCol: col + 1 } });
  return out;

  function lexNumber(): string {
    // Same state machine as libjsonnet: digits [. digits] [eE [+-] digits]
    const s = i;
    const bl = line;
    const bc = colOf(i);
    if (input[i] === '0') i++;
    else while (isDigit(at(i))) i++;
    if (at(i) === '.') {
      i++;
      if (!isDigit(at(i))) {
        throw err(bl, bc, `couldn't lex number, junk after decimal point: ${quoteChar(at(i))}`);
      }
      while (isDigit(at(i))) i++;
    }
    if (at(i) === 'e' || at(i) === 'E') {
      i++;
      if (at(i) === '+' || at(i) === '-') {
        i++;
        if (!isDigit(at(i))) throw err(bl, bc, `couldn't lex number, junk after exponent sign: ${quoteChar(at(i))}`);
      } else if (!isDigit(at(i))) throw err(bl, bc, `couldn't lex number, junk after 'E': ${quoteChar(at(i))}`);
      while (isDigit(at(i))) i++;
    }
    return input.slice(s, i);
  }
}

function quoteChar(c: string): string {
  // libjsonnet prints the NUL terminator, which ends its C-string message.
  return c === '\0' ? '' : c;
}

/** Decode the escapes of a (non-verbatim) string literal. */
export function unescapeString(loc: string, s: string): string {
  let r = '';
  const n = s.length;
  for (let i = 0; i < n; i++) {
    const c = s[i];
    if (c !== '\\') {
      r += c;
      continue;
    }
    i++;
    const d = i < n ? s[i] : '\0';
    switch (d) {
      case '"': case "'": case '\\': case '/': r += d; break;
      case 'b': r += '\b'; break;
      case 'f': r += '\f'; break;
      case 'n': r += '\n'; break;
      case 'r': r += '\r'; break;
      case 't': r += '\t'; break;
      case 'u': {
        i++;
        let cp = parseHex4(loc, s, i);
        i += 3;
        if (cp >= 0xd800 && cp < 0xe000) {
          if (s[++i] !== '\\') throw new StaticError(loc, 'Invalid non-BMP Unicode escape in string literal');
          if (s[++i] !== 'u') throw new StaticError(loc, 'Invalid non-BMP Unicode escape in string literal');
          i++;
          const cp2 = parseHex4(loc, s, i);
          i += 3;
          if (cp >= 0xdc00 || cp2 < 0xdc00 || cp2 >= 0xe000) {
            throw new StaticError(loc, 'Invalid UTF-16 bytes');
          }
          cp = 0x10000 + ((cp - 0xd800) << 10) + (cp2 - 0xdc00);
        }
        r += String.fromCodePoint(cp);
        break;
      }
      case '\0':
        throw new StaticError(loc, 'Truncated escape sequence in string literal.');
      default:
        throw new StaticError(loc, `Unknown escape sequence in string literal: '${String.fromCodePoint(s.codePointAt(i) ?? 0)}'`);
    }
  }
  return r;
}

function parseHex4(loc: string, s: string, i: number): number {
  let cp = 0;
  for (let k = 0; k < 4; k++) {
    const ch = s[i + k];
    if (ch === undefined) throw new StaticError(loc, 'Truncated unicode escape sequence in string literal.');
    const v = parseInt(ch, 16);
    if (Number.isNaN(v)) {
      throw new StaticError(loc, `Malformed unicode escape character, should be hex: '${ch}'`);
    }
    cp = cp * 16 + v;
  }
  return cp;
}
