import { describe, expect, it } from 'vitest';
import { checkJsonDepth, JsonTooDeepError, nestedDeeperThan } from '../../../src/http/json-depth.js';

/** `{"a":{"a":...1...}}` with `depth` objects, as JSON text. */
const deepObjectText = (depth: number): string => '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
const deepArrayText = (depth: number): string => '['.repeat(depth) + ']'.repeat(depth);

describe('the JSON nesting limit', () => {
  it('counts objects and arrays as levels, scalars as none', () => {
    expect(nestedDeeperThan('text', 0)).toBe(false);
    expect(nestedDeeperThan(null, 0)).toBe(false);
    expect(nestedDeeperThan({}, 0)).toBe(true);
    expect(nestedDeeperThan({}, 1)).toBe(false);
    expect(nestedDeeperThan({ a: [1, { b: 'x' }] }, 3)).toBe(false);
    expect(nestedDeeperThan({ a: [1, { b: 'x' }] }, 2)).toBe(true);
    // The deepest branch decides, wherever it is.
    expect(nestedDeeperThan([1, 2, { a: {} }, [[[[]]]]], 4)).toBe(true);
    expect(nestedDeeperThan([1, 2, { a: {} }, [[[[]]]]], 5)).toBe(false);
  });

  it('measures exactly at the limit, for objects and arrays', () => {
    expect(nestedDeeperThan(JSON.parse(deepObjectText(100)), 100)).toBe(false);
    expect(nestedDeeperThan(JSON.parse(deepObjectText(101)), 100)).toBe(true);
    expect(nestedDeeperThan(JSON.parse(deepArrayText(100)), 100)).toBe(false);
    expect(nestedDeeperThan(JSON.parse(deepArrayText(101)), 100)).toBe(true);
  });

  it('measures a value far deeper than the stack allows for recursion, without overflowing', () => {
    const value = JSON.parse(deepObjectText(200_000));
    expect(() => JSON.stringify(value)).toThrow(RangeError);
    expect(nestedDeeperThan(value, 100)).toBe(true);
    expect(nestedDeeperThan(value, 300_000)).toBe(false);
  });

  it('refuses with a 400 that names the limit', () => {
    expect(() => checkJsonDepth(JSON.parse(deepArrayText(3)), 3)).not.toThrow();
    let thrown: unknown;
    try {
      checkJsonDepth(JSON.parse(deepArrayText(4)), 3);
    } catch (err) {
      thrown = err;
    }
    expect(thrown).toBeInstanceOf(JsonTooDeepError);
    expect(thrown).toMatchObject({ statusCode: 400, message: 'The JSON body is nested deeper than 3 levels, the limit of this server.' });
  });
});
