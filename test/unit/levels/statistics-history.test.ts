import { describe, expect, it } from 'vitest';
import { historyKey, StatisticsHistory, type HistorySampler } from '../../../src/levels/statistics-history.js';

/** A sampler over a map the test changes; `fail` makes the next sample throw. */
function sinks() {
  const numbers = new Map<string, { received: number; imported: number; failed: number }>();
  let fail = false;
  const sampler: HistorySampler = () => {
    if (fail) {
      fail = false;
      throw new Error('store closed');
    }
    return [...numbers.entries()];
  };
  return { numbers, sampler, failNext: () => (fail = true) };
}

describe('StatisticsHistory', () => {
  it('keeps one point per sample and sink, oldest first, up to what the window holds', () => {
    const s = sinks();
    let now = 1_000_000;
    const history = new StatisticsHistory(s.sampler, { intervalMs: 1000, keepMs: 3000, now: () => now });
    s.numbers.set(historyKey(1, 'shop', 'orders'), { received: 0, imported: 0, failed: 0 });
    for (let i = 1; i <= 5; i++) {
      s.numbers.set(historyKey(1, 'shop', 'orders'), { received: i * 10, imported: i * 5, failed: i });
      history.sample();
      now += 1000;
    }
    expect(history.points(1, 'shop', 'orders')).toEqual([
      { t: 1002, received: 30, imported: 15, failed: 3 },
      { t: 1003, received: 40, imported: 20, failed: 4 },
      { t: 1004, received: 50, imported: 25, failed: 5 },
    ]);
    expect(history.points(1, 'shop', 'other')).toEqual([]);
  });

  it('forgets a sink that is gone, and one whose statistics were cleared; a failed sample changes nothing', () => {
    const s = sinks();
    const errors: unknown[] = [];
    const history = new StatisticsHistory(s.sampler, { onError: (e) => errors.push(e) });
    s.numbers.set(historyKey(1, 'shop', 'orders'), { received: 1, imported: 0, failed: 0 });
    s.numbers.set(historyKey(1, 'shop', 'refunds'), { received: 2, imported: 0, failed: 0 });
    s.numbers.set(historyKey(1, 'web', 'clicks'), { received: 3, imported: 0, failed: 0 });
    history.sample();
    s.failNext();
    history.sample();
    expect(errors).toHaveLength(1);
    expect(history.points(1, 'shop', 'orders')).toHaveLength(1);
    history.clear(1, 'shop', 'orders');
    expect(history.points(1, 'shop', 'orders')).toEqual([]);
    expect(history.points(1, 'shop', 'refunds')).toHaveLength(1);
    history.clear(1, 'shop');
    expect(history.points(1, 'shop', 'refunds')).toEqual([]);
    s.numbers.delete(historyKey(1, 'web', 'clicks'));
    history.sample();
    expect(history.points(1, 'web', 'clicks')).toEqual([]);
  });
});
