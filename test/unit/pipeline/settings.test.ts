import { describe, expect, it } from 'vitest';
import { effectiveSetting, patchSettings, SettingsError, settingsView } from '../../../src/pipeline/settings.js';
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
