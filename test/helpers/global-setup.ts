/**
 * vitest globalSetup: the run's folder of started processes, and its cleanup (leftovers.ts); and,
 * when the run has a file that drives the OpenTelemetry Collector or telemetrygen, their build
 * started in the background (otel-tools.ts), so that it overlaps the other files.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { killLeftovers, LEFTOVERS_ENV } from './leftovers.js';
import { OTEL_TOOLS_TEST_FILES, prebuildOtelTools } from './otel-tools.js';

export function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-test-processes-'));
  process.env[LEFTOVERS_ENV] = dir;
  const files = project.vitest.state.getPaths();
  const stopBuild = files.some((f) => OTEL_TOOLS_TEST_FILES.test(f)) ? prebuildOtelTools() : () => undefined;
  return () => {
    stopBuild();
    const killed = killLeftovers(dir);
    if (killed > 0) process.stderr.write(`[tests] killed ${killed} process(es) a test left running\n`);
  };
}
