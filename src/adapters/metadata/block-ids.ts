/**
 * Cluster mode's ids. Counters in the shared metadata would give two nodes that create a token
 * (or a configuration, or a job) at the same moment the same id, and the later write would
 * silently replace the earlier one. Instead each node draws ids from blocks it reserved: a
 * reservation is a record appended to the cluster's metadata log, whose offset (unique and
 * growing, whoever appended) numbers the block. A node reserves its first block before it serves
 * and the next one in the background when the current one runs low.
 */
import type { MetadataTx } from '../../ports/metadata-store.js';
import type { IdAllocator, IdSequence } from '../../ports/id-allocator.js';

/** Ids per block; block n has the ids FIRST + n * SIZE .. FIRST + (n + 1) * SIZE - 1. */
const SIZE = 1000;
const FIRST = 1_000_000;
/** A new block is reserved when fewer ids than this are left. */
const LOW = 250;

export class BlockIds implements IdAllocator {
  private current: number[] = [];
  private used = 0;
  private reserving: Promise<void> | undefined;

  private constructor(private readonly reserve: () => Promise<number>) {}

  /** Reserves the first block, then serves ids from it. */
  static async start(reserve: () => Promise<number>): Promise<BlockIds> {
    const ids = new BlockIds(reserve);
    await ids.refill();
    return ids;
  }

  /** The transaction is not needed (the ids are this node's own), nor the sequence (every id is unique anyway). */
  next(_tx: MetadataTx, _sequence: IdSequence): string {
    if (this.used >= this.current.length) {
      void this.refill().catch(() => undefined);
      throw new Error('No ids are reserved at the moment (the cluster metadata log is slow to answer); please retry.');
    }
    const id = this.current[this.used++];
    if (this.current.length - this.used < LOW) void this.refill().catch(() => undefined);
    return String(id);
  }

  private refill(): Promise<void> {
    this.reserving ??= this.reserve()
      .then((block) => {
        const start = FIRST + block * SIZE + 1;
        const fresh = Array.from({ length: SIZE }, (_, i) => start + i);
        // Ids left in the current block are used first.
        this.current = [...this.current.slice(this.used), ...fresh];
        this.used = 0;
      })
      .finally(() => {
        this.reserving = undefined;
      });
    return this.reserving;
  }
}
