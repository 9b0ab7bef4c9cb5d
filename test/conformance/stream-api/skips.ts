/**
 * Scenarios of the Stream API suite that cannot run here, by name, each with its reason. Keep
 * this list explicit (no detection): a scenario is listed only for a reason outside Sluice (an
 * infrastructure the machine lacks), and leaves it as soon as it can run. Empty: every scenario
 * runs (those with an `initial-etcd-kvs.txt` too, on the state etcd-fixtures.ts loads).
 */

export const SKIPPED: ReadonlyMap<string, string> = new Map<string, string>([]);

/** Warnings for listed names that no longer exist among the scenarios. */
export function staleSkipWarnings(allScenarios: readonly string[]): string[] {
  const known = new Set(allScenarios);
  return [...SKIPPED.keys()]
    .filter((name) => !known.has(name))
    .map((name) => `warning: skips.ts lists "${name}", which is not a scenario of this suite any more`);
}
