/**
 * The layer rule as the lint checks it (.dependency-cruiser.cjs): a small tree with one broken
 * import per rule, cruised with the project's own configuration, must fail on exactly those
 * imports; the allowed ones beside them must pass.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { PROJECT_ROOT } from '../../helpers/shared-dir.js';

interface Violation {
  rule: { name: string };
  from: string;
  to: string;
}

const FILES: Record<string, string> = {
  'src/domain-errors.ts': 'export class DomainError extends Error {}',
  'src/config.ts': "import { LIMIT } from './model/limits.js';\nexport const DEFAULTS = { LIMIT };",
  'src/model/limits.ts': 'export const LIMIT = 1;',
  // A port that reaches past the model.
  'src/ports/store.ts': "import { rows } from '../pipeline/rows.js';\nexport interface Store { rows: typeof rows }",
  'src/pipeline/rows.ts': "import { LIMIT } from '../model/limits.js';\nexport const rows = [LIMIT];",
  // Two pipeline files in a circle, and one that touches the disk.
  'src/pipeline/a.ts': "import { b } from './b.js';\nexport const a = () => b;",
  'src/pipeline/b.ts': "import { a } from './a.js';\nexport const b = () => a;",
  'src/pipeline/disk.ts': "import { readFileSync } from 'node:fs';\nexport const read = readFileSync;",
  // An adapter that reads the flags.
  'src/adapters/store/lmdb.ts': "import type { Store } from '../../ports/store.js';\nimport { DEFAULTS } from '../../config.js';\nexport const lmdb = (s: Store) => [s, DEFAULTS];",
  // Two service folders importing each other: levels/ → storage/ runs up.
  'src/levels/import.ts': "import { tables } from '../storage/tables.js';\nexport const importFile = tables;",
  'src/storage/tables.ts': "import type { Store } from '../ports/store.js';\nexport const tables = (s: Store) => s;",
  'src/storage/statistics.ts': "import { importFile } from '../levels/import.js';\nexport const stats = importFile;",
  // The runtime picking an adapter, and the composition root doing so (allowed).
  'src/actors/writer.ts': "import { lmdb } from '../adapters/store/lmdb.js';\nexport const writer = lmdb;",
  'src/wiring/open-store.ts': "import { lmdb } from '../adapters/store/lmdb.js';\nexport const open = lmdb;",
  // A source type's decoding reaching into its own transport.
  'src/sources/otlp/decode.ts': "import { route } from './routes.js';\nexport const decode = route;",
  'src/sources/otlp/routes.ts': "import { rows } from '../../pipeline/rows.js';\nexport const route = rows;",
  // A folder nobody placed.
  'src/newthing/x.ts': "import { LIMIT } from '../model/limits.js';\nexport const x = LIMIT;",
  // The client library reaching for a Node module (browsers have none), and its own files (allowed).
  'packages/client/src/zip.ts': "import { gzipSync } from 'node:zlib';\nexport const zip = gzipSync;",
  'packages/client/src/index.ts': "import { records } from './records.js';\nexport const all = records;",
  'packages/client/src/records.ts': 'export const records = [];',
};

let dir: string;
let violations: Violation[];

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'sluice-layers-'));
  for (const [path, text] of Object.entries(FILES)) {
    mkdirSync(dirname(join(dir, path)), { recursive: true });
    writeFileSync(join(dir, path), text + '\n');
  }
  writeFileSync(join(dir, 'tsconfig.json'), JSON.stringify({ compilerOptions: { module: 'NodeNext', moduleResolution: 'NodeNext', strict: true } }));
  const bin = join(PROJECT_ROOT, 'node_modules/.bin/depcruise');
  let out: string;
  try {
    out = execFileSync(bin, ['src', 'packages', '--config', join(PROJECT_ROOT, '.dependency-cruiser.cjs'), '--output-type', 'json'], { cwd: dir, encoding: 'utf8' });
  } catch (err) {
    // depcruise exits non-zero when it finds errors; its JSON is still on stdout.
    out = (err as { stdout: string }).stdout;
  }
  violations = (JSON.parse(out) as { summary: { violations: Violation[] } }).summary.violations;
}, 60_000);

afterAll(() => rmSync(dir, { recursive: true, force: true }));

function rulesBroken(from: string, to?: string): string[] {
  return violations.filter((v) => v.from === from && (to === undefined || v.to === to)).map((v) => v.rule.name).sort();
}

describe('the layer rule (.dependency-cruiser.cjs)', () => {
  it('refuses a port that imports more than the model', () => {
    expect(rulesBroken('src/ports/store.ts')).toEqual(['ports-are-interfaces', 'ports-imports-only-below']);
  });

  it('refuses an adapter that reads the flags', () => {
    expect(rulesBroken('src/adapters/store/lmdb.ts', 'src/config.ts')).toEqual(['adapters-import-only-the-ground']);
  });

  it('refuses a folder cycle: the arrow that runs up fails', () => {
    expect(rulesBroken('src/levels/import.ts')).toEqual(['levels-imports-only-below']);
    expect(rulesBroken('src/storage/statistics.ts')).toEqual([]);
  });

  it('refuses a cycle between files of one folder', () => {
    expect(rulesBroken('src/pipeline/a.ts')).toContain('no-circular');
  });

  it('lets only the composition root pick an adapter', () => {
    expect(rulesBroken('src/actors/writer.ts')).toEqual(['only-the-composition-root-picks-adapters']);
    expect(rulesBroken('src/wiring/open-store.ts')).toEqual([]);
  });

  it('keeps the pure folders off the disk', () => {
    expect(rulesBroken('src/pipeline/disk.ts')).toEqual(['pure-is-pure']);
  });

  it("keeps a source type's decoding apart from its transport", () => {
    expect(rulesBroken('src/sources/otlp/decode.ts')).toEqual(['source-decoding-imports-only-the-ground']);
    expect(rulesBroken('src/sources/otlp/routes.ts')).toEqual([]);
  });

  it('asks a new folder for its floor', () => {
    expect(rulesBroken('src/newthing/x.ts')).toEqual(['every-module-has-a-floor']);
  });

  it('keeps the client library on the platform: no Node module, no package', () => {
    expect(rulesBroken('packages/client/src/zip.ts')).toEqual(['client-uses-only-the-platform']);
    expect(rulesBroken('packages/client/src/index.ts')).toEqual([]);
  });

  it('passes what the rule allows', () => {
    expect(rulesBroken('src/config.ts')).toEqual([]);
    expect(rulesBroken('src/storage/tables.ts')).toEqual([]);
  });
});
