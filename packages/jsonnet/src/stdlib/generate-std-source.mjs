// Regenerates std-source.ts (the embedded copy of std.jsonnet): node packages/jsonnet/src/stdlib/generate-std-source.mjs
import { readFileSync, writeFileSync } from 'node:fs';
import { URL } from 'node:url';

const dir = new URL('.', import.meta.url);
const src = readFileSync(new URL('std.jsonnet', dir), 'utf8');
const header = [
  '// GENERATED from ./std.jsonnet (google/jsonnet v0.20.0 stdlib, Apache-2.0, Copyright 2015 Google Inc.;',
  '// see ./LICENSE). Embedded so that builds need no data files.',
  '// Regenerate with: node packages/jsonnet/src/stdlib/generate-std-source.mjs',
  '// packages/jsonnet/test/eval.test.ts checks that this copy equals std.jsonnet.',
];
writeFileSync(new URL('std-source.ts', dir), `${header.join('\n')}\nexport const STD_JSONNET: string = ${JSON.stringify(src)};\n`);
