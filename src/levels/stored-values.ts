/**
 * How the levels' entries hold times and fields: ISO strings (their order is their time
 * order), and only the fields that are present (the store keeps no `undefined`).
 */

export function iso(d: Date): string {
  return d.toISOString();
}

/** ISO time of `at`, moved 1 ms past `previous` when not later (ids of a sink's files and a file's slices stay unique and ordered). */
export function after(at: Date, previous: string | undefined): string {
  const t = iso(at);
  if (previous === undefined || t > previous) return t;
  return iso(new Date(Date.parse(previous) + 1));
}

export function minIso(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return b < a ? b : a;
}

export function maxIso(a: string | undefined, b: string | undefined): string | undefined {
  if (a === undefined) return b;
  if (b === undefined) return a;
  return b > a ? b : a;
}

/** Drops undefined properties (the store keeps only present fields). */
export function compact<T extends object>(value: T): T {
  for (const k of Object.keys(value) as (keyof T)[]) if (value[k] === undefined) delete value[k];
  return value;
}
