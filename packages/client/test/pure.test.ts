/** The client's pure parts: UTF-8 lengths, Retry-After, the back-off steps. */
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { DEFAULT_RETRY } from '@sluice/client';
import { parseRetryAfter, retryDelay } from '../src/backoff.js';
import { countUtf8, utf8Length } from '../src/records.js';

describe('UTF-8 lengths', () => {
  it('counts as TextEncoder encodes, lone surrogates included (the browsers\' count and Node\'s)', () => {
    const encoder = new TextEncoder();
    fc.assert(
      fc.property(fc.string({ unit: fc.oneof(fc.constantFrom('a', 'é', '€', '😀', '\ud800', '\udc00', '\n'), fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c))) }), (s) => {
        const bytes = encoder.encode(s).length;
        expect(countUtf8(s)).toBe(bytes);
        expect(utf8Length(s)).toBe(bytes);
      }),
      { numRuns: 2000 },
    );
  });
});

describe('Retry-After', () => {
  const now = Date.parse('2026-11-27T10:00:00Z');
  it('reads delay-seconds and HTTP dates; ignores what it cannot read', () => {
    expect(parseRetryAfter('1', now)).toBe(1000);
    expect(parseRetryAfter(' 120 ', now)).toBe(120_000);
    expect(parseRetryAfter('0.5', now)).toBe(500);
    expect(parseRetryAfter('Fri, 27 Nov 2026 10:00:03 GMT', now)).toBe(3000);
    expect(parseRetryAfter('Fri, 27 Nov 2026 09:59:00 GMT', now)).toBe(0);
    expect(parseRetryAfter(null, now)).toBeUndefined();
    expect(parseRetryAfter('soon', now)).toBeUndefined();
    expect(parseRetryAfter('-1', now)).toBeUndefined();
  });
});

describe('the back-off', () => {
  it('doubles from initialDelayMs up to maxDelayMs, waiting a random half of each step on top of the other half', () => {
    const policy = { ...DEFAULT_RETRY, initialDelayMs: 100, maxDelayMs: 1000 };
    expect([1, 2, 3, 4, 5, 6].map((a) => retryDelay(a, undefined, policy, () => 0))).toEqual([50, 100, 200, 400, 500, 500]);
    expect([1, 2, 3, 4, 5, 6].map((a) => retryDelay(a, undefined, policy, () => 0.999999))).toEqual([100, 200, 400, 800, 1000, 1000].map((d) => expect.closeTo(d, 2)));
    // Very many attempts stay at the ceiling.
    expect(retryDelay(5000, undefined, policy, () => 0.5)).toBe(750);
  });

  it('waits a Retry-After out, plus up to a fifth of it, beyond maxDelayMs too', () => {
    const policy = { ...DEFAULT_RETRY, maxDelayMs: 1000 };
    expect(retryDelay(1, 1000, policy, () => 0)).toBe(1000);
    expect(retryDelay(1, 1000, policy, () => 0.5)).toBe(1100);
    expect(retryDelay(3, 5000, policy, () => 0)).toBe(5000);
    // Retry-After: 0 is no instruction: the back-off applies.
    expect(retryDelay(1, 0, { ...policy, initialDelayMs: 100 }, () => 0)).toBe(50);
  });
});
