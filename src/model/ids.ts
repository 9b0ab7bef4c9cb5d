/**
 * Id normalisation of the reference (NormalizeName): split CamelCase and letter/digit
 * boundaries (as iancoleman/strcase ToDelimited does), replace every run of other characters
 * with "-", trim "-", lowercase. "My Source" -> "my-source", "!!!!~~~~weird|||id##" -> "weird-id".
 */
export function normalizeId(input: string): string {
  const s = input.trim();
  let out = '';
  const isCap = (c: string) => c >= 'A' && c <= 'Z';
  const isLow = (c: string) => c >= 'a' && c <= 'z';
  const isNum = (c: string) => c >= '0' && c <= '9';
  for (let i = 0; i < s.length; i++) {
    const v = s[i];
    const next = s[i + 1];
    if (next !== undefined) {
      const boundary =
        (isCap(v) && (isLow(next) || isNum(next))) ||
        (isLow(v) && (isCap(next) || isNum(next))) ||
        (isNum(v) && (isCap(next) || isLow(next)));
      if (boundary) {
        // Acronyms stay whole words: "JSONData" -> "json-data".
        if (isCap(v) && isLow(next) && i > 0 && isCap(s[i - 1])) out += '-';
        out += v;
        if (isLow(v) || isNum(v) || isNum(next)) out += '-';
        continue;
      }
    }
    out += v;
  }
  return out.replace(/[^a-zA-Z0-9]+/g, '-').replace(/^-+|-+$/g, '').toLowerCase();
}
