/**
 * Where the conformance suites live: test cases written by the reference systems' own authors
 * (the Stream API scenarios, the generic extractor's examples, the Jsonnet test suite). They are
 * not part of this repository; the tests read them in place from a `shared/` folder, which holds
 * `conformance/<suite>/` with a FORMAT.md each. That folder is found:
 *  1. at SLUICE_SHARED_DIR, when set;
 *  2. beside the project (`<project>/../shared`);
 *  3. beside the repository this clone was cloned from (CI clones into a temporary folder).
 * A clone with none of them still passes `npm test`: the conformance runners and the few tests
 * that read the suites say, each on one line, that they did not run and how to make them run.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

function originPath(): string | undefined {
  try {
    const url = execFileSync('git', ['config', '--get', 'remote.origin.url'], { cwd: PROJECT_ROOT, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const path = url.startsWith('file://') ? fileURLToPath(url) : url;
    return isAbsolute(path) ? path : undefined;
  } catch {
    return undefined;
  }
}

function locate(): string {
  if (process.env.SLUICE_SHARED_DIR) return resolve(process.env.SLUICE_SHARED_DIR);
  const candidates = [resolve(PROJECT_ROOT, '../shared')];
  const origin = originPath();
  if (origin) candidates.push(resolve(origin, '../shared'));
  // Reported as the first candidate when none exists: the notice names the expected place.
  return candidates.find((dir) => existsSync(join(dir, 'conformance'))) ?? candidates[0];
}

export const SHARED_DIR = locate();

/** A path inside the shared directory, e.g. sharedPath('conformance/jsonnet/test_suite'). */
export function sharedPath(relative: string): string {
  return join(SHARED_DIR, relative);
}

/** Whether a conformance suite is on this machine (`suite`: its folder under conformance/). */
export function conformanceFound(suite: string): boolean {
  return existsSync(sharedPath(join('conformance', suite)));
}

/** The one line said instead of running a suite that is not on this machine. */
export function conformanceMissing(suite: string): string {
  return `conformance ${suite}: not run, no suite at ${sharedPath(join('conformance', suite))} (set SLUICE_SHARED_DIR to the folder that holds conformance/, or pass the suite's folder as the first argument)`;
}
