import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';
import { BuiltClientsLastSequencer } from './test/helpers/sequencer.js';

/**
 * The workspace packages (packages/*) resolve to their TypeScript sources, as tsconfig.json's
 * `paths` make them for tsc and tsx: `@sluice/<name>` -> packages/<name>/src/index.ts. No build
 * needed to test.
 */
const ROOT = fileURLToPath(new URL('.', import.meta.url));
const packages = readdirSync(join(ROOT, 'packages'), { withFileTypes: true }).filter((d) => d.isDirectory());
const alias = Object.fromEntries(
  packages.map((d) => {
    const dir = join(ROOT, 'packages', d.name);
    const { name } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8')) as { name: string };
    return [name, join(dir, 'src/index.ts')];
  }),
);
// The tests' child processes and worker threads that run TypeScript through tsx (the render
// sandbox, a component's process, started in the job's folder) find the same `paths` here
// whatever their working directory.
process.env.TSX_TSCONFIG_PATH ??= join(ROOT, 'tsconfig.json');

export default defineConfig({
  resolve: { alias },
  test: {
    include: ['test/**/*.test.ts', 'packages/*/test/**/*.test.ts'],
    testTimeout: 30_000,
    // Kills brokers and services a failed test left running (test/helpers/leftovers.ts).
    globalSetup: ['test/helpers/global-setup.ts'],
    // The files that drive clients built by a script (the OpenTelemetry Collector and telemetrygen,
    // a Kafka Connect worker) run last: their build (started by the global setup) overlaps the
    // other files.
    sequence: { sequencer: BuiltClientsLastSequencer },
    hookTimeout: 30_000,
    // Integration tests open real LMDB/DuckDB files and sockets; two cores only.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
