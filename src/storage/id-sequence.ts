import type { KeySpace, MetadataTx } from '../connectors/metadata/store.js';

const SEQUENCE = 'storage/sequence/id';
const TOKEN_SEQUENCE = 'storage/sequence/token';
/** The sequences of a node of its own (cluster mode allocates ids in blocks: block-ids.ts). */
export const ID_SEQUENCE_KEY_SPACES: readonly KeySpace[] = [
  { prefix: SEQUENCE, shared: false },
  { prefix: TOKEN_SEQUENCE, shared: false },
];
/** Generated ids start high so they never look like the small custom ids users pick ("1", "2"). */
const FIRST_ID = 1_000_001;

/**
 * Where numeric ids come from: `storage` ids are shared by configurations, configuration rows
 * and jobs, as in Keboola (reference §2.3 "the same generator as job ids"); `token` ids number
 * the Storage tokens. Ids only grow.
 */
export type IdSequence = 'storage' | 'token';

export interface IdAllocator {
  next(tx: MetadataTx, sequence: IdSequence): string;
}

/** A node of its own: counters in the metadata store, advanced in the caller's transaction. */
export const sequenceIds: IdAllocator = {
  next(tx, sequence) {
    const key = sequence === 'storage' ? SEQUENCE : TOKEN_SEQUENCE;
    const next = sequence === 'storage' ? Math.max((tx.get<number>(key) ?? 0) + 1, FIRST_ID) : (tx.get<number>(key) ?? 0) + 1;
    tx.put(key, next);
    return String(next);
  },
};
