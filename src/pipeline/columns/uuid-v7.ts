/**
 * UUID v7 for the `uuid` column: the `uuid` package's layout and its monotonic sequence (ids
 * made in one millisecond still sort in order), with random bytes drawn 4 KiB at a time. The
 * package draws them 256 bytes at a time, one `randomFillSync` per 16 ids, which was most of a
 * uuid column's cost on a render thread; here it is one per 256 ids.
 */
import { randomFillSync } from 'node:crypto';
import { v7 } from 'uuid';

const pool = new Uint8Array(4096);
let poolAt = pool.length;
/** The last id's millisecond and sequence (the package's own v7 state, updated as it does). */
let msecs = -Infinity;
let seq = 0;

export function uuidV7(): string {
  if (poolAt + 16 > pool.length) {
    randomFillSync(pool);
    poolAt = 0;
  }
  const random = pool.subarray(poolAt, (poolAt += 16));
  const now = Date.now();
  if (now > msecs) {
    // A new millisecond starts from a random sequence; within one it counts up (and a wrap
    // moves on to the next millisecond), so that ids keep their order.
    seq = (random[6] << 23) | (random[7] << 16) | (random[8] << 8) | random[9];
    msecs = now;
  } else {
    seq = (seq + 1) | 0;
    if (seq === 0) msecs++;
  }
  return v7({ msecs, seq, random });
}
