/**
 * Body paths: `a.b[0].c`, shared by the `path` column and the Jsonnet `Body(path)` global.
 *
 * Parsing follows the reference: the string is split at "." and "[", empty parts are dropped,
 * a part "<digits>]" is an array index and anything else a key (so `""` and `"."` mean the
 * whole body). Lookup follows fastjson, which the reference uses for JSON bodies: every step
 * is a key on an object and a decimal index on an array, so `a.0` and `a[0]` are the same.
 */
import { JsonObject, type JsonValue } from './json.js';

export interface PathStep {
  /** The step as an object key ("0" for `[0]`). */
  readonly key: string;
  /** The step as an array index, or -1 when it is not a non-negative integer. */
  readonly index: number;
}

export type BodyPath = readonly PathStep[];

const INDEX_PART = /^(\d+)\]$/;
const INTEGER = /^\+?\d+$/;

export function parsePath(path: string): BodyPath {
  const steps: PathStep[] = [];
  for (const part of path.split(/[.[]/)) {
    if (part === '') continue;
    const m = INDEX_PART.exec(part);
    const key = m ? m[1] : part;
    steps.push({ key, index: INTEGER.test(key) ? toIndex(key) : -1 });
  }
  return steps;
}

function toIndex(digits: string): number {
  const n = Number(digits);
  return Number.isSafeInteger(n) ? n : -1;
}

/** The value at the path, or undefined when some step does not exist. */
export function lookupPath(root: JsonValue, path: BodyPath): JsonValue | undefined {
  let cur: JsonValue | undefined = root;
  for (let i = 0; i < path.length; i++) {
    const step = path[i];
    if (cur instanceof JsonObject) {
      cur = cur.get(step.key);
      if (cur === undefined) return undefined;
    } else if (Array.isArray(cur)) {
      if (step.index < 0 || step.index >= cur.length) return undefined;
      cur = cur[step.index];
    } else {
      return undefined;
    }
  }
  return cur;
}

/** Parsed paths, memoised: templates call Body() with the same few literal paths. */
const cache = new Map<string, BodyPath>();
const CACHE_LIMIT = 10_000;

export function cachedPath(path: string): BodyPath {
  let p = cache.get(path);
  if (p === undefined) {
    p = parsePath(path);
    if (cache.size >= CACHE_LIMIT) cache.clear();
    cache.set(path, p);
  }
  return p;
}
