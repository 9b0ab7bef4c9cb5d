#!/usr/bin/env node
// `npx sluice ...`. In a source checkout (src/ beside bin/), dist/ is built first when it is
// missing or older than the sources (scripts/build-if-stale.mjs; the build's output on stderr),
// so the command always runs the code of the tree. An installed package has no src/: it runs dist/.
import { existsSync } from 'node:fs';
import process from 'node:process';
import { URL } from 'node:url';

const buildIfStale = new URL('../scripts/build-if-stale.mjs', import.meta.url);
if (existsSync(new URL('../src/main.ts', import.meta.url)) && existsSync(buildIfStale)) {
  const { ensureBuilt } = await import(buildIfStale.href);
  if (!ensureBuilt()) process.exit(1);
}
await import('../dist/main.js');
