/**
 * The levels' trigger conditions: when data moves between storage levels (reference §17.5, §17.6): pure decisions over the
 * numbers of a slice or file, checked in the reference's order. Sizes are the bytes of the
 * local CSV: local slices are written uncompressed (the reference's production setting,
 * compression "none"), so compressed and uncompressed sizes of the compared data are equal.
 */
import type { SettingValue } from '../model/definition.js';
import { effectiveSetting, type SettingFloor } from '../pipeline/settings.js';
import { parseByteSize, parseDuration } from '../pipeline/units.js';

export interface UploadTrigger {
  count: number;
  sizeBytes: number;
  intervalMs: number;
}

export interface ImportTrigger extends UploadTrigger {
  slicesCount: number;
}

/** Fixed limits of the reference, configurable for tests and operators. */
export interface LevelLimits {
  /** A slice younger than this is never uploaded (reference: 10 s). */
  uploadMinIntervalMs: number;
  /** A file younger than this is never imported, unless it has maxSlices slices (reference: 60 s). */
  importMinIntervalMs: number;
  /** A file with this many slices is imported at once, before every other check (reference: 100). */
  maxSlices: number;
}

export const REFERENCE_LIMITS: LevelLimits = { uploadMinIntervalMs: 10_000, importMinIntervalMs: 60_000, maxSlices: 100 };

/**
 * Sluice's defaults: the floors are the settings' own minima (upload interval 1s, import
 * interval 30s), so every value the API accepts is honoured as written. The reference's fixed
 * 10s/60s silently lengthened a valid 30s import interval to 60s; an operator who wants them
 * sets --upload-min-interval 10s --import-min-interval 60s, and the settings answer shows it.
 */
export const DEFAULT_LIMITS: LevelLimits = { uploadMinIntervalMs: 1_000, importMinIntervalMs: 30_000, maxSlices: 100 };

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
 * Backoff of failed uploads and imports (reference §17.7): base × 4^(n−1), capped at 3 h,
 * ±10 % jitter; n is the retry attempt (1 for the first retry). The base is 2 minutes.
 */
export function retryDelayMs(attempt: number, baseMs = 120_000, random: () => number = Math.random): number {
  const raw = Math.min(baseMs * 4 ** Math.max(0, attempt - 1), 3 * 3_600_000);
  return Math.round(raw * (0.9 + 0.2 * random()));
}
