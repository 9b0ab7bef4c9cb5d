#!/usr/bin/env node
// `sluice-jsonnet ...`: the package's command line on its own (Sluice runs the same code as
// `sluice jsonnet ...`). It runs the built package: `npm run build` at the repository's root
// (or `npm run build -w @sluice/jsonnet`) writes dist/.
import process from 'node:process';

let cli;
try {
  cli = await import('../dist/index.js');
} catch (err) {
  if (err?.code !== 'ERR_MODULE_NOT_FOUND') throw err;
  process.stderr.write('sluice-jsonnet: packages/jsonnet/dist/ is not built; run `npm run build` at the repository root.\n');
  process.exit(2);
}
process.exitCode = await cli.runJsonnetCli(process.argv.slice(2), process);
