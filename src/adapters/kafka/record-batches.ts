/**
 * Sizes of Kafka records and sends cut to a byte budget. Kafka refuses a partition's record
 * batch above the topic's `max.message.bytes` (1 MB by default) and, with it, everything else
 * in that send; so the producers here never put more than a budget into one send.
 */

/** Under Kafka's default `max.message.bytes` (1 048 588) by more than a record batch's header. */
export const DEFAULT_MAX_BATCH_BYTES = 1_000_000;

/** Kafka's default `max.message.bytes` (the broker's `message.max.bytes`). */
export const KAFKA_DEFAULT_MAX_MESSAGE_BYTES = 1_048_588;

export interface SizedRecord {
  key?: string | null;
  value: Buffer | null;
  headers?: Record<string, string>;
}

/**
 * An upper bound of a record's size in a record batch: its varint fields at their widest, key,
 * value, and each header's name and value with their lengths.
 */
export function recordBytes(r: SizedRecord): number {
  let bytes = 32 + (r.value?.length ?? 0) + (r.key ? Buffer.byteLength(r.key) : 0);
  if (r.headers) for (const name in r.headers) bytes += 12 + Buffer.byteLength(name) + Buffer.byteLength(r.headers[name]);
  return bytes;
}

/** Consecutive runs of `records` of at most `budget` bytes each (a larger record is a run alone). */
export function cutToBudget<T extends SizedRecord>(records: readonly T[], budget = DEFAULT_MAX_BATCH_BYTES): T[][] {
  const runs: T[][] = [];
  let run: T[] = [];
  let bytes = 0;
  for (const r of records) {
    const size = recordBytes(r);
    if (run.length > 0 && bytes + size > budget) {
      runs.push(run);
      run = [];
      bytes = 0;
    }
    run.push(r);
    bytes += size;
  }
  if (run.length > 0) runs.push(run);
  return runs;
}
