/**
 * The client: records queued into the open batch, cut by count, bytes or linger time, sent by at
 * most `concurrency` deliveries at once (deliver.ts), each finished batch reported (onBatch) and
 * added to the tally of the next flush().
 *
 * The queue is every record not yet finished: in the open batch, in batches waiting for a slot,
 * in flight or waiting to be retried. Its bounds (records, bytes) are what `send` checks; a
 * finished batch frees its room and lets `sendAsync` callers in, oldest first.
 */
import { deliver, type DeliveryContext, type OutgoingBatch } from './deliver.js';
import { ClientClosedError, InvalidRecordError, QueueFullError } from './errors.js';
import { settingsOf, type ClientOptions, type Settings } from './options.js';
import { recordText, utf8Length } from './records.js';
import { Tally, type BatchResult, type FlushResult } from './results.js';

export interface ClientStats {
  /** Records queued: waiting, in flight, being retried. */
  queuedRecords: number;
  queuedBytes: number;
  batchesInFlight: number;
  /** Batches cut and waiting for a slot. */
  batchesWaiting: number;
  /** Batches finished (accepted, rejected or given up). */
  batches: number;
  acceptedRecords: number;
  rejectedRecords: number;
  /** Retries made, by the status refused ("0": no answer). */
  retries: Record<string, number>;
}

export interface Client {
  /**
   * Queues a record: an object (or any JSON value; sent as JSON.stringify makes it) or a string
   * of JSON text (sent byte for byte). Never waits. Throws InvalidRecordError for a record that
   * is not JSON or is larger than a batch, QueueFullError when the queue is full (or calls
   * `onFull`), ClientClosedError after close().
   */
  send(record: unknown): void;
  /** As send, but when the queue is full waits for room (resolves once the record is queued, not delivered). */
  sendAsync(record: unknown): Promise<void>;
  /**
   * Sends what is queued now and resolves, once every batch of the records queued since the
   * previous flush() has its final outcome, with their outcome. Never rejects.
   */
  flush(): Promise<FlushResult>;
  /**
   * Takes no more records (send throws ClientClosedError; sendAsync callers still waiting for
   * room are rejected with it), then flushes. Resolves as flush() does.
   */
  close(): Promise<FlushResult>;
  stats(): ClientStats;
}

interface QueuedBatch extends OutgoingBatch {
  bytes: number;
  tally: Tally;
}

interface Waiter {
  text: string;
  bytes: number;
  resolve(): void;
  reject(err: Error): void;
}

/** Creates a client for one HTTP source (see ClientOptions for the defaults). */
export function createClient(options: ClientOptions): Client {
  return new BatchingClient(settingsOf(options));
}

class BatchingClient implements Client {
  private readonly s: Settings;
  private readonly delivery: DeliveryContext;
  // The open batch.
  private records: string[] = [];
  /** Its body's bytes: the records and a separator each. */
  private bodyBytes = 0;
  private multiline = false;
  private linger: ReturnType<typeof setTimeout> | undefined;
  private readonly waiting: QueuedBatch[] = [];
  private inFlight = 0;
  private readonly waiters: Waiter[] = [];
  private tally = new Tally();
  private seq = 0;
  private closing: Promise<FlushResult> | undefined;
  private readonly totals = { queuedRecords: 0, queuedBytes: 0, batches: 0, acceptedRecords: 0, rejectedRecords: 0 };
  private readonly retries: Record<string, number> = {};

  constructor(settings: Settings) {
    this.s = settings;
    this.delivery = {
      url: settings.url,
      headers: settings.headers,
      gzip: settings.gzip,
      requestTimeoutMs: settings.requestTimeoutMs,
      retry: settings.retry,
      fetch: settings.fetch,
      random: settings.random,
      onRetry: (status) => {
        this.retries[status] = (this.retries[status] ?? 0) + 1;
      },
    };
  }

  send(record: unknown): void {
    if (this.closing) throw new ClientClosedError();
    const text = recordText(record, this.s.validate);
    const bytes = this.sized(text);
    // Callers of sendAsync waiting for room go first.
    if (this.waiters.length > 0 || !this.hasRoom(bytes)) {
      const error = new QueueFullError(this.totals.queuedRecords, this.totals.queuedBytes, this.s);
      if (this.s.onFull) {
        this.s.onFull(record, error);
        return;
      }
      throw error;
    }
    this.enqueue(text, bytes);
  }

  sendAsync(record: unknown): Promise<void> {
    try {
      if (this.closing) throw new ClientClosedError();
      const text = recordText(record, this.s.validate);
      const bytes = this.sized(text);
      if (this.waiters.length === 0 && this.hasRoom(bytes)) {
        this.enqueue(text, bytes);
        return Promise.resolve();
      }
      return new Promise<void>((resolve, reject) => this.waiters.push({ text, bytes, resolve, reject }));
    } catch (err) {
      return Promise.reject(err);
    }
  }

  flush(): Promise<FlushResult> {
    this.cut();
    const tally = this.tally;
    this.tally = new Tally();
    return tally.close();
  }

  close(): Promise<FlushResult> {
    if (!this.closing) {
      for (const waiter of this.waiters.splice(0)) waiter.reject(new ClientClosedError());
      this.closing = this.flush();
    }
    return this.closing;
  }

  stats(): ClientStats {
    return {
      ...this.totals,
      batchesInFlight: this.inFlight,
      batchesWaiting: this.waiting.length,
      retries: { ...this.retries },
    };
  }

  /** The record's bytes; refuses one that no batch can hold. */
  private sized(text: string): number {
    const bytes = utf8Length(text);
    if (bytes + 1 > this.s.maxBatchBytes) {
      throw new InvalidRecordError(`The record is ${bytes} bytes: more than a batch may hold (maxBatchBytes ${this.s.maxBatchBytes}, one byte of it for the separator).`);
    }
    return bytes;
  }

  private hasRoom(bytes: number): boolean {
    return this.totals.queuedRecords < this.s.maxQueueRecords && this.totals.queuedBytes + bytes <= this.s.maxQueueBytes;
  }

  private enqueue(text: string, bytes: number): void {
    this.totals.queuedRecords++;
    this.totals.queuedBytes += bytes;
    if (this.records.length > 0 && this.bodyBytes + bytes + 1 > this.s.maxBatchBytes) this.cut();
    this.records.push(text);
    this.bodyBytes += bytes + 1;
    // Only a string record can hold a line end (JSON.stringify escapes them).
    if (!this.multiline && text.includes('\n')) this.multiline = true;
    if (this.records.length >= this.s.maxBatchRecords) this.cut();
    else if (this.records.length === 1) this.linger = setTimeout(() => this.cut(), this.s.lingerMs);
  }

  /** The open batch, if it holds records, becomes a batch to send. */
  private cut(): void {
    if (this.linger !== undefined) {
      clearTimeout(this.linger);
      this.linger = undefined;
    }
    if (this.records.length === 0) return;
    const batch: QueuedBatch = { seq: ++this.seq, records: this.records, multiline: this.multiline, bytes: this.bodyBytes - this.records.length, tally: this.tally };
    this.tally.open();
    this.records = [];
    this.bodyBytes = 0;
    this.multiline = false;
    this.waiting.push(batch);
    this.pump();
  }

  private pump(): void {
    while (this.inFlight < this.s.concurrency && this.waiting.length > 0) {
      const batch = this.waiting.shift()!;
      this.inFlight++;
      // deliver() reports every failure in its result; it does not reject.
      void deliver(batch, this.delivery).then((result) => this.finished(batch, result));
    }
  }

  private finished(batch: QueuedBatch, result: BatchResult): void {
    this.inFlight--;
    this.totals.queuedRecords -= batch.records.length;
    this.totals.queuedBytes -= batch.bytes;
    this.totals.batches++;
    this.totals.acceptedRecords += result.accepted;
    this.totals.rejectedRecords += result.rejected;
    batch.tally.add(result);
    this.admitWaiters();
    this.pump();
    if (this.s.onBatch) {
      try {
        this.s.onBatch(result);
      } catch (err) {
        // The client's state is whole; the callback's error is the application's, as from an event listener.
        queueMicrotask(() => {
          throw err;
        });
      }
    }
  }

  private admitWaiters(): void {
    while (this.waiters.length > 0 && this.hasRoom(this.waiters[0].bytes)) {
      const waiter = this.waiters.shift()!;
      this.enqueue(waiter.text, waiter.bytes);
      waiter.resolve();
    }
  }
}
