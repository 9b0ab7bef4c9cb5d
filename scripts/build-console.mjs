// Builds the web console (src/console) into dist/console: one bundle (esbuild, Preact), its CSS
// and the page. No CDN, nothing fetched at run time: `sluice serve` serves these files at /console.
import { build } from 'esbuild';
import { copyFileSync, mkdirSync, rmSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

const root = join(dirname(fileURLToPath(import.meta.url)), '..');
// The folder: dist/console, or the one given (development builds served with SLUICE_CONSOLE_DIR).
const out = process.argv[2] ? resolve(process.argv[2]) : join(root, 'dist', 'console');
rmSync(out, { recursive: true, force: true });
mkdirSync(out, { recursive: true });
await build({
  entryPoints: [join(root, 'src/console/main.tsx')],
  bundle: true,
  outfile: join(out, 'app.js'),
  format: 'esm',
  target: ['chrome110', 'firefox110', 'safari16'],
  minify: true,
  sourcemap: true,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  logLevel: 'warning',
  legalComments: 'linked',
});
// The CSS the modules import (app.css, each page's own, uPlot's) is bundled into app.css.
copyFileSync(join(root, 'src/console/index.html'), join(out, 'index.html'));
