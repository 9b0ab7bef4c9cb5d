import type { IdAllocator } from '../ports/id-allocator.js';
import type { KeySpace } from '../ports/metadata-store.js';

const SEQUENCE = 'storage/sequence/id';
const TOKEN_SEQUENCE = 'storage/sequence/token';
/** The sequences of a node of its own (cluster mode allocates ids in blocks: block-ids.ts). */
export const ID_SEQUENCE_KEY_SPACES: readonly KeySpace[] = [
  { prefix: SEQUENCE, shared: false },
  { prefix: TOKEN_SEQUENCE, shared: false },
];
/** Generated ids start high so they never look like the small custom ids users pick ("1", "2"). */
const FIRST_ID = 1_000_001;

/** A node of its own: counters in the metadata store, advanced in the caller's transaction. */
export const sequenceIds: IdAllocator = {
  next(tx, sequence) {
    const key = sequence === 'storage' ? SEQUENCE : TOKEN_SEQUENCE;
    const next = sequence === 'storage' ? Math.max((tx.get<number>(key) ?? 0) + 1, FIRST_ID) : (tx.get<number>(key) ?? 0) + 1;
    tx.put(key, next);
    return String(next);
  },
};
