/** Numbers for people: counts with thousands separators, sizes in decimal units. */

/** 1000000 -> "1,000,000" (the same in every locale, so output and tests do not vary). */
export function formatCount(n: number): string {
  return n.toLocaleString('en-US', { maximumFractionDigits: 0 });
}

/** 12345678 -> "12.3 MB" (decimal units, as download tools and file managers show them). */
export function formatBytes(n: number): string {
  if (n < 1000) return `${n} B`;
  const units = ['kB', 'MB', 'GB', 'TB'];
  let value = n / 1000;
  let unit = 0;
  while (value >= 999.95 && unit < units.length - 1) {
    value /= 1000;
    unit++;
  }
  return `${value.toFixed(1)} ${units[unit]}`;
}
