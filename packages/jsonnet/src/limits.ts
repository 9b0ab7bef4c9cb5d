/**
 * The limits of one evaluation: the longest array, the longest string, an estimate of the bytes
 * it builds, and its time. Jsonnet programs come from users (template columns, `sluice jsonnet`):
 * without them one `std.range(1, 1e9)` grows the process until V8 aborts it (an array beyond
 * ~134 million elements is a fatal error, not an exception), and one builtin looping over a
 * long array never looks at the clock.
 *
 * Sizes are checked before anything is allocated (`checkArrayLength`, `checkStringLength`, then
 * `charge`), in the places that build arrays, strings and objects: the builtins, `+`, literals,
 * comprehensions, manifestation. The time budget is checked by `tick()`, which the evaluator calls
 * at every function call and thunk (a counter and an integer compare, the clock read once every
 * 4096 ticks), and by the loops of the builtins and comprehensions, which read the clock once
 * every LOOP_CHECK + 1 steps (no call at all on the other steps, nor in short loops).
 *
 * The state is module-wide, like the call depth: evaluation is synchronous, one at a time per
 * thread; an evaluation started from inside another (a native) keeps the outer one's state aside
 * until it ends (`beginEvaluation` / `endEvaluation`).
 */
import { Loc, RuntimeError } from './errors.js';

export interface JsonnetLimits {
  /** Elements of one array at most. */
  maxArrayLength: number;
  /** Characters (UTF-16 code units) of one string at most. */
  maxStringLength: number;
  /** Estimated bytes of the arrays, strings and object fields one evaluation builds (see COST). */
  maxAllocationBytes: number;
  /** Time budget of one evaluation in milliseconds; 0: none. */
  timeoutMs: number;
}

/** How a user changes each limit (a flag), named by the error that reports it. */
export type LimitNames = Record<keyof JsonnetLimits, string>;

/** Limits as a program embedding the evaluator sets them: any of them, and the names of its settings. */
export interface LimitOptions extends Partial<JsonnetLimits> {
  limitNames?: Partial<LimitNames>;
}

const MB = 1024 * 1024;

/**
 * V8's own ceilings on 64-bit Node: past `FixedArray::kMaxLength` (2^27 - 3 slots) growing an
 * array aborts the process; past `String::kMaxLength` (2^29 - 24) a string is a RangeError. A
 * limit may be raised up to them, not beyond.
 */
export const V8_MAX_ARRAY_LENGTH = 2 ** 27 - 3;
export const V8_MAX_STRING_LENGTH = 2 ** 29 - 24;

/**
 * The defaults keep one evaluation far below a process's memory (Node's heap limit is about 4 GB
 * on a 64-bit machine with 16 GB or more, less on smaller ones; the render worker and the API
 * thread may each run one evaluation at a time) and far above what templates and configuration
 * programs use (the libjsonnet test suite and the benchmarks stay well inside them):
 * - 10 million elements: 80 MB of slots for the array alone, 13 times below V8's fatal length;
 * - 100 million characters: a 100 MB string (200 MB with characters beyond Latin-1);
 * - 256 MB of estimated allocation: the estimate counts what can stay reachable (arrays, lazy
 *   elements, new strings, objects, functions), not the garbage of calls, so the real heap growth
 *   of an evaluation stays within a small multiple of it;
 * - no time budget in the command line; the server gives templates 100 ms (--template-timeout).
 */
export const DEFAULT_LIMITS: Readonly<JsonnetLimits> = {
  maxArrayLength: 10_000_000,
  maxStringLength: 100_000_000,
  maxAllocationBytes: 256 * MB,
  timeoutMs: 0,
};

/** The flags of `sluice jsonnet`, the names errors give unless the caller names its own. */
export const CLI_LIMIT_NAMES: Readonly<LimitNames> = {
  maxArrayLength: '--max-array-length',
  maxStringLength: '--max-string-length',
  maxAllocationBytes: '--max-allocation',
  timeoutMs: '--timeout',
};

/**
 * Estimated bytes of what an evaluation builds, from the heap growth per element of
 * million-element cases on Node 20 (64-bit): an array slot; a lazily computed element (a thunk,
 * its closure and environment); an object (the object, its layer, the captured environment); a
 * function value; a field of an object built by a comprehension (its definition, environment,
 * key and map entry); a value manifested (its JSON copy and its text); a string's own header (the
 * rope node V8 makes for a concatenation, which copies neither side, or a piece cut from another
 * string). A new string's characters count one byte each.
 */
export const COST = { element: 8, lazyElement: 200, object: 200, function: 100, field: 300, output: 40, string: 32 } as const;

/** A limit crossed: a runtime error that fallbacks must not swallow (they would only hit it again). */
export class LimitError extends RuntimeError {}

/**
 * Outside any evaluation (building the standard library object when a program is compiled, a
 * manifestation called directly) only V8's own ceilings hold.
 */
const OUTSIDE: Readonly<JsonnetLimits> = {
  maxArrayLength: V8_MAX_ARRAY_LENGTH,
  maxStringLength: V8_MAX_STRING_LENGTH,
  maxAllocationBytes: Infinity,
  timeoutMs: 0,
};

export const budget = {
  maxArrayLength: OUTSIDE.maxArrayLength,
  maxStringLength: OUTSIDE.maxStringLength,
  maxAllocationBytes: OUTSIDE.maxAllocationBytes,
  timeoutMs: 0,
  /** Estimated bytes built so far by the running evaluation. */
  allocated: 0,
  /** Date.now() past which the evaluation fails; 0: none. */
  deadline: 0,
  ticks: 0,
  names: CLI_LIMIT_NAMES as LimitNames,
  /** An evaluation is running (one started now is nested in it). */
  active: false,
};

export type LimitsState = Omit<typeof budget, 'ticks' | 'active'>;

/**
 * Starts an evaluation under `limits`; returns what endEvaluation needs: the state of the
 * evaluation this one is nested in, or null (no copy on the common, outermost path).
 */
export function beginEvaluation(limits: JsonnetLimits, names: LimitNames): LimitsState | null {
  const outer = budget.active ? saveLimits() : null;
  budget.active = true;
  budget.maxArrayLength = limits.maxArrayLength;
  budget.maxStringLength = limits.maxStringLength;
  budget.maxAllocationBytes = limits.maxAllocationBytes;
  budget.timeoutMs = limits.timeoutMs;
  budget.allocated = 0;
  budget.deadline = limits.timeoutMs > 0 ? Date.now() + limits.timeoutMs : 0;
  budget.names = names;
  return outer;
}

/** Ends the evaluation begun by the beginEvaluation that returned `outer`. */
export function endEvaluation(outer: LimitsState | null): void {
  if (outer !== null) restoreLimits(outer);
  else {
    budget.active = false;
    budget.maxArrayLength = OUTSIDE.maxArrayLength;
    budget.maxStringLength = OUTSIDE.maxStringLength;
    budget.maxAllocationBytes = OUTSIDE.maxAllocationBytes;
    budget.allocated = 0;
    budget.deadline = 0;
  }
}

function saveLimits(): LimitsState {
  const b = budget;
  return {
    maxArrayLength: b.maxArrayLength, maxStringLength: b.maxStringLength, maxAllocationBytes: b.maxAllocationBytes,
    timeoutMs: b.timeoutMs, allocated: b.allocated, deadline: b.deadline, names: b.names,
  };
}

function restoreLimits(s: LimitsState): void {
  const b = budget;
  b.maxArrayLength = s.maxArrayLength;
  b.maxStringLength = s.maxStringLength;
  b.maxAllocationBytes = s.maxAllocationBytes;
  b.timeoutMs = s.timeoutMs;
  b.allocated = s.allocated;
  b.deadline = s.deadline;
  b.names = s.names;
}

/** Fails the evaluation once its time budget is spent (the clock is read every 4096 ticks). */
export function tick(): void {
  if ((++budget.ticks & 4095) === 0 && budget.deadline !== 0 && Date.now() > budget.deadline) timeUp();
}

/** In a loop over `i`: `if ((i & LOOP_CHECK) === LOOP_CHECK) checkTime();`, the clock once every 1024 steps. */
export const LOOP_CHECK = 1023;

/** Fails the evaluation if its time budget is spent. */
export function checkTime(): void {
  if (budget.deadline !== 0 && Date.now() > budget.deadline) timeUp();
}

function timeUp(): never {
  throw new LimitError(`evaluation exceeded its time budget of ${budget.timeoutMs} ms (${budget.names.timeoutMs})`);
}

/** Adds `bytes` (estimated) to the evaluation's allocation; fails past the limit. */
export function charge(bytes: number, loc?: Loc): void {
  if ((budget.allocated += bytes) > budget.maxAllocationBytes) allocationError(loc);
}

function allocationError(loc: Loc | undefined): never {
  const limit = budget.maxAllocationBytes;
  throw new LimitError(`allocation of about ${size(budget.allocated)} exceeds the limit of ${size(limit)} (${budget.names.maxAllocationBytes})`).at(loc);
}

function size(bytes: number): string {
  return bytes >= MB ? `${Math.ceil(bytes / MB)} MB` : `${bytes} bytes`;
}

export function checkArrayLength(n: number, loc?: Loc): void {
  if (n > budget.maxArrayLength) arrayLengthError(n, loc);
}

function arrayLengthError(n: number, loc: Loc | undefined): never {
  throw new LimitError(`array length ${count(n)} exceeds the limit of ${budget.maxArrayLength} elements (${budget.names.maxArrayLength})`).at(loc);
}

export function checkStringLength(n: number, loc?: Loc): void {
  if (n > budget.maxStringLength) stringLengthError(n, loc);
}

function stringLengthError(n: number, loc: Loc | undefined): never {
  throw new LimitError(`string length ${count(n)} exceeds the limit of ${budget.maxStringLength} characters (${budget.names.maxStringLength})`).at(loc);
}

/** A length as an integer, also when it is beyond 2^53 or not finite. */
function count(n: number): string {
  return Number.isSafeInteger(n) ? String(n) : n.toExponential();
}

// The helpers below compare inline: they run on every record of a template.

/** A new array of `n` elements, each costing `each` bytes (COST.element, plus COST.lazyElement when lazy). */
export function chargeArray(n: number, each: number, loc?: Loc): void {
  if (n > budget.maxArrayLength) arrayLengthError(n, loc);
  if ((budget.allocated += n * each) > budget.maxAllocationBytes) allocationError(loc);
}

/** A new flat string of `n` characters. */
export function chargeString(n: number, loc?: Loc): void {
  if (n > budget.maxStringLength) stringLengthError(n, loc);
  if ((budget.allocated += n) > budget.maxAllocationBytes) allocationError(loc);
}

/** A concatenation of strings of lengths `a` and `b` (a rope node: the sides are not copied). */
export function chargeConcat(a: number, b: number, loc?: Loc): void {
  if (a + b > budget.maxStringLength) stringLengthError(a + b, loc);
  if ((budget.allocated += COST.string) > budget.maxAllocationBytes) allocationError(loc);
}

/**
 * How many elements costing `each` the evaluation can still build, at most one past the array
 * limit: a builtin that cannot know its result's length before it builds it (String.split)
 * builds no more than this, then charges what it built (which fails when it is past either).
 */
export function affordable(each: number): number {
  return Math.max(0, Math.min(budget.maxArrayLength, Math.floor((budget.maxAllocationBytes - budget.allocated) / each))) + 1;
}
