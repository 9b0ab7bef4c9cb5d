/**
 * The id allocation port: numeric ids for configurations, rows, jobs and tokens. A node of its
 * own counts in its metadata store (storage/id-sequence.ts); a cluster node takes blocks of ids
 * from the replicated log (adapters/metadata/block-ids.ts).
 */
import type { MetadataTx } from './metadata-store.js';

/**
 * Where numeric ids come from: `storage` ids are shared by configurations, configuration rows
 * and jobs, as in Keboola; `token` ids number
 * the Storage tokens. Ids only grow.
 */
export type IdSequence = 'storage' | 'token';

export interface IdAllocator {
  next(tx: MetadataTx, sequence: IdSequence): string;
}
