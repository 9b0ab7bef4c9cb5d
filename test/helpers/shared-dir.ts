/**
 * Where the shared specification lives (`shared/`: seeds, reference, conformance suites), which
 * the tests read in place. It sits beside the project (`../shared`); a clone elsewhere (CI clones
 * into a temporary directory) finds it beside the repository it was cloned from. SLUICE_SHARED_DIR
 * overrides both.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { isAbsolute, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

function originPath(): string | undefined {
  try {
    const url = execFileSync('git', ['config', '--get', 'remote.origin.url'], { cwd: PROJECT_ROOT, encoding: 'utf8' }).trim();
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
  // Reported as the first candidate when none exists: the error names the expected place.
  return candidates.find((dir) => existsSync(join(dir, 'conformance'))) ?? candidates[0];
}

export const SHARED_DIR = locate();

/** A path inside the shared directory, e.g. sharedPath('conformance/jsonnet/test_suite'). */
export function sharedPath(relative: string): string {
  return join(SHARED_DIR, relative);
}
