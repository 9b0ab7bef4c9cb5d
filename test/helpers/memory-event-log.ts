/**
 * An in-memory EventLog for tests of code that appends to or reads from the log, with switches
 * for the failure modes the adapters have: the log is full (append throws EventLogFullError),
 * the durable write is slow (held until released, or delayed), or it fails (durable rejects).
 * Records become readable (read, headOffset, onDurable) only once durable, as in the adapters.
 */
import { EventLogFullError, type AppendResult, type EventLog, type LoggedRecord, type RetentionPolicy } from '../../src/ports/event-log.js';
import type { IngestRecord } from '../../src/model/record.js';

/**
 * - `immediate`: durable resolves on the next microtask.
 * - `hold`: durable stays pending until `releaseDurable()` (or `failDurable()`).
 * - `reject`: durable rejects; the records are not kept.
 */
export type DurableMode = 'immediate' | 'hold' | 'reject';

interface Topic {
  /** Every appended record that was not rejected, durable or not, ascending by offset. */
  records: LoggedRecord[];
  durableHead: number;
  nextOffset: number;
  listeners: Set<(headOffset: number) => void>;
}

interface Pending {
  resolve: () => void;
  reject: (err: Error) => void;
}

export class MemoryEventLog implements EventLog {
  /** When true, append throws EventLogFullError and nothing is stored. */
  full = false;
  durableMode: DurableMode = 'immediate';
  /** With `immediate`: resolve durable only after this many milliseconds. */
  durableDelayMs = 0;
  /** Number of append calls that stored records (not counting refused ones). */
  appendCalls = 0;

  private readonly topics = new Map<string, Topic>();
  private held: Pending[] = [];
  private closed = false;

  append(topic: string, records: IngestRecord[]): AppendResult {
    if (this.closed) throw new Error('event log is closed');
    if (this.full) throw new EventLogFullError('memory event log is full');
    const t = this.topic(topic);
    const firstOffset = t.nextOffset;
    for (const record of records) t.records.push({ offset: t.nextOffset++, record });
    const lastOffset = t.nextOffset - 1;
    this.appendCalls++;
    let resolveDurable!: () => void;
    let rejectDurable!: (err: Error) => void;
    const durable = new Promise<void>((resolve, reject) => {
      resolveDurable = resolve;
      rejectDurable = reject;
    });
    const pending: Pending = {
      resolve: () => this.markDurable(topic, lastOffset, resolveDurable),
      reject: (err) => this.dropPending(topic, firstOffset, lastOffset, () => rejectDurable(err)),
    };
    if (this.durableMode === 'hold') this.held.push(pending);
    else if (this.durableMode === 'reject') queueMicrotask(() => pending.reject(new Error('durable write failed (memory event log)')));
    else if (this.durableDelayMs > 0) setTimeout(() => pending.resolve(), this.durableDelayMs);
    else queueMicrotask(() => pending.resolve());
    return { firstOffset, lastOffset, durable };
  }

  /** Resolves every held durable promise (mode `hold`); returns how many. */
  releaseDurable(): number {
    const held = this.held;
    this.held = [];
    for (const p of held) p.resolve();
    return held.length;
  }

  /** Rejects every held durable promise; their records are removed. */
  failDurable(err = new Error('durable write failed (memory event log)')): number {
    const held = this.held;
    this.held = [];
    for (const p of held) p.reject(err);
    return held.length;
  }

  /** How many appends wait for `releaseDurable()`. */
  get heldCount(): number {
    return this.held.length;
  }

  /** Every stored record of a topic, durable or not (for assertions). */
  records(topic: string): LoggedRecord[] {
    return [...(this.topics.get(topic)?.records ?? [])];
  }

  /** Names of the topics that hold at least one record. */
  topicNames(): string[] {
    return [...this.topics].filter(([, t]) => t.records.length > 0).map(([name]) => name);
  }

  read(topic: string, afterOffset: number, limit: number): LoggedRecord[] {
    const t = this.topics.get(topic);
    if (!t) return [];
    const out: LoggedRecord[] = [];
    for (const r of t.records) {
      if (out.length >= limit) break;
      if (r.offset > afterOffset && r.offset <= t.durableHead) out.push(r);
    }
    return out;
  }

  acknowledge(): void {}

  release(): void {}

  /** One node has every topic. */
  readonly coordinated = false;

  claim(): void {}

  onOwnership(): () => void {
    return () => undefined;
  }

  async fetch(topic: string, afterOffset: number, limit: number): Promise<LoggedRecord[]> {
    return this.read(topic, afterOffset, limit);
  }

  headOffset(topic: string): number {
    return this.topics.get(topic)?.durableHead ?? 0;
  }

  tailOffset(topic: string): number {
    const t = this.topics.get(topic);
    if (!t) return 1;
    const first = t.records.find((r) => r.offset <= t.durableHead);
    return first ? first.offset : t.durableHead + 1;
  }

  onDurable(topic: string, listener: (headOffset: number) => void): () => void {
    const t = this.topic(topic);
    t.listeners.add(listener);
    return () => void t.listeners.delete(listener);
  }

  applyRetention(policy: RetentionPolicy, now = Date.now()): Map<string, number> {
    const removed = new Map<string, number>();
    for (const [name, t] of this.topics) {
      const before = t.records.length;
      t.records = t.records.filter((r) => r.offset > t.durableHead || now - r.record.receivedAt.getTime() <= policy.maxAgeMs);
      let bytes = t.records.reduce((sum, r) => sum + r.record.body.length, 0);
      while (bytes > policy.maxBytesPerTopic && t.records.length > 0 && t.records[0].offset <= t.durableHead) {
        bytes -= t.records[0].record.body.length;
        t.records.shift();
      }
      if (t.records.length !== before) removed.set(name, before - t.records.length);
    }
    return removed;
  }

  async dropTopic(topic: string): Promise<void> {
    this.topics.delete(topic);
  }

  async ready(): Promise<string | undefined> {
    return undefined;
  }

  bytesHeld(): undefined {
    return undefined;
  }

  async close(): Promise<void> {
    this.closed = true;
    this.failDurable(new Error('event log closed'));
  }

  private topic(name: string): Topic {
    let t = this.topics.get(name);
    if (!t) {
      t = { records: [], durableHead: 0, nextOffset: 1, listeners: new Set() };
      this.topics.set(name, t);
    }
    return t;
  }

  private markDurable(topic: string, lastOffset: number, resolve: () => void): void {
    const t = this.topics.get(topic);
    if (t && lastOffset > t.durableHead) {
      t.durableHead = lastOffset;
      const head = t.durableHead;
      for (const l of t.listeners) queueMicrotask(() => l(head));
    }
    resolve();
  }

  private dropPending(topic: string, firstOffset: number, lastOffset: number, reject: () => void): void {
    const t = this.topics.get(topic);
    if (t) t.records = t.records.filter((r) => r.offset < firstOffset || r.offset > lastOffset);
    reject();
  }
}
