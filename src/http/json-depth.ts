/**
 * The nesting limit of the JSON the APIs take (--max-json-depth): JSON.parse nests as deep as
 * the text does, but what stores and answers the value recurses (the metadata store's msgpack,
 * JSON.stringify, the job's files), and about 2000 levels overflow the stack there. A body (or a
 * JSON text inside a form field) nested deeper than the limit is refused with 400 by the family's
 * error formatter, before any route sees it.
 */
import type { FastifyInstance, FastifyRequest } from 'fastify';

/** A 4xx the error handler (error-handler.ts) treats as a refused request, in each family's envelope. */
export class JsonTooDeepError extends Error {
  readonly statusCode = 400;
  readonly code = 'SLUICE_JSON_TOO_DEEP';

  constructor(readonly maxDepth: number, what = 'The JSON body') {
    super(`${what} is nested deeper than ${maxDepth} levels, the limit of this server.`);
  }
}

/**
 * True when `value` has objects or arrays nested deeper than `maxDepth` (`{}` and `[]` are one
 * level, a scalar none). Iterative: any depth is measured without recursion.
 */
export function nestedDeeperThan(value: unknown, maxDepth: number): boolean {
  if (value === null || typeof value !== 'object') return false;
  const values: unknown[] = [value];
  const depths: number[] = [1];
  while (values.length > 0) {
    const v = values.pop() as object;
    const depth = depths.pop()!;
    if (depth > maxDepth) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (child !== null && typeof child === 'object') {
        values.push(child);
        depths.push(depth + 1);
      }
    }
  }
  return false;
}

/** Throws JsonTooDeepError when `value` is nested deeper than `maxDepth`. */
export function checkJsonDepth(value: unknown, maxDepth: number, what?: string): void {
  if (nestedDeeperThan(value, maxDepth)) throw new JsonTooDeepError(maxDepth, what);
}

type Done = (err: Error | null, body?: unknown) => void;
export type JsonParser = (req: FastifyRequest, body: string, done: Done) => void;

/** fastify's JSON parser (prototype poisoning refused), with the nesting limit. */
export function boundedJsonParser(app: FastifyInstance, maxDepth: number): JsonParser {
  const parse = app.getDefaultJsonParser('error', 'error');
  return (req, body, done) => parse(req, body, (err, value) => {
    if (err) return done(err);
    if (nestedDeeperThan(value, maxDepth)) return done(new JsonTooDeepError(maxDepth));
    done(null, value);
  });
}
