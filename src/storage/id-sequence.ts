import type { MetadataTx } from '../connectors/metadata/store.js';

const SEQUENCE = 'storage/sequence/id';
/** Generated ids start high so they never look like the small custom ids users pick ("1", "2"). */
const FIRST_ID = 1_000_001;

/**
 * The Storage id generator: numeric string ids shared by configurations, configuration rows
 * and jobs, as in Keboola (reference §2.3 "the same generator as job ids"). Ids only grow.
 */
export function nextStorageId(tx: MetadataTx): string {
  const next = Math.max((tx.get<number>(SEQUENCE) ?? 0) + 1, FIRST_ID);
  tx.put(SEQUENCE, next);
  return String(next);
}
