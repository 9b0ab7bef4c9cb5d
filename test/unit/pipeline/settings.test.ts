import { describe, expect, it } from 'vitest';
import { effectiveSetting, patchSettings, SETTINGS, SettingsError, settingsView } from '../../../src/pipeline/settings.js';
import { QUOTA_MAX, quotaLimitsOf, quotaSettingDefaults } from '../../../src/pipeline/quota-settings.js';
import { goDurationString, parseByteSize, parseDuration } from '../../../src/pipeline/units.js';

const UP = 'storage.level.staging.upload.trigger.';

describe('settings', () => {
  it('lists every key sorted, with defaults and no overrides', () => {
    const view = settingsView(undefined);
    const keys = view.map((s) => s.key);
    expect(keys).toEqual([...keys].sort());
    expect(view).toHaveLength(27);
    expect(view.filter((s) => !s.protected).map((s) => s.key)).toEqual([
      'storage.level.local.encoding.sync.wait',
      UP + 'count', UP + 'interval', UP + 'size',
      'storage.level.target.import.trigger.count', 'storage.level.target.import.trigger.interval', 'storage.level.target.import.trigger.size',
    ]);
    expect(view.every((s) => s.overwritten === false)).toBe(true);
  });

  it('applies a patch and shows it as overwritten; null resets to the default', () => {
    const config = patchSettings(undefined, [{ key: UP + 'interval', value: '45s' }]);
    const row = settingsView(config).find((s) => s.key === UP + 'interval')!;
    expect(row).toMatchObject({ value: '45s', defaultValue: '30s', overwritten: true });
    const reset = patchSettings(config, [{ key: UP + 'interval', value: null }]);
    expect(reset).toEqual([]);
  });

  it('rejects invalid values, one line per key in the reference order', () => {
    try {
      patchSettings(undefined, [{ key: UP + 'interval', value: 'foo' }, { key: UP + 'size', value: 'bar' }]);
      expect.unreachable();
    } catch (err) {
      expect(err).toBeInstanceOf(SettingsError);
      expect((err as SettingsError).kind).toBe('invalid');
      expect((err as Error).message).toBe(
        `- Invalid "${UP}size" value "bar": invalid syntax.\n- Invalid "${UP}interval": time: invalid duration "foo".`,
      );
    }
  });

  it('enforces the seed bounds', () => {
    expect(() => patchSettings(undefined, [{ key: UP + 'interval', value: '500ms' }])).toThrow(/1s or greater/);
    expect(() => patchSettings(undefined, [{ key: UP + 'interval', value: '31m' }])).toThrow(/30m or less/);
    expect(() => patchSettings(undefined, [{ key: UP + 'count', value: 0 }])).toThrow(/1 or greater/);
    expect(() => patchSettings(undefined, [{ key: UP + 'size', value: '51MB' }])).toThrow(/50MB or less/);
    expect(() => patchSettings(undefined, [{ key: 'storage.level.target.import.trigger.interval', value: '29s' }])).toThrow(/30s or greater/);
    expect(() => patchSettings(undefined, [{ key: UP + 'count', value: '5' }])).toThrow(/expected int/);
    expect(patchSettings(undefined, [{ key: UP + 'count', value: 10_000_000 }])).toHaveLength(1);
  });

  it('refuses protected and unknown keys', () => {
    expect(() => patchSettings(undefined, [{ key: 'storage.level.local.encoding.compression.gzip.blockSize', value: '128KB' }]))
      .toThrow('Cannot modify protected keys: "storage.level.local.encoding.compression.gzip.blockSize".');
    expect(() => patchSettings(undefined, [{ key: 'nope', value: 1 }])).toThrow(/Unknown keys: "nope"/);
  });

  it('resolves effective values: defaults, then source, then sink', () => {
    const source = [{ key: UP + 'count', value: 5 }];
    const sink = [{ key: UP + 'count', value: 7 }];
    expect(effectiveSetting(UP + 'count')).toBe(10000);
    expect(effectiveSetting(UP + 'count', source)).toBe(5);
    expect(effectiveSetting(UP + 'count', source, sink)).toBe(7);
  });
});

describe('the quota settings (Sluice\'s own keys)', () => {
  const RECORDS = 'source.quota.recordsPerSecond';
  const BYTES = 'source.quota.bytesPerSecond';

  it('are listed only where they matter: set on the source, a node default, or every key asked for', () => {
    expect(settingsView(undefined).map((s) => s.key)).not.toContain(RECORDS);
    const set = settingsView(patchSettings(undefined, [{ key: RECORDS, value: 100 }]));
    expect(set.find((s) => s.key === RECORDS)).toMatchObject({ value: 100, defaultValue: 0, overwritten: true, protected: false, type: 'int' });
    expect(set.map((s) => s.key)).not.toContain(BYTES);
    const all = settingsView(undefined, { all: true });
    expect(all.filter((s) => s.key.startsWith('source.quota.')).map((s) => [s.key, s.value])).toEqual([[BYTES, '0B'], [RECORDS, 0]]);
    const defaults = quotaSettingDefaults({ recordsPerSecond: 0, bytesPerSecond: 1024 * 1024 });
    const byNode = settingsView(undefined, { defaults });
    expect(byNode.find((s) => s.key === BYTES)).toMatchObject({ value: '1MB', defaultValue: '1MB', overwritten: false });
    expect(byNode.find((s) => s.key === BYTES)!.description).toMatch(/This node's default: 1MB \(--source-max-bytes-per-second\)\.$/);
    expect(byNode.map((s) => s.key)).not.toContain(RECORDS);
  });

  it('are the source\'s only: a sink neither lists nor takes them', () => {
    expect(settingsView(undefined, { scope: 'sink', all: true }).map((s) => s.key).filter((k) => k.startsWith('source.'))).toEqual([]);
    expect(() => patchSettings(undefined, [{ key: RECORDS, value: 5 }], [], 'sink'))
      .toThrow('- Settings of the source, not of its sinks: "source.quota.recordsPerSecond"; set them on the source.');
  });

  it('refuse a value out of range, naming the key and the range', () => {
    const problem = (key: string, value: unknown) => {
      try {
        patchSettings(undefined, [{ key, value }]);
        return undefined;
      } catch (err) {
        return (err as Error).message;
      }
    };
    expect(problem(RECORDS, -1)).toBe('- "source.quota.recordsPerSecond" must be from 0 to 10000000, got -1 (0: no quota).');
    expect(problem(RECORDS, 10_000_001)).toBe('- "source.quota.recordsPerSecond" must be from 0 to 10000000, got 10000001 (0: no quota).');
    expect(problem(RECORDS, 1.5)).toBe('- Invalid "source.quota.recordsPerSecond" value "1.5": expected int.');
    expect(problem(RECORDS, '100')).toBe('- Invalid "source.quota.recordsPerSecond" value "100": expected int.');
    expect(problem(BYTES, '11GB')).toBe('- "source.quota.bytesPerSecond" must be from 0B to 10GB, got 11GB (0B: no quota).');
    expect(problem(BYTES, 'lots')).toBe('- Invalid "source.quota.bytesPerSecond" value "lots": invalid syntax.');
    expect(problem(BYTES, 1024)).toBe('- Invalid "source.quota.bytesPerSecond" value "1024": expected string.');
    expect(problem(RECORDS, 10_000_000)).toBeUndefined();
    expect(problem(BYTES, '10GB')).toBeUndefined();
    expect(problem(BYTES, '0')).toBeUndefined();
  });

  it('give a source\'s limits: its own values, else the node\'s defaults; the rules match the flags\' ranges', () => {
    const node = { recordsPerSecond: 7, bytesPerSecond: 0 };
    expect(quotaLimitsOf(undefined, node)).toBe(node);
    expect(quotaLimitsOf([{ key: RECORDS, value: 0 }, { key: BYTES, value: '512KB' }], node)).toEqual({ recordsPerSecond: 0, bytesPerSecond: 512 * 1024 });
    const rules = new Map(SETTINGS.map((d) => [d.key, d.rule]));
    expect(rules.get(RECORDS)).toMatchObject({ min: 0, max: QUOTA_MAX.recordsPerSecond });
    expect(parseByteSize(rules.get(BYTES)!.maxBytes!)).toBe(QUOTA_MAX.bytesPerSecond);
  });
});

describe('units', () => {
  it('parses byte sizes 1024-based', () => {
    expect(parseByteSize('100B')).toBe(100);
    expect(parseByteSize('16kB')).toBe(16 * 1024);
    expect(parseByteSize('5MB')).toBe(5 * 1024 * 1024);
    expect(parseByteSize('bar')).toBeUndefined();
    expect(parseByteSize('5XB')).toBeUndefined();
  });

  it('parses Go durations', () => {
    expect(parseDuration('1m0s')).toBe(60_000);
    expect(parseDuration('1h30m')).toBe(5_400_000);
    expect(parseDuration('50ms')).toBe(50);
    expect(parseDuration('1.5s')).toBe(1500);
    expect(parseDuration('foo')).toBeUndefined();
    expect(parseDuration('10')).toBeUndefined();
  });

  it('prints Go duration strings', () => {
    expect(goDurationString(60_000)).toBe('1m0s');
    expect(goDurationString(45_000)).toBe('45s');
    expect(goDurationString(30 * 60_000)).toBe('30m0s');
  });
});
