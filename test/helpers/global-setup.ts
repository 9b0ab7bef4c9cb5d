/** vitest globalSetup: the run's folder of started processes, and its cleanup (leftovers.ts). */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { killLeftovers, LEFTOVERS_ENV } from './leftovers.js';

export function setup(): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-test-processes-'));
  process.env[LEFTOVERS_ENV] = dir;
  return () => {
    const killed = killLeftovers(dir);
    if (killed > 0) process.stderr.write(`[tests] killed ${killed} process(es) a test left running\n`);
  };
}
