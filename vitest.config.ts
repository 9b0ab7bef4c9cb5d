import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    // Kills brokers and services a failed test left running (test/helpers/leftovers.ts).
    globalSetup: ['test/helpers/global-setup.ts'],
    hookTimeout: 30_000,
    // Integration tests open real LMDB/DuckDB files and sockets; two cores only.
    pool: 'forks',
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
  },
});
