/**
 * "Did you mean …?" for a mistyped command or flag: the closest known name by edit distance
 * (fastest-levenshtein), when it is close enough to be what was meant: at most a third of the
 * name's letters changed (at least 2 allowed), so `--colour` finds nothing and `--prot` finds
 * `--port`.
 */
import { closest, distance } from 'fastest-levenshtein';

export function closestName(given: string, names: readonly string[]): string | undefined {
  if (names.length === 0 || given === '') return undefined;
  const best = closest(given, [...names]);
  return distance(given, best) <= Math.max(2, Math.floor(given.length / 3)) ? best : undefined;
}

/** ` Did you mean --port?`, or '' when no name is close. */
export function didYouMean(given: string, names: readonly string[]): string {
  const best = closestName(given, names);
  return best === undefined ? '' : ` Did you mean ${best}?`;
}
