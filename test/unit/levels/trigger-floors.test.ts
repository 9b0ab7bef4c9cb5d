/**
 * The server's floors under the trigger intervals (--upload-min-interval, --import-min-interval):
 * by default they are the settings' own minima, so a value the API accepts is honoured as
 * written; a floor an operator raises above a minimum is shown in the settings answer.
 */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../src/config.js';
import { DEFAULT_LIMITS } from '../../../src/model/levels.js';
import { importReason, triggerFloors, triggersOf, uploadReason } from '../../../src/levels/triggers.js';
import { settingsView } from '../../../src/pipeline/settings.js';

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
    expect(settingsView(undefined, triggerFloors(DEFAULT_LIMITS))).toEqual(plain);
  });

  it('show a floor raised above a minimum, on that key only', () => {
    const view = settingsView([{ key: IMPORT_INTERVAL, value: '30s' }], triggerFloors({ ...DEFAULT_LIMITS, importMinIntervalMs: 60_000 }));
    const imp = view.find((v) => v.key === IMPORT_INTERVAL)!;
    expect(imp.serverMinimum).toBe('1m0s');
    expect(imp.value).toBe('30s');
    expect(imp.description).toBe('Duration from the last import to trigger the next import. This server waits at least 1m0s (--import-min-interval): a shorter interval takes effect as 1m0s.');
    expect(view.filter((v) => v.serverMinimum !== undefined).map((v) => v.key)).toEqual([IMPORT_INTERVAL]);
  });
});
