import { describe, expect, it } from 'vitest';
import { cutToBudget, recordBytes } from '../../../src/adapters/kafka/record-batches.js';

const rec = (n: number, bytes: number) => ({ key: `k${n}`, value: Buffer.alloc(bytes), headers: { origin: 'node', seq: String(n) } });

describe('record batches', () => {
  it('bounds a record from above: value, key, headers and their lengths', () => {
    const r = rec(1, 100);
    expect(recordBytes(r)).toBeGreaterThanOrEqual(100 + 2 + 'origin'.length + 'node'.length + 'seq'.length + 1);
    expect(recordBytes({ value: null })).toBeGreaterThan(0);
  });

  it('cuts records into consecutive runs within the budget; a larger record is a run alone', () => {
    const records = [rec(1, 400), rec(2, 400), rec(3, 400), rec(4, 5000), rec(5, 10), rec(6, 10)];
    const runs = cutToBudget(records, 1000);
    expect(runs.map((r) => r.map((x) => x.key))).toEqual([['k1', 'k2'], ['k3'], ['k4'], ['k5', 'k6']]);
    for (const run of runs) if (run.length > 1) expect(run.reduce((n, r) => n + recordBytes(r), 0)).toBeLessThanOrEqual(1000);
    expect(cutToBudget([], 1000)).toEqual([]);
  });
});
