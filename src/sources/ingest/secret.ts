/** The comparison of a source's secret, shared by the lookups by id and by secret. */
import { timingSafeEqual } from 'node:crypto';

/** Compares in time independent of where the strings differ (a length mismatch is not a secret). */
export function secretMatches(given: string, expected: string): boolean {
  const a = Buffer.from(given, 'utf8');
  const b = Buffer.from(expected, 'utf8');
  if (a.length !== b.length) {
    timingSafeEqual(b, b);
    return false;
  }
  return timingSafeEqual(a, b);
}
