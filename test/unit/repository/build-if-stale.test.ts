/**
 * scripts/build-if-stale.mjs, which lets `npm start` (and `npx sluice` in a checkout) skip the
 * build when nothing changed: the decision on fingerprints, the scan of the inputs, and the
 * whole round on a small tree of its own whose "build" only counts its runs (the script run by
 * plain node, as `npm start` runs it).
 */
import { spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { buildNeeded, INPUTS, OUTPUTS, scanInputs, STAMP } from '../../../scripts/build-if-stale.mjs';

const dirs: string[] = [];
afterAll(() => dirs.forEach((d) => rmSync(d, { recursive: true, force: true })));

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-build-if-stale-'));
  dirs.push(dir);
  return dir;
}

function write(root: string, path: string, text: string): void {
  mkdirSync(join(root, path, '..'), { recursive: true });
  writeFileSync(join(root, path), text);
}

describe('buildNeeded', () => {
  const built = { 'src/a.ts': '10:1000', 'src/b/c.ts': '20:1000', 'package.json': '5:900' };

  it('builds when no complete build is recorded, or an output is missing', () => {
    expect(buildNeeded({ stamp: undefined, current: built })).toEqual({ needed: true, reason: `no complete build recorded (${STAMP})` });
    expect(buildNeeded({ stamp: built, current: built, missingOutputs: ['dist/main.js'] })).toEqual({ needed: true, reason: 'dist/main.js is missing' });
  });

  it('does not build when every input is as the last build read it', () => {
    expect(buildNeeded({ stamp: built, current: { ...built } })).toEqual({ needed: false, reason: 'dist/ is up to date' });
  });

  it('builds when an input changed, whichever way its time moved, and names it', () => {
    expect(buildNeeded({ stamp: built, current: { ...built, 'src/a.ts': '10:2000' } })).toEqual({ needed: true, reason: 'src/a.ts changed' });
    // An older time (a checkout or an archive keeps times) is a change too, as is another size.
    expect(buildNeeded({ stamp: built, current: { ...built, 'src/a.ts': '10:500' } }).needed).toBe(true);
    expect(buildNeeded({ stamp: built, current: { ...built, 'src/a.ts': '11:1000' } }).needed).toBe(true);
  });

  it('builds when an input is new or was removed', () => {
    expect(buildNeeded({ stamp: built, current: { ...built, 'src/new.ts': '1:1' } })).toEqual({ needed: true, reason: 'src/new.ts is new' });
    const { 'src/b/c.ts': _removed, ...rest } = built;
    expect(buildNeeded({ stamp: built, current: rest })).toEqual({ needed: true, reason: 'src/b/c.ts was removed' });
  });

  it('names three changes and counts the others', () => {
    const current = { 'src/a.ts': '1:1', 'src/b/c.ts': '1:1', 'package.json': '1:1', 'src/d.ts': '1:1', 'src/e.ts': '1:1' };
    expect(buildNeeded({ stamp: built, current }).reason).toBe('src/a.ts changed, src/b/c.ts changed, package.json changed and 2 more');
  });
});

describe('scanInputs', () => {
  it('fingerprints every file under the inputs by path, size and time; missing inputs are left out', () => {
    const root = tempDir();
    write(root, 'src/a.ts', 'abc');
    write(root, 'src/deep/er/b.ts', 'hello');
    write(root, 'tsconfig.json', '{}');
    write(root, 'dist/main.js', 'not an input');
    utimesSync(join(root, 'src/a.ts'), 1_000, 1_000);
    const scan = scanInputs(root, ['src', 'tsconfig.json', 'scripts/missing.mjs']);
    expect(Object.keys(scan).sort()).toEqual(['src/a.ts', 'src/deep/er/b.ts', 'tsconfig.json']);
    expect(scan['src/a.ts']).toBe('3:1000000');
    expect(scan['src/deep/er/b.ts']).toMatch(/^5:\d+(\.\d+)?$/);
  });

  it("the project's inputs: the sources, the packages' sources, the console's build and asset copy scripts, the tsconfigs, package.json and its lock", () => {
    const packageInputs = (name: string) => ['src', 'bin', 'package.json', 'tsconfig.build.json'].map((input) => `packages/${name}/${input}`);
    expect(INPUTS).toEqual([
      'src',
      ...packageInputs('client'),
      ...packageInputs('generic-extractor'),
      ...packageInputs('jsonnet'),
      'scripts/build-console.mjs',
      'scripts/copy-assets.mjs',
      'tsconfig.json',
      'tsconfig.build.json',
      'package.json',
      'package-lock.json',
    ]);
    const scan = scanInputs(resolve(__dirname, '../../..'));
    expect(scan).toHaveProperty(['src/main.ts']);
    expect(scan).toHaveProperty(['packages/jsonnet/src/index.ts']);
    expect(scan).toHaveProperty(['packages/generic-extractor/src/pagination/pagination.ts']);
    expect(scan).toHaveProperty(['src/console/main.tsx']);
    expect(scan).toHaveProperty(['scripts/build-console.mjs']);
    expect(scan).toHaveProperty(['scripts/copy-assets.mjs']);
    // The vendored .proto files are inputs too: the build copies them.
    expect(scan).toHaveProperty(['src/sources/otlp/proto/opentelemetry/proto/logs/v1/logs.proto']);
    expect(Object.keys(scan).some((p) => /^(packages\/[^/]+\/)?(dist|node_modules)\//.test(p))).toBe(false);
  });
});

describe('a round of starts on a tree of its own', () => {
  /**
   * A tree with the script and a package.json whose build, between --begin and --done, writes
   * the outputs and counts its runs in builds.txt; SLOW_EDIT makes it edit a source mid-build,
   * FAIL makes it fail.
   */
  function project(): { root: string; start: (env?: Record<string, string>) => { status: number | null; stderr: string }; builds: () => number } {
    const root = tempDir();
    mkdirSync(join(root, 'scripts'));
    copyFileSync(resolve(__dirname, '../../../scripts/build-if-stale.mjs'), join(root, 'scripts/build-if-stale.mjs'));
    const outputs = JSON.stringify(OUTPUTS);
    write(
      root,
      'fake-build.mjs',
      `import { appendFileSync, mkdirSync, writeFileSync } from 'node:fs';
       import { dirname } from 'node:path';
       appendFileSync('builds.txt', 'x');
       if (process.env.SLOW_EDIT) writeFileSync('src/main.ts', 'edited while building');
       if (process.env.FAIL) process.exit(2);
       for (const o of ${outputs}) { mkdirSync(dirname(o), { recursive: true }); writeFileSync(o, ''); }\n`,
    );
    write(root, 'package.json', JSON.stringify({ name: 'p', private: true, type: 'module', scripts: { build: 'node scripts/build-if-stale.mjs --begin && node fake-build.mjs && node scripts/build-if-stale.mjs --done' } }));
    write(root, 'src/main.ts', 'one');
    write(root, 'src/console/main.tsx', 'two');
    write(root, 'tsconfig.json', '{}');
    const start = (env: Record<string, string> = {}) => {
      const r = spawnSync(process.execPath, ['scripts/build-if-stale.mjs'], { cwd: root, env: { ...process.env, ...env }, encoding: 'utf8' });
      return { status: r.status, stderr: r.stderr };
    };
    const builds = () => (existsSync(join(root, 'builds.txt')) ? readFileSync(join(root, 'builds.txt'), 'utf8').length : 0);
    return { root, start, builds };
  }

  const check = (root: string) => spawnSync(process.execPath, ['scripts/build-if-stale.mjs', '--check'], { cwd: root, encoding: 'utf8' });

  it('builds on a fresh tree, not again when nothing changed, again after an edit, a new or a deleted file', () => {
    const { root, start, builds } = project();
    const first = start();
    expect(first.status).toBe(0);
    expect(first.stderr).toContain('sluice: building dist/ (no complete build recorded');
    expect(builds()).toBe(1);
    expect(existsSync(join(root, STAMP))).toBe(true);

    expect(start()).toEqual({ status: 0, stderr: '' });
    expect(start()).toEqual({ status: 0, stderr: '' });
    expect(builds()).toBe(1);
    expect(check(root).stdout).toBe('up to date: dist/ is up to date\n');

    writeFileSync(join(root, 'src/main.ts'), 'one, edited');
    expect(check(root)).toMatchObject({ status: 1, stdout: 'build needed: src/main.ts changed\n' });
    expect(start().stderr).toContain('(src/main.ts changed)');
    expect(builds()).toBe(2);

    write(root, 'src/extra.ts', '');
    start();
    expect(builds()).toBe(3);
    rmSync(join(root, 'src/extra.ts'));
    expect(check(root).stdout).toBe('build needed: src/extra.ts was removed\n');
    start();
    expect(builds()).toBe(4);

    rmSync(join(root, 'dist/main.js'));
    expect(start().stderr).toContain('(dist/main.js is missing)');
    expect(builds()).toBe(5);
    expect(start().stderr).toBe('');
    expect(builds()).toBe(5);
  });

  it('a source saved while the build ran makes the next start build again', () => {
    const { root, start, builds } = project();
    start({ SLOW_EDIT: '1' });
    expect(builds()).toBe(1);
    expect(check(root).stdout).toBe('build needed: src/main.ts changed\n');
    start();
    expect(builds()).toBe(2);
    expect(check(root).status).toBe(0);
  });

  it('a failed build fails the start and records nothing, so the next start builds again', () => {
    const { root, start, builds } = project();
    start();
    writeFileSync(join(root, 'src/main.ts'), 'broken');
    const failed = start({ FAIL: '1' });
    expect(failed.status).toBe(1);
    expect(failed.stderr).toContain('sluice: the build failed');
    expect(existsSync(join(root, STAMP))).toBe(false);
    expect(check(root).status).toBe(1);
    expect(start().status).toBe(0);
    expect(builds()).toBe(3);
    expect(existsSync(join(root, 'dist/.build-lock'))).toBe(false);
  });

  it("package.json's start builds through it, and its build records the stamp", () => {
    const pkg = JSON.parse(readFileSync(resolve(__dirname, '../../../package.json'), 'utf8')) as { scripts: Record<string, string>; files: string[] };
    expect(pkg.scripts.prestart).toBe('node scripts/build-if-stale.mjs');
    expect(pkg.scripts.build).toMatch(/^node scripts\/build-if-stale\.mjs --begin && .* && node scripts\/build-if-stale\.mjs --done$/);
    expect(pkg.files).toContain('!dist/.build-*');
  });
});
