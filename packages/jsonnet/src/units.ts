/**
 * The two units the CLI's limit flags take (`--max-allocation 512MB`, `--timeout 30s`), as
 * Sluice's settings write them: byte sizes 1024-based ("5MB", "256KB", "16kB", "100B", as
 * c2h5oh/datasize) and Go durations ("30s", "1m0s", "1h30m", "50ms").
 */
const BYTE_UNITS: Record<string, number> = { '': 1, b: 1, k: 1024, kb: 1024, m: 1024 ** 2, mb: 1024 ** 2, g: 1024 ** 3, gb: 1024 ** 3, t: 1024 ** 4, tb: 1024 ** 4 };

/** "512MB" -> 536870912; undefined for invalid syntax or an unknown unit. */
export function parseByteSize(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(text);
  if (!m) return undefined;
  const mult = BYTE_UNITS[m[2].toLowerCase()];
  if (mult === undefined) return undefined;
  return Math.floor(Number(m[1]) * mult);
}

const DURATION_UNITS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, 'μs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/** Go's time.ParseDuration, in milliseconds; undefined for invalid syntax. */
export function parseDuration(text: string): number | undefined {
  if (text === '0') return 0;
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    if (rest[0] === '-') sign = -1;
    rest = rest.slice(1);
  }
  if (rest === '') return undefined;
  let total = 0;
  const re = /^(\d+(?:\.\d*)?|\.\d+)(ns|us|µs|μs|ms|s|m|h)/;
  while (rest.length > 0) {
    const m = re.exec(rest);
    if (!m) return undefined;
    total += Number(m[1]) * DURATION_UNITS[m[2]];
    rest = rest.slice(m[0].length);
  }
  return sign * total;
}
