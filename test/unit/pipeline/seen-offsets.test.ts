import { describe, expect, it } from 'vitest';
import { isSeen, markSeen, restartAt, SEEN_EVERYTHING } from '../../../src/pipeline/seen-offsets.js';

describe('seen offsets of a sink', () => {
  it('a new sink has seen nothing before its start and everything up to its committed offset', () => {
    const seen = restartAt(undefined, undefined, 10);
    expect(isSeen(seen, 10, 15)).toBe(false);
    expect(isSeen(seen, 11, 15)).toBe(true);
    expect(isSeen(seen, 15, 15)).toBe(true);
    expect(isSeen(seen, 16, 15)).toBe(false);
  });

  it('a sink enabled again keeps what it saw before and skips the gap', () => {
    let seen = restartAt(undefined, undefined, 0);
    seen = restartAt(seen, 20, 50);
    expect(seen).toEqual({ closed: [[1, 20]], openFrom: 51 });
    expect([5, 20, 21, 50, 51, 60].map((o) => isSeen(seen, o, 60))).toEqual([true, true, false, false, true, true]);
  });

  it('a sink that had consumed nothing closes no range', () => {
    expect(restartAt({ closed: [], openFrom: 11 }, 10, 30)).toEqual({ closed: [], openFrom: 31 });
  });

  it('merges overlapping and adjacent ranges', () => {
    let seen = { closed: [] as Array<[number, number]>, openFrom: 100 };
    seen = markSeen(seen, 10, 20);
    seen = markSeen(seen, 30, 40);
    seen = markSeen(seen, 21, 25);
    expect(seen.closed).toEqual([[10, 25], [30, 40]]);
    seen = markSeen(seen, 26, 29);
    expect(seen.closed).toEqual([[10, 40]]);
    seen = markSeen(seen, 5, 7);
    expect(seen.closed).toEqual([[5, 7], [10, 40]]);
    expect(markSeen(seen, 9, 8)).toBe(seen);
    expect([4, 5, 8, 9, 10, 40, 41].map((o) => isSeen(seen, o, 0))).toEqual([false, true, false, false, true, true, false]);
  });

  it('a sink without bookkeeping has seen everything up to its committed offset', () => {
    expect(isSeen(SEEN_EVERYTHING, 1, 5)).toBe(true);
    expect(isSeen(SEEN_EVERYTHING, 6, 5)).toBe(false);
  });
});
