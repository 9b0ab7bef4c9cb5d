/**
 * The server's floors under the trigger intervals (--upload-min-interval, --import-min-interval):
 * by default they are the settings' own minima, so a value the API accepts is honoured as
 * written; a floor an operator raises above a minimum is shown in the settings answer.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { DEFAULT_LIMITS } from '../../../src/model/levels.js';
import { importReason, triggerFloors, triggersOf, uploadReason } from '../../../src/levels/triggers.js';
import { patchSettings, SettingsError, settingsView } from '../../../src/pipeline/settings.js';

const IMPORT_INTERVAL = 'storage.level.target.import.trigger.interval';
const UPLOAD_INTERVAL = 'storage.level.staging.upload.trigger.interval';

describe('trigger floors', () => {
  it('default to the settings\' minima (upload 1s, import 30s)', () => {
    const config = loadConfig([], {});
    expect([config.uploadMinIntervalMs, config.importMinIntervalMs]).toEqual([1_000, 30_000]);
    expect([config.uploadMinIntervalMs, config.importMinIntervalMs]).toEqual([DEFAULT_LIMITS.uploadMinIntervalMs, DEFAULT_LIMITS.importMinIntervalMs]);
  });

  it('honour the first steps\' settings: upload after 1s, import after 30s', () => {
    const triggers = triggersOf([{ key: UPLOAD_INTERVAL, value: '1s' }, { key: IMPORT_INTERVAL, value: '30s' }]);
    const opened = 1_000_000;
    const slice = { openedAtMs: opened, recordsCount: 1, sizeBytes: 40 };
    expect(uploadReason(slice, triggers.upload, DEFAULT_LIMITS, opened + 999)).toBeUndefined();
    expect(uploadReason(slice, triggers.upload, DEFAULT_LIMITS, opened + 1_000)).toBe('interval');
    const file = { ...slice, slicesCount: 1 };
    expect(importReason(file, triggers.import, DEFAULT_LIMITS, opened + 29_999)).toBeUndefined();
    expect(importReason(file, triggers.import, DEFAULT_LIMITS, opened + 30_000)).toBe('interval');
  });

  it('leave the settings answer as the reference\'s at the default floors', () => {
    const plain = settingsView(undefined);
    expect(settingsView(undefined, { floors: triggerFloors(DEFAULT_LIMITS) })).toEqual(plain);
  });

  it('show a floor raised above a minimum, on that key only', () => {
    const view = settingsView([{ key: IMPORT_INTERVAL, value: '30s' }], { floors: triggerFloors({ ...DEFAULT_LIMITS, importMinIntervalMs: 60_000 }) });
    const imp = view.find((v) => v.key === IMPORT_INTERVAL)!;
    expect(imp.serverMinimum).toBe('1m0s');
    expect(imp.value).toBe('30s');
    expect(imp.description).toBe('Duration from the last import to trigger the next import. This server waits at least 1m0s (--import-min-interval): a shorter interval takes effect as 1m0s.');
    expect(view.filter((v) => v.serverMinimum !== undefined).map((v) => v.key)).toEqual([IMPORT_INTERVAL]);
  });

  it('lowered below a key\'s minimum by the operator, let the API accept shorter intervals and say so (rows within seconds)', () => {
    const floors = triggerFloors({ ...DEFAULT_LIMITS, importMinIntervalMs: 1_000 });
    const imp = settingsView(undefined, { floors }).find((v) => v.key === IMPORT_INTERVAL)!;
    expect(imp.serverMinimum).toBe('1s');
    expect(imp.validation).toBe('required,minDuration=1s,maxDuration=24h');
    expect(imp.description).toBe('Duration from the last import to trigger the next import. This server accepts intervals down to 1s (--import-min-interval).');
    expect(patchSettings(undefined, [{ key: IMPORT_INTERVAL, value: '1s' }], floors)).toEqual([{ key: IMPORT_INTERVAL, value: '1s' }]);
    const refused = (value: string, f = floors) => {
      try {
        patchSettings(undefined, [{ key: IMPORT_INTERVAL, value }], f);
      } catch (err) {
        return err instanceof SettingsError ? err.message : String(err);
      }
      return 'accepted';
    };
    expect(refused('999ms')).toBe(`- "${IMPORT_INTERVAL}" must be 1s or greater.`);
    // Without the operator's floor the reference's minimum holds, word for word.
    expect(refused('1s', [])).toBe(`- "${IMPORT_INTERVAL}" must be 30s or greater.`);
    // A lowered floor also lets the trigger fire that early.
    const triggers = triggersOf([{ key: IMPORT_INTERVAL, value: '1s' }]);
    const file = { openedAtMs: 0, recordsCount: 1, sizeBytes: 40, slicesCount: 1 };
    expect(importReason(file, triggers.import, { ...DEFAULT_LIMITS, importMinIntervalMs: 1_000 }, 1_000)).toBe('interval');
  });

  it('check the triggers often enough for a lowered floor: a fifth of it below 5s, unless the operator says otherwise', () => {
    expect(loadConfig([], {}).checkIntervalMs).toBe(1_000);
    expect(loadConfig([], { SLUICE_IMPORT_MIN_INTERVAL: '1s' }).checkIntervalMs).toBe(200);
    expect(loadConfig(['--import-min-interval', '100ms'], {}).checkIntervalMs).toBe(100);
    expect(loadConfig(['--import-min-interval', '1s', '--check-interval', '2s'], {}).checkIntervalMs).toBe(2_000);
  });
});
