/**
 * The levels' use of the Staging port (src/ports/staging.ts): which staged objects belong to
 * slices, and removing a slice's local and staged files together.
 */
import { removeLocalFiles } from './local.js';
import type { SliceEntry } from '../model/levels.js';
import type { Staging } from '../ports/staging.js';


/** The staged objects of slices (those that have one). */
export function stagedPaths(slices: readonly SliceEntry[]): string[] {
  return slices.flatMap((s) => (s.stagingPath ? [s.stagingPath] : []));
}

/** Removes the local and staged files of slices whose entries are gone (a missing file is fine). */
export async function removeSliceFiles(dataDir: string, staging: Staging, slices: readonly SliceEntry[]): Promise<void> {
  await removeLocalFiles(dataDir, slices);
  await staging.remove(stagedPaths(slices));
}
