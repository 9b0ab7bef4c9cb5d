/**
 * Values DuckDB cannot bound. Its memory_limit counts what the buffer manager holds (tables,
 * sorts, joins, aggregates), not a single value under construction: `len(range(60000000))` took
 * 4.8 GB in one list (with a 512 MB limit), built inside one call that an interrupt does not
 * reach for tens of seconds. So the functions that make a value larger than their arguments are
 * checked in the parse tree before anything runs (the parser alone, as duckdb-statement.ts does):
 *
 * - a value of a size given by an argument (range and generate_series as scalar functions,
 *   lpad, rpad, list_resize, repeat of a literal, the widths of printf, format and bar): that
 *   argument a literal, the size at most MAX_VALUE_SIZE elements or characters;
 * - a value some times the size of another (repeat of a column, replace and regexp_replace
 *   with a longer replacement, and any sized call inside a lambda, which runs once per element
 *   of a list): literal arguments, all such factors of the statement together at most
 *   MAX_GROWTH;
 * - no list_reduce (its accumulator can double at each element).
 *
 * This stops the one-line mistakes and attacks (`SELECT range(1e9)`), not every way to grow a
 * value: concatenating a value with itself through a chain of CTEs doubles it at each step, and
 * only DuckDB's 4 GB bound on one string ends that (docs/exports-and-sql.md, "Read-only SQL"). The table functions
 * range() and generate_series() stream their rows within the limits: the way to make many rows.
 */

/** Elements or characters of a value one call may make. */
export const MAX_VALUE_SIZE = 10_000;
/** How many times larger than its arguments a statement's functions may make a value, in all. */
export const MAX_GROWTH = 64;

const SIZED: Record<string, (args: Node[]) => number | string> = {
  range: listLength,
  generate_series: listLength,
  lpad: (args) => literalNumber(args[1]),
  rpad: (args) => literalNumber(args[1]),
  list_resize: (args) => literalNumber(args[1]),
  array_resize: (args) => literalNumber(args[1]),
  bar: (args) => (args.length > 3 ? literalNumber(args[3]) : 80),
  printf: formatWidth,
  format: formatWidth,
};
const REDUCERS = new Set(['list_reduce', 'array_reduce', 'reduce']);
const STREAMING_HINT = ' (as a scalar function, one list; the table functions range() and generate_series() stream many rows)';

interface Node {
  class?: string;
  type?: string;
  function?: unknown;
  function_name?: string;
  children?: Node[];
  value?: { type?: { id?: string }; is_null?: boolean; value?: unknown };
  child?: Node;
  [key: string]: unknown;
}

/** Why the statement (a `json_serialize_sql` statement) could make a value DuckDB cannot bound; undefined when it cannot. */
export function valueSizeProblem(statement: unknown): string | undefined {
  let growth = 1;
  let problem: string | undefined;
  const visit = (node: unknown, inLambda: boolean): void => {
    if (problem !== undefined) return;
    if (Array.isArray(node)) {
      for (const item of node) visit(item, inLambda);
      return;
    }
    if (!node || typeof node !== 'object') return;
    const n = node as Node;
    // A table function's rows stream (`FROM range(1e9)`): only its arguments are values.
    if (n.type === 'TABLE_FUNCTION' && n.function && typeof n.function === 'object') {
      const { function: call, ...rest } = n;
      visit((call as Node).children, inLambda);
      visit(rest, inLambda);
      return;
    }
    if (n.class === 'FUNCTION' && typeof n.function_name === 'string') {
      const name = n.function_name.toLowerCase();
      const args = n.children ?? [];
      if (REDUCERS.has(name)) {
        problem = `${name}() is not allowed here: its accumulator can double at each element.`;
        return;
      }
      const factor = growthOf(name, args);
      const size = SIZED[name]?.(args) ?? (name === 'repeat' && literalOf(args[0]) !== undefined ? repeatSize(args) : undefined);
      if (typeof size === 'string') {
        problem = `${name}() ${size}`;
        return;
      }
      if (size !== undefined && size > MAX_VALUE_SIZE) {
        problem = `${name}() would make a value of ${size} elements or characters; at most ${MAX_VALUE_SIZE} here${SIZED[name] === listLength ? STREAMING_HINT : ''}.`;
        return;
      }
      if (typeof factor === 'string') {
        problem = `${name}() ${factor}`;
        return;
      }
      // Inside a lambda a value of some size is made for every element: a factor too.
      const times = factor ?? (inLambda && size !== undefined ? size : undefined);
      if (times !== undefined) {
        growth *= Math.max(1, times);
        if (growth > MAX_GROWTH) {
          problem = `the query's repeat(), replace() and regexp_replace() calls, and sized calls inside lambdas, would make values up to ${growth} times larger than their arguments; at most ${MAX_GROWTH} times here.`;
          return;
        }
      }
    }
    const lambda = inLambda || n.class === 'LAMBDA';
    for (const value of Object.values(n)) visit(value, lambda);
  };
  visit(statement, false);
  return problem;
}

/** How many times larger than its subject a call may make a value; a string says why it is refused. */
function growthOf(name: string, args: Node[]): number | string | undefined {
  if (name === 'repeat') {
    if (literalOf(args[0]) !== undefined) return undefined; // a size, see repeatSize
    return literalNumber(args[1]);
  }
  if (name === 'replace' || name === 'regexp_replace') {
    const from = literalOf(args[1]);
    const to = literalOf(args[2]);
    if (typeof to !== 'string') return 'needs a literal replacement here.';
    if (name === 'replace') {
      if (typeof from !== 'string') return 'needs a literal search string here.';
      if (to.length <= from.length) return undefined;
      return from.length === 0 ? 'with an empty search string is not allowed here.' : Math.ceil(to.length / from.length);
    }
    // A pattern can match an empty string at every position: a replacement of n characters adds up to n per character.
    return to.length <= 1 ? undefined : to.length + 1;
  }
  return undefined;
}

/** repeat('abc', n): the characters (or elements) of the result. */
function repeatSize(args: Node[]): number | string {
  const times = literalNumber(args[1]);
  if (typeof times === 'string') return times;
  const subject = literalOf(args[0]);
  const unit = typeof subject === 'string' ? subject.length : 1;
  return unit * Math.max(0, times);
}

/** range(stop), range(start, stop), range(start, stop, step) as a scalar function: the list's length. */
function listLength(args: Node[]): number | string {
  const values = args.map(literalNumber);
  const text = values.find((v): v is string => typeof v === 'string');
  if (text !== undefined) return `${text.replace(/\.$/, '')}${STREAMING_HINT}.`;
  const [start, stop, step] = values.length === 1 ? [0, values[0] as number, 1] : [values[0] as number, values[1] as number, (values[2] as number | undefined) ?? 1];
  if (step === 0) return 0;
  return Math.max(0, Math.ceil((stop - start) / step));
}

/** printf('%10d', ...), format('{:>10}', ...): the widest field of the literal format. */
function formatWidth(args: Node[]): number | string {
  const format = literalOf(args[0]);
  if (typeof format !== 'string') return 'needs a literal format here.';
  if (/%[-+ #0]*\*|\{[^}]*\{/.test(format)) return 'cannot take a width from an argument here.';
  const widths = [...format.matchAll(/%[-+ #0]*(\d+)|\{[^}]*:[^}]*?(\d+)/g)].map((m) => Number(m[1] ?? m[2]));
  return Math.max(0, ...widths);
}

/** A number the statement writes as a literal (also inside a cast); a string says why not. */
function literalNumber(node: Node | undefined): number | string {
  const value = literalOf(node);
  const n = typeof value === 'string' && value.trim() !== '' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : 'needs a literal number for its size here.';
}

/** The value of a literal (a constant, or a cast of one); undefined for anything else or NULL. */
function literalOf(node: Node | undefined): unknown {
  if (!node) return undefined;
  if (node.class === 'CAST' && node.child) return literalOf(node.child);
  if (node.class !== 'CONSTANT' || !node.value || node.value.is_null) return undefined;
  return node.value.value;
}
