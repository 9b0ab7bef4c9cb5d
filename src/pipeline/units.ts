/**
 * Byte sizes and durations as the reference writes them in settings: "5MB", "256KB", "16kB",
 * "100B" (1024-based, as c2h5oh/datasize) and Go durations ("30s", "1m0s", "1h30m", "50ms").
 * The two parsers have one home, the Jsonnet package, whose limit flags take the same units;
 * the formatting back and the checks the settings need are here.
 */
import { parseByteSize, parseDuration } from '@sluice/jsonnet';

export { parseByteSize, parseDuration };
/** 536870912 -> "512MB": a byte count as parseByteSize reads it, in the largest whole unit. */
export function byteSizeString(bytes: number): string {
  for (const [unit, size] of [['TB', 1024 ** 4], ['GB', 1024 ** 3], ['MB', 1024 ** 2], ['KB', 1024]] as const) {
    if (bytes >= size && bytes % size === 0) return `${bytes / size}${unit}`;
  }
  return `${bytes}B`;
}

/** Shows a bound as written in the rule, with the unit upper-cased like "16KB". */
export function formatBytes(text: string): string {
  return text.toUpperCase();
}


export function formatDuration(text: string): string {
  return text;
}

/** Go's Duration.String() of a millisecond count, e.g. 60000 -> "1m0s", 45000 -> "45s". */
export function goDurationString(ms: number): string {
  if (ms === 0) return '0s';
  if (ms < 1000) return `${ms}ms`;
  let s = ms / 1000;
  const h = Math.floor(s / 3600);
  s -= h * 3600;
  const m = Math.floor(s / 60);
  s -= m * 60;
  const sec = `${Number(s.toFixed(3))}s`;
  if (h > 0) return `${h}h${m}m${sec}`;
  if (m > 0) return `${m}m${sec}`;
  return sec;
}
