/**
 * `recursionFilter` of child jobs (keboola/php-filter syntax): `column<op>value` with the
 * operators `== != >= <= > < ~~ !~` (`%` is the wildcard of `~~`/`!~`), combined with `&` and
 * `|`; `&` binds tighter than `|`. Values compare as PHP strings (numerically when both are
 * numeric). Pure.
 */
import { UserError } from '../errors.js';
import { getDataFromPath } from '../response/data-path.js';
import { csvCell, isNumeric } from '../php.js';

export type RecursionFilter = (item: unknown) => boolean;

const OPERATORS = ['>=', '<=', '==', '!=', '~~', '!~'];

function phpCompare(a: string, b: string): number {
  if (isNumeric(a) && isNumeric(b)) return Number(a) - Number(b);
  return a < b ? -1 : a > b ? 1 : 0;
}

function likeRegExp(pattern: string): RegExp {
  const escaped = pattern.replace(/[.*+?^${}()|[\]\\#]/g, '\\$&').replace(/%/g, '.*?');
  return new RegExp(`^${escaped}$`, 's');
}

function leftmost(expr: string, candidates: string[]): string | undefined {
  return candidates
    .map((o) => [o, expr.indexOf(o)] as const)
    .filter(([, i]) => i >= 0)
    .sort((a, b) => a[1] - b[1])[0]?.[0];
}

function simpleFilter(expr: string): RecursionFilter {
  // The leftmost two-character operator wins, then the leftmost of `>` / `<` (as the reference).
  const op = leftmost(expr, OPERATORS) ?? leftmost(expr, ['>', '<']);
  if (!op) {
    throw new UserError(
      `Error creating a filter from ${expr}: Operator couldn't be determined. Please use one of [==, !=, >=, <=, ~~, !~, >, <]`,
    );
  }
  const at = expr.indexOf(op);
  const column = expr.slice(0, at);
  const rest = expr.slice(at + op.length);
  // explode() then list(): only the text up to the next occurrence of the operator is the value.
  const value = rest.split(op)[0];
  const operator = op;
  return (item) => {
    const actual = csvCell(getDataFromPath(column, item, '.'));
    switch (operator) {
      case '==':
        return actual === value;
      case '!=':
        return actual !== value;
      case '>=':
        return phpCompare(actual, value) >= 0;
      case '<=':
        return phpCompare(actual, value) <= 0;
      case '>':
        return phpCompare(actual, value) > 0;
      case '<':
        return phpCompare(actual, value) < 0;
      case '~~':
        return likeRegExp(value).test(actual);
      default:
        return !likeRegExp(value).test(actual);
    }
  };
}

function build(tokens: string[]): RecursionFilter {
  if (tokens.length % 2 === 0) throw new UserError(`Invalid syntax in logical expression: '${tokens.join('')}'.`);
  if (tokens.length === 1) return simpleFilter(tokens[0]);
  for (const operator of ['|', '&']) {
    for (let i = 1; i < tokens.length; i += 2) {
      if (tokens[i] === operator) {
        const left = build(tokens.slice(0, i));
        const right = build(tokens.slice(i + 1));
        return operator === '&' ? (x) => left(x) && right(x) : (x) => left(x) || right(x);
      }
    }
  }
  throw new UserError(`Invalid logical operator: '${tokens[1]}'.`);
}

/** Compiles a recursion filter expression; throws UserError on bad syntax. */
export function compileRecursionFilter(expression: string): RecursionFilter {
  return build(expression.split(/(&|\|)/));
}
