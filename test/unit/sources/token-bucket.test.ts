/**
 * The token bucket of a quota (src/sources/ingest/token-bucket.ts), on a clock the test moves:
 * a new bucket is full, it refills at its rate up to its size, a request waits exactly until it
 * fits, one larger than the bucket passes a full bucket and leaves a debt, and a change of rate
 * keeps the level.
 */
import { describe, expect, it } from 'vitest';
import { TokenBucket } from '../../../src/sources/ingest/token-bucket.js';

describe('TokenBucket', () => {
  it('starts full: the first second may use the whole burst, and not one more', () => {
    const b = new TokenBucket(100, 100, 0);
    expect(b.remaining(0)).toBe(100);
    expect(b.waitMs(100, 0)).toBe(0);
    b.take(100, 0);
    expect(b.remaining(0)).toBe(0);
    // One more record fits after a hundredth of a second at 100 a second.
    expect(b.waitMs(1, 0)).toBe(10);
  });

  it('refills at its rate, never past its size', () => {
    const b = new TokenBucket(100, 100, 0);
    b.take(100, 0);
    expect(b.remaining(250)).toBe(25);
    expect(b.msUntilFull(250)).toBe(750);
    expect(b.remaining(5_000)).toBe(100);
    expect(b.msUntilFull(5_000)).toBe(0);
  });

  it('says how long a request waits until it fits, to the millisecond', () => {
    const b = new TokenBucket(10, 10, 0);
    b.take(10, 0);
    expect(b.waitMs(5, 0)).toBe(500);
    expect(b.waitMs(5, 499)).toBe(1);
    expect(b.waitMs(5, 500)).toBe(0);
  });

  it('takes a request larger than the bucket when the bucket is full, and makes the source wait off the debt', () => {
    const b = new TokenBucket(100, 100, 0);
    // 250 records at 100 a second: refused while the bucket is not full ...
    b.take(1, 0);
    expect(b.waitMs(250, 0)).toBe(10);
    // ... taken once it is (never refused for ever) ...
    expect(b.waitMs(250, 10)).toBe(0);
    b.take(250, 10);
    expect(b.remaining(10)).toBe(0);
    // ... and the next record waits until the 150 of debt are paid and one more came: 1.51 s.
    expect(b.waitMs(1, 10)).toBe(1_510);
    expect(b.waitMs(1, 1_520)).toBe(0);
  });

  it('over a long run, lets through the rate times the time plus one burst', () => {
    const b = new TokenBucket(50, 50, 0);
    let taken = 0;
    // A client asking for 7 records every 10 ms (700 a second) for 10 s.
    for (let t = 0; t <= 10_000; t += 10) {
      if (b.waitMs(7, t) === 0) {
        b.take(7, t);
        taken += 7;
      }
    }
    expect(taken).toBeGreaterThanOrEqual(50 * 10);
    expect(taken).toBeLessThanOrEqual(50 * 10 + 50);
  });

  it('applies a change of rate at once, keeping how full the bucket is (no fresh burst for a throttled source)', () => {
    const b = new TokenBucket(100, 100, 0);
    b.take(100, 0);
    b.reconfigure(10, 10, 0);
    expect(b.remaining(0)).toBe(0);
    expect(b.waitMs(1, 0)).toBe(100);
    expect(b.remaining(1_000)).toBe(10);
    // Raised: a full bucket stays full at the new size; a half-empty one half-empty.
    b.reconfigure(1_000, 1_000, 1_000);
    expect(b.remaining(1_000)).toBe(1_000);
    b.take(500, 1_000);
    b.reconfigure(2_000, 2_000, 1_000);
    expect(b.remaining(1_000)).toBe(1_000);
    // A debt takes as long to pay off (1.5 s of the rate) before and after: the next record
    // comes 1.51 s later at 100 a second, 1.6 s later at 10 a second.
    const owing = new TokenBucket(100, 100, 0);
    owing.take(250, 0);
    expect(owing.waitMs(1, 0)).toBe(1_510);
    owing.reconfigure(10, 10, 0);
    expect(owing.waitMs(1, 0)).toBe(1_600);
    // An empty bucket of 1 a second, raised to 100 000 a second, takes a record a moment later.
    const slow = new TokenBucket(1, 1, 0);
    slow.take(1, 0);
    slow.reconfigure(100_000, 100_000, 50);
    expect(slow.remaining(50)).toBe(5_000);
  });
});
