/**
 * Cases of the Jsonnet test suite the runner does not run, by name, each with its reason.
 * Keep this list explicit (no detection): a case leaves it only when it can run.
 * Names are those the runner prints (`stdlib.jsonnet:<line>` for the split stdlib checks).
 */

// Empty: every case of the suite runs (std.trace output is captured, see run.ts).
export const SKIPPED: ReadonlyMap<string, string> = new Map<string, string>([]);

/** Warnings for listed names that no longer exist among the cases. */
export function staleSkipWarnings(allCases: readonly string[]): string[] {
  const known = new Set(allCases);
  return [...SKIPPED.keys()]
    .filter((name) => !known.has(name))
    .map((name) => `warning: skips.ts lists "${name}", which is not a case of this suite any more`);
}
