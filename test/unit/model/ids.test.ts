import { describe, expect, it } from 'vitest';
import { normalizeId } from '../../../src/model/ids.js';

describe('normalizeId', () => {
  it.each([
    ['My Source', 'my-source'],
    ['!!!!~~~~weird|||id##', 'weird-id'],
    ['MySource', 'my-source'],
    ['My Source 1', 'my-source-1'],
    ['JSONData', 'json-data'],
    ['already-normal', 'already-normal'],
    ['  spaced  out  ', 'spaced-out'],
    ['Ünïcode Name', 'n-code-name'],
    ['###', ''],
  ])('%s -> %s', (input, expected) => {
    expect(normalizeId(input)).toBe(expected);
  });
});
