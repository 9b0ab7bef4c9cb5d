// Copies the files the build's JavaScript reads at run time beside it in dist/: the vendored OTLP
// .proto files (tsc copies only what it compiles; the Jsonnet package copies its own stdlib).
import { cpSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
export const ASSETS = ['sources/otlp/proto'];
for (const asset of ASSETS) cpSync(join(root, 'src', asset), join(root, 'dist', asset), { recursive: true });
