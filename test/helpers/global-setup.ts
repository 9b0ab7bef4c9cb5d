/**
 * vitest globalSetup: the run's folder of started processes, and its cleanup (leftovers.ts); and,
 * when the run has a file that drives real clients built by a script of the project (the
 * OpenTelemetry Collector and telemetrygen, otel-tools.ts; a Kafka Connect worker and its HTTP
 * sink connector, kafka-connect.ts), their build started in the background, so that it overlaps
 * the other files.
 */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { TestProject } from 'vitest/node';
import { KAFKA_CONNECT_TEST_FILES, prebuildKafkaConnect } from './kafka-connect.js';
import { killLeftovers, LEFTOVERS_ENV } from './leftovers.js';
import { OTEL_TOOLS_TEST_FILES, prebuildOtelTools } from './otel-tools.js';

export function setup(project: TestProject): () => void {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-test-processes-'));
  process.env[LEFTOVERS_ENV] = dir;
  const files = project.vitest.state.getPaths();
  const builds: Array<[RegExp, () => () => void]> = [[OTEL_TOOLS_TEST_FILES, prebuildOtelTools], [KAFKA_CONNECT_TEST_FILES, prebuildKafkaConnect]];
  const stopBuilds = builds.filter(([needed]) => files.some((f) => needed.test(f))).map(([, prebuild]) => prebuild());
  return () => {
    for (const stop of stopBuilds) stop();
    const killed = killLeftovers(dir);
    if (killed > 0) process.stderr.write(`[tests] killed ${killed} process(es) a test left running\n`);
  };
}
