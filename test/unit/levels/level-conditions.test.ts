import { describe, expect, it } from 'vitest';
import { REFERENCE_LIMITS } from '../../../src/model/levels.js';
import { importReason, retryDelayMs, syncWaitOf, triggersOf, uploadReason } from '../../../src/levels/triggers.js';

const up = { count: 10, sizeBytes: 1000, intervalMs: 30_000 };
const imp = { count: 100, sizeBytes: 10_000, intervalMs: 60_000, slicesCount: 5 };
const at = (ageMs: number, recordsCount: number, sizeBytes: number) => ({ openedAtMs: 1_000_000 - ageMs, recordsCount, sizeBytes });
const NOW = 1_000_000;

describe('upload trigger', () => {
  it('checks in the reference order', () => {
    expect(uploadReason(at(9_999, 100, 5000), up, REFERENCE_LIMITS, NOW)).toBeUndefined();
    expect(uploadReason(at(50_000, 0, 0), up, REFERENCE_LIMITS, NOW)).toBeUndefined();
    expect(uploadReason(at(10_000, 10, 5000), up, REFERENCE_LIMITS, NOW)).toBe('recordCount');
    expect(uploadReason(at(10_000, 9, 1000), up, REFERENCE_LIMITS, NOW)).toBe('size');
    expect(uploadReason(at(30_000, 1, 1), up, REFERENCE_LIMITS, NOW)).toBe('interval');
    expect(uploadReason(at(29_999, 1, 1), up, REFERENCE_LIMITS, NOW)).toBeUndefined();
  });
});

describe('import trigger', () => {
  it('imports at maxSlices before any other check, even a young file', () => {
    expect(importReason({ ...at(0, 0, 0), slicesCount: 100 }, imp, REFERENCE_LIMITS, NOW)).toBe('maxSlices');
  });
  it('checks in the reference order', () => {
    expect(importReason({ ...at(59_999, 1000, 1e9), slicesCount: 6 }, imp, REFERENCE_LIMITS, NOW)).toBeUndefined();
    expect(importReason({ ...at(60_000, 0, 0), slicesCount: 5 }, imp, REFERENCE_LIMITS, NOW)).toBe('slicesCount');
    expect(importReason({ ...at(60_000, 0, 0), slicesCount: 1 }, { ...imp, intervalMs: 1 }, REFERENCE_LIMITS, NOW)).toBeUndefined();
    expect(importReason({ ...at(60_000, 100, 0), slicesCount: 1 }, { ...imp, intervalMs: 1e9 }, REFERENCE_LIMITS, NOW)).toBe('recordCount');
    expect(importReason({ ...at(60_000, 1, 10_000), slicesCount: 1 }, { ...imp, intervalMs: 1e9 }, REFERENCE_LIMITS, NOW)).toBe('size');
    expect(importReason({ ...at(60_000, 1, 1), slicesCount: 1 }, imp, REFERENCE_LIMITS, NOW)).toBe('interval');
  });
});

describe('settings to triggers', () => {
  it('uses defaults, then source, then sink settings', () => {
    const t = triggersOf(undefined);
    expect(t.upload).toEqual({ count: 10_000, sizeBytes: 5 * 1024 * 1024, intervalMs: 30_000 });
    expect(t.import).toEqual({ count: 50_000, sizeBytes: 50 * 1024 * 1024, intervalMs: 60_000, slicesCount: 100 });
    const s = triggersOf([{ key: 'storage.level.staging.upload.trigger.interval', value: '2s' }], [{ key: 'storage.level.target.import.trigger.count', value: 7 }]);
    expect(s.upload.intervalMs).toBe(2000);
    expect(s.import.count).toBe(7);
    expect(syncWaitOf(undefined)).toBe(true);
    expect(syncWaitOf([{ key: 'storage.level.local.encoding.sync.wait', value: false }])).toBe(false);
  });
});

describe('retry backoff', () => {
  it('grows 4x from 2 minutes, capped at 3 hours, with ±10 % jitter', () => {
    const mid = () => 0.5;
    expect(retryDelayMs(1, undefined, mid)).toBe(120_000);
    expect(retryDelayMs(2, undefined, mid)).toBe(480_000);
    expect(retryDelayMs(3, undefined, mid)).toBe(1_920_000);
    expect(retryDelayMs(5, undefined, mid)).toBe(10_800_000);
    expect(retryDelayMs(1, undefined, () => 0)).toBe(108_000);
    expect(retryDelayMs(1, undefined, () => 1)).toBe(132_000);
  });
});
