#!/usr/bin/env node
// `sluice-extractor run --data DIR`: the package's command line on its own (Sluice runs the same
// code as `sluice extractor ...`). It runs the built package: `npm run build` at the repository's
// root (or `npm run build -w @sluice/generic-extractor`) writes dist/.
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const entry = new URL('../dist/index.js', import.meta.url);
if (!existsSync(entry)) {
  process.stderr.write('sluice-extractor: packages/generic-extractor/dist/ is not built; run `npm run build` at the repository root.\n');
  process.exit(2);
}
const cli = await import(entry.href);
process.exitCode = await cli.runExtractorCli(process.argv.slice(2));
