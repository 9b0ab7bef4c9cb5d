/** What became of the records: per batch (onBatch), and per flush (everything queued between two flushes). */

/** A record the server did not keep, and why. */
export interface Rejection {
  /** The batch's number (from 1, in the order the client cut its batches). */
  batch: number;
  /** The record's position in its batch, from 0. */
  index: number;
  /**
   * The record as sent (its JSON text). Absent when the answer's positions cannot be matched
   * to the records (only with `validate: false`, when the endpoint cut a string record into
   * more or fewer records than one).
   */
  record?: string;
  /** The server's reason, or why the batch got no answer. */
  reason: string;
}

/** The outcome of one batch. */
export interface BatchResult {
  /** The batch's number (from 1, in the order the client cut its batches). */
  batch: number;
  /** Records in the batch. */
  records: number;
  /** Records the server kept: durable in its event log with status 200, accepted before the write was synced with 202. */
  accepted: number;
  /** Records not kept (`records - accepted`). */
  rejected: number;
  /**
   * The rejected records with their reasons: all of them when the batch failed as a whole
   * (`error`); of a batch kept in part, those the answer describes (the server describes the
   * first 10; the count above covers all).
   */
  rejections: Rejection[];
  /** The status of the last answer; 0 when the last attempt got none (network error, timeout). */
  status: number;
  /** Requests made for the batch (1 when it needed no retry). */
  attempts: number;
  /** Why the batch failed as a whole (nothing kept): the server's answer, or why it got none. */
  error?: string;
}

/** The outcome of every batch of the records queued since the previous flush() (or the start). */
export interface FlushResult {
  batches: number;
  records: number;
  accepted: number;
  rejected: number;
  /** Batches that failed as a whole (a `BatchResult` with an `error`). */
  failedBatches: number;
  /** The rejected records with reasons, as the batches reported them: at most the first 1 000. */
  rejections: Rejection[];
}

/** At most this many rejections are kept for a flush's result: memory stays bounded between flushes. */
export const MAX_FLUSH_REJECTIONS = 1000;

/**
 * The batches cut between two flush() calls, added up as they finish. flush() closes the open
 * tally and waits until each of its batches has finished.
 */
export class Tally {
  private pending = 0;
  private closed = false;
  private waiter?: (result: FlushResult) => void;
  private readonly result: FlushResult = { batches: 0, records: 0, accepted: 0, rejected: 0, failedBatches: 0, rejections: [] };

  /** A batch of this tally was cut. */
  open(): void {
    this.pending++;
  }

  /** A batch of this tally finished. */
  add(batch: BatchResult): void {
    const r = this.result;
    r.batches++;
    r.records += batch.records;
    r.accepted += batch.accepted;
    r.rejected += batch.rejected;
    if (batch.error !== undefined) r.failedBatches++;
    for (const rejection of batch.rejections) {
      if (r.rejections.length >= MAX_FLUSH_REJECTIONS) break;
      r.rejections.push(rejection);
    }
    this.pending--;
    this.settle();
  }

  /** No more batches join this tally; resolves once its last one has finished. */
  close(): Promise<FlushResult> {
    this.closed = true;
    const done = new Promise<FlushResult>((resolve) => (this.waiter = resolve));
    this.settle();
    return done;
  }

  private settle(): void {
    if (this.closed && this.pending === 0 && this.waiter) {
      this.waiter(this.result);
      this.waiter = undefined;
    }
  }
}
