/**
 * Column names for proposed columns, by the Storage API's rule (1 to 64 letters, digits or "_",
 * unique without regard to letter case, `_timestamp` reserved: storage/tables.ts): a field's path
 * segments joined with "_", accents dropped, every run of other characters one "_", no "_" at
 * either end; a name taken gets `_2`, `_3`, ...
 */
const MAX_LENGTH = 64;
const RESERVED = ['_timestamp'];

/** The name a path's segments ask for (before uniqueness). */
export function columnNameOf(segments: readonly string[]): string {
  const name = segments.join('_')
    .normalize('NFKD')
    .replace(/[\u0300-\u036f]/g, '')
    .replace(/[^A-Za-z0-9_]+/g, '_')
    .replace(/^_+|_+$/g, '')
    .slice(0, MAX_LENGTH)
    .replace(/_+$/, '');
  return name === '' ? 'field' : name;
}

/** Hands out names unique without regard to letter case. */
export class ColumnNames {
  private readonly taken = new Set<string>(RESERVED);

  /** `wanted` if free, else `wanted_<n>` (shortened to fit 64) with the lowest free n from 2. */
  claim(wanted: string): string {
    let name = wanted;
    for (let n = 2; this.taken.has(name.toLowerCase()); n++) {
      const suffix = `_${n}`;
      name = wanted.slice(0, MAX_LENGTH - suffix.length) + suffix;
    }
    this.taken.add(name.toLowerCase());
    return name;
  }
}
