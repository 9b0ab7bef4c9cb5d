/**
 * `std.parseJson`: a JSON parser reporting errors exactly as libjsonnet 0.20 does (it uses
 * nlohmann::json 3.x): `[json.exception.parse_error.101] parse error at line L, column C:
 * syntax error while parsing <context> - <detail>`.
 */
import type { Lazy, Val } from './values.js';
import { simpleObject } from './values.js';

export class JsonParseError extends Error {}

type Tok = 'true' | 'false' | 'null' | 'string' | 'number' | '[' | ']' | '{' | '}' | ':' | ',' | 'error' | 'eof';

const TOKEN_NAME: Record<Tok | 'literal_or_value', string> = {
  true: 'true literal', false: 'false literal', null: 'null literal', string: 'string literal', number: 'number literal',
  '[': "'['", ']': "']'", '{': "'{'", '}': "'}'", ':': "':'", ',': "','", error: '<parse error>', eof: 'end of input',
  literal_or_value: "'[', '{', or a literal",
};

export function parseJsonText(text: string): Val {
  // nlohmann works on UTF-8 bytes; columns count bytes.
  const bytes = Buffer.from(text, 'utf8');
  const n = bytes.length;
  let pos = 0;
  let line = 0;
  let col = 0;
  let current = -1;
  let tokenStart = 0;
  let errorMessage = '';
  let strValue = '';
  let numValue = 0;
  let ungot = false;

  const get = (): number => {
    col++;
    if (ungot) {
      ungot = false;
    } else {
      current = pos < n ? bytes[pos] : -1;
      pos++;
    }
    if (current === 0x0a) {
      line++;
      col = 0;
    }
    return current;
  };
  const unget = (): void => {
    ungot = true;
    if (col === 0) {
      if (line > 0) line--;
    } else col--;
  };
  const tokenString = (): string => {
    const end = Math.min(ungot ? pos - 1 : pos, n);
    let s = '';
    for (let i = tokenStart; i < end; i++) {
      const c = bytes[i];
      if (c <= 0x1f) s += `<U+${c.toString(16).toUpperCase().padStart(4, '0')}>`;
      else s += String.fromCharCode(c);
    }
    return Buffer.from(s, 'latin1').toString('utf8');
  };

  const scanLiteral = (word: string, tok: Tok): Tok => {
    for (let i = 1; i < word.length; i++) {
      if (get() !== word.charCodeAt(i)) {
        errorMessage = 'invalid literal';
        return 'error';
      }
    }
    return tok;
  };

  const hex4 = (): number => {
    let v = 0;
    for (let i = 0; i < 4; i++) {
      const c = get();
      let d: number;
      if (c >= 0x30 && c <= 0x39) d = c - 0x30;
      else if (c >= 0x41 && c <= 0x46) d = c - 0x37;
      else if (c >= 0x61 && c <= 0x66) d = c - 0x57;
      else return -1;
      v = v * 16 + d;
    }
    return v;
  };

  const scanString = (): Tok => {
    const out: number[] = [];
    for (;;) {
      const c = get();
      if (c === -1) {
        errorMessage = 'invalid string: missing closing quote';
        return 'error';
      }
      if (c === 0x22) {
        strValue = Buffer.from(out).toString('utf8');
        return 'string';
      }
      if (c === 0x5c) {
        const e = get();
        switch (e) {
          case 0x22: out.push(0x22); break;
          case 0x5c: out.push(0x5c); break;
          case 0x2f: out.push(0x2f); break;
          case 0x62: out.push(0x08); break;
          case 0x66: out.push(0x0c); break;
          case 0x6e: out.push(0x0a); break;
          case 0x72: out.push(0x0d); break;
          case 0x74: out.push(0x09); break;
          case 0x75: {
            let cp = hex4();
            if (cp < 0) {
              errorMessage = "invalid string: '\\u' must be followed by 4 hex digits";
              return 'error';
            }
            if (cp >= 0xd800 && cp <= 0xdbff) {
              if (get() === 0x5c && get() === 0x75) {
                const lo = hex4();
                if (lo < 0) {
                  errorMessage = "invalid string: '\\u' must be followed by 4 hex digits";
                  return 'error';
                }
                if (lo >= 0xdc00 && lo <= 0xdfff) cp = 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00);
                else {
                  errorMessage = 'invalid string: surrogate U+DC00..U+DFFF must be followed by U+DC00..U+DFFF';
                  return 'error';
                }
              } else {
                errorMessage = 'invalid string: surrogate U+DC00..U+DFFF must be followed by U+DC00..U+DFFF';
                return 'error';
              }
            } else if (cp >= 0xdc00 && cp <= 0xdfff) {
              errorMessage = 'invalid string: surrogate U+DC00..U+DFFF must follow U+D800..U+DBFF';
              return 'error';
            }
            for (const b of Buffer.from(String.fromCodePoint(cp), 'utf8')) out.push(b);
            break;
          }
          default:
            errorMessage = 'invalid string: forbidden character after backslash';
            return 'error';
        }
        continue;
      }
      if (c <= 0x1f) {
        errorMessage = `invalid string: control character U+${c.toString(16).toUpperCase().padStart(4, '0')} (${CONTROL_NAMES[c]}) must be escaped to \\u${c.toString(16).toUpperCase().padStart(4, '0')}${SHORT_ESCAPES[c] ?? ''}`;
        return 'error';
      }
      out.push(c);
    }
  };

  const isDigit = (c: number): boolean => c >= 0x30 && c <= 0x39;
  const scanNumber = (first: number): Tok => {
    let c = first;
    if (c === 0x2d) {
      c = get();
      if (!isDigit(c)) {
        errorMessage = "invalid number; expected digit after '-'";
        return 'error';
      }
    }
    if (c === 0x30) c = get();
    else {
      do c = get(); while (isDigit(c));
    }
    if (c === 0x2e) {
      c = get();
      if (!isDigit(c)) {
        errorMessage = "invalid number; expected digit after '.'";
        return 'error';
      }
      do c = get(); while (isDigit(c));
    }
    if (c === 0x65 || c === 0x45) {
      c = get();
      if (c === 0x2b || c === 0x2d) {
        c = get();
        if (!isDigit(c)) {
          errorMessage = 'invalid number; expected digit after exponent sign';
          return 'error';
        }
      } else if (!isDigit(c)) {
        errorMessage = "invalid number; expected '+', '-', or digit after exponent";
        return 'error';
      }
      do c = get(); while (isDigit(c));
    }
    unget();
    const s = bytes.subarray(tokenStart, pos - 1).toString('latin1');
    numValue = Number(s);
    if (numValue === 0 && !/[.eE]/.test(s)) numValue = 0; // parsed as an integer: no -0
    if (!Number.isFinite(numValue)) {
      errorMessage = `number overflow parsing '${s}'`;
      throw new JsonParseError(`[json.exception.out_of_range.406] number overflow parsing '${s}'`);
    }
    return 'number';
  };

  const scan = (): Tok => {
    let c: number;
    do c = get(); while (c === 0x20 || c === 0x09 || c === 0x0a || c === 0x0d);
    switch (c) {
      case 0x5b: return '[';
      case 0x5d: return ']';
      case 0x7b: return '{';
      case 0x7d: return '}';
      case 0x3a: return ':';
      case 0x2c: return ',';
      case 0x74: return scanLiteral('true', 'true');
      case 0x66: return scanLiteral('false', 'false');
      case 0x6e: return scanLiteral('null', 'null');
      case 0x22:
        tokenStart = pos - 1;
        return scanString();
      case -1: return 'eof';
      default:
        if (c === 0x2d || isDigit(c)) {
          tokenStart = pos - 1;
          return scanNumber(c);
        }
        errorMessage = 'invalid literal';
        return 'error';
    }
  };

  let last = 'eof' as Tok;
  const next = (): Tok => (last = scan());
  const cur = (): Tok => last;
  const fail = (expected: Tok | 'literal_or_value' | null, context: string): never => {
    let msg = `syntax error while parsing ${context} - `;
    if (last === 'error') msg += `${errorMessage}; last read: '${tokenString()}'`;
    else msg += `unexpected ${TOKEN_NAME[last]}`;
    if (expected) msg += `; expected ${TOKEN_NAME[expected]}`;
    throw new JsonParseError(`[json.exception.parse_error.101] parse error at line ${line + 1}, column ${col}: ${msg}`);
  };

  const parseValue = (): Val => {
    switch (last) {
      case 'true': return true;
      case 'false': return false;
      case 'null': return null;
      case 'string': return strValue;
      case 'number': return numValue;
      case '[': {
        const arr: Lazy[] = [];
        if (next() === ']') return arr;
        for (;;) {
          arr.push(parseValue());
          next();
          if (cur() === ',') {
            next();
            continue;
          }
          if (cur() === ']') return arr;
          return fail(']', 'array');
        }
      }
      case '{': {
        const m = new Map<string, Lazy>();
        if (next() === '}') return simpleObject(m);
        for (;;) {
          if (cur() !== 'string') return fail('string', 'object key');
          const key = strValue;
          if (next() !== ':') return fail(':', 'object separator');
          next();
          m.set(key, parseValue());
          next();
          if (cur() === ',') {
            next();
            continue;
          }
          if (cur() === '}') return simpleObject(m);
          return fail('}', 'object');
        }
      }
      case 'error':
        return fail(null, 'value');
      default:
        return fail('literal_or_value', 'value');
    }
  };

  next();
  const v = parseValue();
  if (next() !== 'eof') fail('eof', 'value');
  return v;
}

const CONTROL_NAMES = [
  'NUL', 'SOH', 'STX', 'ETX', 'EOT', 'ENQ', 'ACK', 'BEL', 'BS', 'HT', 'LF', 'VT', 'FF', 'CR', 'SO', 'SI',
  'DLE', 'DC1', 'DC2', 'DC3', 'DC4', 'NAK', 'SYN', 'ETB', 'CAN', 'EM', 'SUB', 'ESC', 'FS', 'GS', 'RS', 'US',
];
const SHORT_ESCAPES: Record<number, string> = { 8: ' or \\b', 9: ' or \\t', 10: ' or \\n', 12: ' or \\f', 13: ' or \\r' };
