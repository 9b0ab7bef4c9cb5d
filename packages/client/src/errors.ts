/** The errors `send` and `sendAsync` throw; everything about a batch's delivery is in its result instead. */

/** The record cannot be sent: it is not JSON, or it is larger than a batch may be. Nothing was queued. */
export class InvalidRecordError extends TypeError {
  override readonly name = 'InvalidRecordError';
}

/**
 * The in-memory queue holds `maxQueueRecords` records or `maxQueueBytes` bytes (records waiting,
 * and those of batches in flight or waiting to be retried). Nothing was queued: wait
 * (`sendAsync` does), drop the record, or raise the limits.
 */
export class QueueFullError extends Error {
  override readonly name = 'QueueFullError';
  constructor(
    readonly queuedRecords: number,
    readonly queuedBytes: number,
    limits: { maxQueueRecords: number; maxQueueBytes: number },
  ) {
    super(
      `The client's queue is full (${queuedRecords} records, ${queuedBytes} bytes queued; limits ` +
        `maxQueueRecords ${limits.maxQueueRecords}, maxQueueBytes ${limits.maxQueueBytes}): the server is slower than the records come, ` +
        'or does not answer. The record was not queued: await sendAsync(record) to wait for room, or raise the limits.',
    );
  }
}

/** `close()` was called: the client takes no more records. */
export class ClientClosedError extends Error {
  override readonly name = 'ClientClosedError';
  constructor() {
    super('The client is closed: it takes no more records.');
  }
}
