/**
 * A source's quota as its settings and the node's defaults give it (pure): records and bytes a
 * second, 0 for no quota. The keys are declared with the other settings (settings.ts); the
 * buckets that enforce them are sources/ingest/source-quotas.ts.
 */
import type { SettingValue } from '../model/definition.js';
import { QUOTA_BYTES_KEY, QUOTA_RECORDS_KEY, type SettingDefault } from './settings.js';
import { byteSizeString, parseByteSize } from './units.js';

export interface QuotaLimits {
  /** Records a second; 0: no quota. */
  readonly recordsPerSecond: number;
  /** Record bytes a second (bodies as stored, after decompression); 0: no quota. */
  readonly bytesPerSecond: number;
}

export const NO_QUOTA: QuotaLimits = { recordsPerSecond: 0, bytesPerSecond: 0 };

/** The flags of the node-wide defaults (config.ts declares them with these names). */
export const QUOTA_FLAGS = {
  recordsPerSecond: '--source-max-records-per-second',
  bytesPerSecond: '--source-max-bytes-per-second',
} as const;

/** The largest quotas the settings and the flags take (the keys' validation says the same). */
export const QUOTA_MAX = { recordsPerSecond: 10_000_000, bytesPerSecond: 10 * 1024 ** 3 } as const;

export const hasQuota = (limits: QuotaLimits): boolean => limits.recordsPerSecond > 0 || limits.bytesPerSecond > 0;

/**
 * The source's own values where it sets them, else the node's defaults. A source that sets 0
 * has no quota even where the node has a default (the way to exempt one source).
 */
export function quotaLimitsOf(config: readonly SettingValue[] | undefined, nodeDefaults: QuotaLimits): QuotaLimits {
  let { recordsPerSecond, bytesPerSecond } = nodeDefaults;
  for (const o of config ?? []) {
    // The values were validated when they were set (settings.ts).
    if (o.key === QUOTA_RECORDS_KEY) recordsPerSecond = Number(o.value);
    else if (o.key === QUOTA_BYTES_KEY) bytesPerSecond = parseByteSize(String(o.value)) ?? 0;
  }
  return recordsPerSecond === nodeDefaults.recordsPerSecond && bytesPerSecond === nodeDefaults.bytesPerSecond
    ? nodeDefaults
    : { recordsPerSecond, bytesPerSecond };
}

/** The node's defaults as the settings list shows them (only those that are set). */
export function quotaSettingDefaults(nodeDefaults: QuotaLimits): SettingDefault[] {
  const defaults: SettingDefault[] = [];
  if (nodeDefaults.recordsPerSecond > 0) defaults.push({ key: QUOTA_RECORDS_KEY, value: nodeDefaults.recordsPerSecond, flag: QUOTA_FLAGS.recordsPerSecond });
  if (nodeDefaults.bytesPerSecond > 0) defaults.push({ key: QUOTA_BYTES_KEY, value: byteSizeString(nodeDefaults.bytesPerSecond), flag: QUOTA_FLAGS.bytesPerSecond });
  return defaults;
}
