/**
 * Processes the tests start (Kafka brokers, `sluice serve` children) are noted in a folder of
 * the test run, and whatever is still noted when the run ends is killed (global-setup.ts). A
 * failed hook or a crashed worker would otherwise leave a broker running on a shared machine:
 * vitest ends its worker processes without their 'exit' handlers.
 */
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/** Set by global-setup.ts for the run; unset (nothing noted) when a test file runs without it. */
export const LEFTOVERS_ENV = 'SLUICE_TEST_LEFTOVERS';

export function noteProcess(pid: number | undefined): void {
  const dir = process.env[LEFTOVERS_ENV];
  if (!dir || pid === undefined) return;
  mkdirSync(dir, { recursive: true });
  writeFileSync(join(dir, String(pid)), '');
}

export function forgetProcess(pid: number | undefined): void {
  const dir = process.env[LEFTOVERS_ENV];
  if (!dir || pid === undefined) return;
  rmSync(join(dir, String(pid)), { force: true });
}

/** Kills every process still noted in `dir` and removes the folder; returns how many were running. */
export function killLeftovers(dir: string): number {
  let killed = 0;
  let names: string[] = [];
  try {
    names = readdirSync(dir);
  } catch {
    return 0;
  }
  for (const name of names) {
    try {
      process.kill(Number(name), 'SIGKILL');
      killed++;
    } catch {
      // already gone
    }
  }
  rmSync(dir, { recursive: true, force: true });
  return killed;
}
