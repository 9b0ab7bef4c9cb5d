#!/usr/bin/env node
// Builds dist/ only when the build's inputs changed since the last complete build, so that
// `npm start` (its prestart) and `npx sluice` in a source checkout start at once when nothing
// changed, and still build on a fresh clone (dist/ is not committed).
//
//   node scripts/build-if-stale.mjs           runs `npm run build` when needed (its output on stderr)
//   node scripts/build-if-stale.mjs --check   exit 0 when dist/ is up to date, 1 (and why) when not
//   node scripts/build-if-stale.mjs --begin   first step of `npm run build`: notes the inputs as it reads them
//   node scripts/build-if-stale.mjs --done    last step of `npm run build`: that build is complete
//
// The inputs (INPUTS: src/, the workspace packages' sources and build settings, the console's
// build and asset copy scripts, the tsconfigs, package.json and the lock file) are fingerprinted
// by path, size and modification time. `--begin` notes the fingerprint
// before the compiler reads anything, `--done` keeps it as dist/.build-stamp.json; a build that
// failed leaves no stamp, and a file saved while a build ran differs from the noted fingerprint,
// so either way the next start builds again. A changed, new or deleted input makes dist/ stale,
// whatever its time (a checkout or an extracted archive may carry older times).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative, sep } from 'node:path';
import process from 'node:process';
import { fileURLToPath } from 'node:url';

export const ROOT = join(dirname(fileURLToPath(import.meta.url)), '..');
/** What the build reads of each workspace package (packages/<name>/): not its dist/, which it writes. */
export const PACKAGE_INPUTS = ['src', 'bin', 'package.json', 'tsconfig.build.json'];

/** The workspace packages' folders (packages/<name>), sorted; none when there is no packages/. */
export function workspacePackages(root = ROOT) {
  try {
    return readdirSync(join(root, 'packages'), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => `packages/${entry.name}`)
      .sort();
  } catch {
    return [];
  }
}

/** What the build reads (files, or folders taken whole), relative to the root. */
export const INPUTS = [
  'src',
  ...workspacePackages().flatMap((dir) => PACKAGE_INPUTS.map((input) => `${dir}/${input}`)),
  'scripts/build-console.mjs',
  'scripts/copy-assets.mjs',
  'tsconfig.json',
  'tsconfig.build.json',
  'package.json',
  'package-lock.json',
];
/** What a complete build leaves; one missing means building again. */
export const OUTPUTS = [
  ...workspacePackages().map((dir) => `${dir}/dist/index.js`),
  'packages/jsonnet/dist/stdlib',
  'dist/main.js',
  'dist/sources/otlp/proto',
  'dist/console/index.html',
];
export const STAMP = 'dist/.build-stamp.json';
const PENDING = 'dist/.build-pending.json';
const LOCK = 'dist/.build-lock';

/**
 * The inputs' fingerprint: relative path (with /) -> "size:mtimeMs" of every file under them.
 * Inputs that do not exist are left out.
 */
export function scanInputs(root = ROOT, inputs = INPUTS) {
  const files = {};
  const visit = (abs) => {
    let st;
    try {
      st = statSync(abs);
    } catch {
      return; // gone meanwhile, or never there
    }
    if (st.isDirectory()) {
      for (const name of readdirSync(abs).sort()) visit(join(abs, name));
    } else if (st.isFile()) {
      files[relative(root, abs).split(sep).join('/')] = `${st.size}:${st.mtimeMs}`;
    }
  };
  for (const input of inputs) visit(join(root, input));
  return files;
}

/**
 * Whether a build is needed, and why: `stamp` is the fingerprint of the inputs the last
 * complete build read (undefined: none recorded), `current` the inputs now, `missingOutputs`
 * the outputs that are not there.
 */
export function buildNeeded({ stamp, current, missingOutputs = [] }) {
  if (stamp === undefined) return { needed: true, reason: `no complete build recorded (${STAMP})` };
  if (missingOutputs.length > 0) return { needed: true, reason: `${missingOutputs[0]} is missing` };
  const changes = [];
  for (const [path, print] of Object.entries(current)) {
    if (!(path in stamp)) changes.push(`${path} is new`);
    else if (stamp[path] !== print) changes.push(`${path} changed`);
  }
  for (const path of Object.keys(stamp)) if (!(path in current)) changes.push(`${path} was removed`);
  if (changes.length === 0) return { needed: false, reason: 'dist/ is up to date' };
  const more = changes.length > 3 ? ` and ${changes.length - 3} more` : '';
  return { needed: true, reason: `${changes.slice(0, 3).join(', ')}${more}` };
}

function readStamp(root) {
  try {
    const stamp = JSON.parse(readFileSync(join(root, STAMP), 'utf8'));
    return stamp && typeof stamp.inputs === 'object' ? stamp.inputs : undefined;
  } catch {
    return undefined;
  }
}

/** The decision for the tree at `root`. */
export function checkBuild(root = ROOT) {
  return buildNeeded({
    stamp: readStamp(root),
    current: scanInputs(root),
    missingOutputs: OUTPUTS.filter((o) => !existsSync(join(root, o))),
  });
}

function sleep(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** Runs `fn` holding dist/.build-lock, so that two starts at once do not build together. */
function withLock(root, fn) {
  const lock = join(root, LOCK);
  mkdirSync(dirname(lock), { recursive: true });
  const deadline = Date.now() + 10 * 60_000;
  for (;;) {
    try {
      mkdirSync(lock);
      break;
    } catch (err) {
      if (err.code !== 'EEXIST') throw err;
      let age = 0;
      try {
        age = Date.now() - statSync(lock).mtimeMs;
      } catch {
        continue; // released meanwhile
      }
      // A build takes seconds: a lock this old was left by a process that died.
      if (age > 5 * 60_000) rmSync(lock, { recursive: true, force: true });
      else if (Date.now() > deadline) throw new Error(`${LOCK} is held by another build for too long`);
      else sleep(200);
    }
  }
  try {
    return fn();
  } finally {
    rmSync(lock, { recursive: true, force: true });
  }
}

/**
 * Builds when needed; true when dist/ is up to date afterwards. The build's output goes to
 * stderr, so that what a command prints on stdout stays its own.
 */
export function ensureBuilt(root = ROOT, log = (line) => process.stderr.write(`${line}\n`)) {
  if (!checkBuild(root).needed) return true;
  return withLock(root, () => {
    const decision = checkBuild(root); // another process may have built while we waited
    if (!decision.needed) return true;
    log(`sluice: building dist/ (${decision.reason})`);
    const npmCli = process.env.npm_execpath;
    const [cmd, args] = npmCli && /\.[cm]?js$/.test(npmCli) ? [process.execPath, [npmCli, 'run', 'build']] : ['npm', ['run', 'build']];
    const run = spawnSync(cmd, args, { cwd: root, stdio: ['ignore', 2, 2], shell: cmd === 'npm' && process.platform === 'win32' });
    if (run.status !== 0) {
      log(`sluice: the build failed (${run.error?.message ?? `exit code ${run.status}`})`);
      return false;
    }
    return true;
  });
}

function main(argv) {
  const root = ROOT;
  switch (argv[0]) {
    case undefined:
      return ensureBuilt(root) ? 0 : 1;
    case '--check': {
      const { needed, reason } = checkBuild(root);
      process.stdout.write(`${needed ? 'build needed' : 'up to date'}: ${reason}\n`);
      return needed ? 1 : 0;
    }
    case '--begin':
      mkdirSync(join(root, 'dist'), { recursive: true });
      rmSync(join(root, STAMP), { force: true });
      writeFileSync(join(root, PENDING), JSON.stringify({ started: new Date().toISOString(), inputs: scanInputs(root) }));
      return 0;
    case '--done':
      if (!existsSync(join(root, PENDING))) {
        process.stderr.write(`${PENDING} is missing: run --begin before the build\n`);
        return 1;
      }
      renameSync(join(root, PENDING), join(root, STAMP));
      return 0;
    default:
      process.stderr.write(`Unknown option "${argv[0]}" (--check, --begin, --done)\n`);
      return 2;
  }
}

if (process.argv[1] && fileURLToPath(import.meta.url) === process.argv[1]) process.exitCode = main(process.argv.slice(2));
