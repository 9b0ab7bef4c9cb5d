/**
 * The levels' triggers, when data moves between storage levels: pure decisions over the
 * numbers of a slice or file, checked in the reference's order. Sizes are the bytes of the
 * local CSV: local slices are written uncompressed (the reference's production setting,
 * compression "none"), so compressed and uncompressed sizes of the compared data are equal.
 */
import type { SettingValue } from '../model/definition.js';
import { effectiveSetting, type SettingFloor } from '../pipeline/settings.js';
import { parseByteSize, parseDuration } from '../pipeline/units.js';
import type { LevelLimits } from '../model/levels.js';

export interface UploadTrigger {
  count: number;
  sizeBytes: number;
  intervalMs: number;
}

export interface ImportTrigger extends UploadTrigger {
  slicesCount: number;
}

/** The floors as the settings answer shows them (see settingsView). */
export function triggerFloors(limits: LevelLimits): SettingFloor[] {
  return [
    { key: UP + 'interval', ms: limits.uploadMinIntervalMs, flag: '--upload-min-interval' },
    { key: IMP + 'interval', ms: limits.importMinIntervalMs, flag: '--import-min-interval' },
  ];
}

export interface Amounts {
  openedAtMs: number;
  recordsCount: number;
  sizeBytes: number;
}

export type UploadReason = 'recordCount' | 'size' | 'interval';
export type ImportReason = 'maxSlices' | 'slicesCount' | 'recordCount' | 'size' | 'interval';

export function uploadReason(slice: Amounts, trigger: UploadTrigger, limits: LevelLimits, nowMs: number): UploadReason | undefined {
  const age = nowMs - slice.openedAtMs;
  if (age < limits.uploadMinIntervalMs) return undefined;
  if (slice.recordsCount === 0) return undefined;
  if (slice.recordsCount >= trigger.count) return 'recordCount';
  if (slice.sizeBytes >= trigger.sizeBytes) return 'size';
  if (age >= trigger.intervalMs) return 'interval';
  return undefined;
}

export function importReason(file: Amounts & { slicesCount: number }, trigger: ImportTrigger, limits: LevelLimits, nowMs: number): ImportReason | undefined {
  if (file.slicesCount >= limits.maxSlices) return 'maxSlices';
  const age = nowMs - file.openedAtMs;
  if (age < limits.importMinIntervalMs) return undefined;
  if (file.slicesCount >= trigger.slicesCount) return 'slicesCount';
  if (file.recordsCount === 0) return undefined;
  if (file.recordsCount >= trigger.count) return 'recordCount';
  if (file.sizeBytes >= trigger.sizeBytes) return 'size';
  if (age >= trigger.intervalMs) return 'interval';
  return undefined;
}

const UP = 'storage.level.staging.upload.trigger.';
const IMP = 'storage.level.target.import.trigger.';

/** The triggers in force for a sink: defaults, then the source's settings, then the sink's. */
export function triggersOf(...layers: (SettingValue[] | undefined)[]): { upload: UploadTrigger; import: ImportTrigger } {
  const num = (key: string) => Number(effectiveSetting(key, ...layers));
  const bytes = (key: string) => parseByteSize(String(effectiveSetting(key, ...layers)))!;
  const ms = (key: string) => parseDuration(String(effectiveSetting(key, ...layers)))!;
  return {
    upload: { count: num(UP + 'count'), sizeBytes: bytes(UP + 'size'), intervalMs: ms(UP + 'interval') },
    import: { count: num(IMP + 'count'), sizeBytes: bytes(IMP + 'size'), intervalMs: ms(IMP + 'interval'), slicesCount: num(IMP + 'slicesCount') },
  };
}

/** Whether ingestion waits for the durable log write before answering (200) or not (202). */
export function syncWaitOf(...layers: (SettingValue[] | undefined)[]): boolean {
  return effectiveSetting('storage.level.local.encoding.sync.wait', ...layers) !== false;
}

/**
 * Backoff of failed uploads and imports: base × 4^(n−1), capped at 3 h,
 * ±10 % jitter; n is the retry attempt (1 for the first retry). The base is 2 minutes.
 */
export function retryDelayMs(attempt: number, baseMs = 120_000, random: () => number = Math.random): number {
  const raw = Math.min(baseMs * 4 ** Math.max(0, attempt - 1), 3 * 3_600_000);
  return Math.round(raw * (0.9 + 0.2 * random()));
}
