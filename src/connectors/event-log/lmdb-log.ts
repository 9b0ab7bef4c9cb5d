import { open, type Database, type RootDatabase } from 'lmdb';
import type { Signal } from '../../definition/model.js';
import type { IngestRecord } from '../../pipeline/record.js';
import { EventLogFullError, type AppendResult, type EventLog, type LoggedRecord, type RetentionPolicy } from './event-log.js';

/**
 * The embedded EventLog adapter (DESIGN.md "Ports and adapters"): one LMDB environment of its
 * own (the service gives it `<dataDir>/log`), one named database `records` keyed by
 * `[topic, offset]` (lmdb-js ordered array keys: a topic's records are contiguous and ascend
 * by offset).
 *
 * Durability and group commit. Every record is one lmdb-js `put`; lmdb-js puts every write
 * issued in one event-loop turn into one transaction, and writes that arrive while a commit is
 * in flight queue up for the next one, so thousands of single-record appends share a few
 * commits. The environment is opened with `overlappingSync: false` (and never `noSync`): a put
 * promise then resolves only after `mdb_txn_commit` returned, fdatasync included, so `durable`
 * (derived from it) means "synced to disk", and a failed commit or sync rejects it.
 *
 * Capacity. lmdb-js grows the memory map on demand, so LMDB's map size is no bound and
 * MDB_MAP_FULL does not occur in practice. `maxBytes` is therefore a budget the adapter keeps
 * itself, on the pages the records occupy (B-tree and overflow pages, as LMDB counts them after
 * each commit) plus the bytes of appends in flight; `append` throws EventLogFullError
 * synchronously when a batch would pass it. The data file is that plus LMDB's free pages (kept
 * for copy-on-write and reused; the file never shrinks). A commit that fails anyway (disk full:
 * ENOSPC, or EIO for a short write; EFBIG; any other I/O error) rejects `durable` of every append
 * in it with EventLogFullError (its `cause` is lmdb's error, with its numeric `code`), and for
 * `failureBackoffMs` afterwards `append` throws EventLogFullError synchronously (cleared early
 * when retention or dropTopic removes records).
 *
 * Per-topic sizes (`maxBytesPerTopic` of retention, `topicBytes`) count the stored bytes of the
 * records (encoded value + key), recomputed by one scan at open.
 *
 * Pages are 16 KiB (a new log only; an existing one keeps its page size): LMDB keeps at most
 * capacity-1 records per leaf page when appending, and puts records above half a page on
 * overflow pages rounded up to whole pages, so small pages waste much on records of 1-2 KB.
 *
 * Offsets are assigned synchronously from an in-memory counter per topic (initialised from the
 * last key at open). A failed commit leaves a gap: those offsets are never reused.
 */
export interface LmdbEventLogOptions {
  /** Budget of the log's pages in use, all topics together (default 64 GiB). */
  maxBytes?: number;
  /** After a failed commit, appends are refused synchronously for this long (default 1000 ms). */
  failureBackoffMs?: number;
}

interface TopicState {
  /** Last assigned offset. */
  next: number;
  /** Highest durable offset. */
  durable: number;
  /** Lowest offset still kept (durable + 1 when nothing durable is kept). */
  tail: number;
  /** Stored bytes of the topic's records (encoded value + key), in flight ones included. */
  bytes: number;
}

/** What a range scan over the sizes handle yields per record. */
interface RecordMeta {
  size: number;
  receivedAt: number;
}

type LogKey = [string, number];

const DEFAULT_MAX_BYTES = 64 * 1024 ** 3;
const PAGE_SIZE = 16 * 1024;
const FORMAT_VERSION = 1;
/** Fixed part of an encoded record: version, receivedAt, signal, ip length, headers length. */
const FIXED_HEADER = 1 + 8 + 1 + 2 + 4;
/** Per-record key overhead counted on top of the topic name (array tag, offset, separators). */
const KEY_OVERHEAD = 12;
/** LMDB keys are limited to ~1978 bytes; topics are short ids, this is a sanity bound. */
const MAX_TOPIC_BYTES = 1024;
const SIGNAL_CODES: Record<string, number> = { '': 0, logs: 1, metrics: 2, traces: 3 };
const SIGNALS_BY_CODE: (Signal | '')[] = ['', 'logs', 'metrics', 'traces'];

export class LmdbEventLog implements EventLog {
  private readonly topics = new Map<string, TopicState>();
  private readonly listeners = new Map<string, Set<(headOffset: number) => void>>();
  /** Topics whose durable head moved since the last notification round. */
  private readonly toNotify = new Set<string>();
  private notifyScheduled = false;
  /** Bytes of the records' pages after the last commit seen (see usedBytes). */
  private pagesBytes = 0;
  private pagesStale = true;
  /** Stored bytes of appends, and of removals, whose commit has not settled yet. */
  private unsettledAppended = 0;
  private unsettledRemoved = 0;
  /** lmdb-js promise of the last write issued; close() waits until it settles. */
  private lastWrite: Promise<unknown> = Promise.resolve();
  private guardScheduled = false;
  private refuseUntil = 0;
  private closed = false;

  private constructor(
    private readonly root: RootDatabase,
    private readonly db: Database<IngestRecord | Buffer, LogKey>,
    private readonly sizes: Database<RecordMeta, LogKey>,
    private readonly maxBytes: number,
    private readonly failureBackoffMs: number,
  ) {}

  /**
   * Opens (creating if needed) the log in directory `path` and recovers every topic's head and
   * tail offsets and byte count by one scan over the records' keys and sizes.
   */
  static open(path: string, options: LmdbEventLogOptions = {}): LmdbEventLog {
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    if (!(maxBytes > 0)) throw new Error(`maxBytes must be positive, got ${maxBytes}`);
    const root = open({
      path,
      // A put promise resolves after the synced commit; never noSync.
      overlappingSync: false,
      noSync: false,
      compression: false,
      // Initial address space only: lmdb-js grows the map when it fills.
      mapSize: Math.min(Math.max(2 * maxBytes, 16 * 1024 ** 2), 2 ** 40),
      maxDbs: 4,
      pageSize: PAGE_SIZE,
    });
    const recordCodec = { encode: (value: Buffer): Buffer => value, decode: decodeRecord };
    const sizeCodec = { encode: (value: Buffer): Buffer => value, decode: decodeMeta };
    const db = root.openDB<IngestRecord | Buffer, LogKey>('records', { encoder: recordCodec } as object);
    const sizes = root.openDB<RecordMeta, LogKey>('records', { encoder: sizeCodec } as object);
    const log = new LmdbEventLog(root, db, sizes, maxBytes, options.failureBackoffMs ?? 1000);
    log.recover();
    return log;
  }

  append(topic: string, records: IngestRecord[]): AppendResult {
    if (this.closed) throw new Error('event log is closed');
    if (Buffer.byteLength(topic) > MAX_TOPIC_BYTES) throw new Error(`topic name longer than ${MAX_TOPIC_BYTES} bytes`);
    const state = this.state(topic);
    if (records.length === 0) return { firstOffset: state.next + 1, lastOffset: state.next, durable: Promise.resolve() };
    if (this.refuseUntil > 0) {
      if (Date.now() < this.refuseUntil) throw new EventLogFullError('event log: the last commit failed (disk full or I/O error); try again later');
      this.refuseUntil = 0;
    }
    const values = records.map(encodeRecord);
    const keyBytes = Buffer.byteLength(topic) + KEY_OVERHEAD;
    let bytes = 0;
    for (const v of values) bytes += v.length + keyBytes;
    const used = this.usedBytes();
    if (used + bytes > this.maxBytes) {
      throw new EventLogFullError(`event log is full: ${used} of ${this.maxBytes} bytes used, ${bytes} more requested`);
    }
    const firstOffset = state.next + 1;
    let put: Promise<boolean> | undefined;
    for (let i = 0; i < values.length; i++) put = this.db.put([topic, firstOffset + i], values[i]);
    const lastOffset = firstOffset + values.length - 1;
    state.next = lastOffset;
    state.bytes += bytes;
    this.unsettledAppended += bytes;
    this.afterWrite();
    const durable = put!.then(
      () => {
        this.unsettledAppended -= bytes;
        this.pagesStale = true;
        if (this.topics.get(topic) === state && lastOffset > state.durable) {
          state.durable = lastOffset;
          this.scheduleNotify(topic);
        }
      },
      async (err: unknown) => {
        this.unsettledAppended -= bytes;
        const cause = await commitCause(err);
        if (this.topics.get(topic) === state) {
          state.bytes -= bytes;
          // Nothing below this batch may still be kept only if the batch began at the tail.
          if (state.tail === firstOffset) state.tail = lastOffset + 1;
        }
        this.refuseUntil = Date.now() + this.failureBackoffMs;
        throw new EventLogFullError(`event log: commit failed: ${describe(cause)}`, { cause });
      },
    );
    // The caller may not wait (sync.wait=false): a failure must not become an unhandled rejection.
    durable.catch(() => undefined);
    this.lastWrite = put!;
    return { firstOffset, lastOffset, durable };
  }

  read(topic: string, afterOffset: number, limit: number): LoggedRecord[] {
    const state = this.topics.get(topic);
    if (!state || limit <= 0) return [];
    const from = Math.max(afterOffset + 1, state.tail);
    if (from > state.durable) return [];
    const out: LoggedRecord[] = [];
    for (const { key, value } of this.db.getRange({ start: [topic, from], end: [topic, state.durable + 1], limit })) {
      out.push({ offset: key[1], record: value as IngestRecord });
    }
    return out;
  }

  headOffset(topic: string): number {
    return this.topics.get(topic)?.durable ?? 0;
  }

  tailOffset(topic: string): number {
    const state = this.topics.get(topic);
    if (!state) return 1;
    return Math.min(state.tail, state.durable + 1);
  }

  onDurable(topic: string, listener: (headOffset: number) => void): () => void {
    let set = this.listeners.get(topic);
    if (!set) this.listeners.set(topic, (set = new Set()));
    set.add(listener);
    return () => {
      set.delete(listener);
      if (set.size === 0 && this.listeners.get(topic) === set) this.listeners.delete(topic);
    };
  }

  /**
   * Removes, per topic and from its tail on, the durable records older than `maxAgeMs` (receive
   * time; the scan stops at the first younger record, receive times ascend with offsets up to
   * clock skew between requests) and then the oldest ones while the topic holds more than
   * `maxBytesPerTopic`. The removal is visible at once (tail, reads, byte counts); it is
   * committed asynchronously.
   */
  applyRetention(policy: RetentionPolicy, now = Date.now()): Map<string, number> {
    if (this.closed) throw new Error('event log is closed');
    const removed = new Map<string, number>();
    const cutoff = now - policy.maxAgeMs;
    let totalFreed = 0;
    let last: Promise<boolean> | undefined;
    for (const [topic, state] of this.topics) {
      if (state.tail > state.durable) continue;
      let count = 0;
      let freed = 0;
      const keyBytes = Buffer.byteLength(topic) + KEY_OVERHEAD;
      let newTail = state.durable + 1;
      for (const { key, value } of this.sizes.getRange({ start: [topic, state.tail], end: [topic, state.durable + 1] })) {
        if (!(value.receivedAt < cutoff) && state.bytes - freed <= policy.maxBytesPerTopic) {
          newTail = key[1];
          break;
        }
        last = this.db.remove(key);
        freed += value.size + keyBytes;
        count++;
      }
      state.tail = newTail;
      if (count > 0) {
        state.bytes -= freed;
        totalFreed += freed;
        removed.set(topic, count);
      }
    }
    if (last) void this.settleRemoval(last, totalFreed).catch(() => undefined);
    return removed;
  }

  /**
   * Removes every record of the topic in one transaction. The topic starts over afterwards (the
   * next append gets offset 1); onDurable listeners stay subscribed.
   */
  async dropTopic(topic: string): Promise<void> {
    if (this.closed) throw new Error('event log is closed');
    const state = this.topics.get(topic);
    if (!state) return;
    // Removes by offset (not by scanning), so that records still in flight are removed too:
    // the removes queue behind their puts.
    let last: Promise<boolean> | undefined;
    for (let offset = state.tail; offset <= state.next; offset++) last = this.db.remove([topic, offset]);
    this.topics.delete(topic);
    this.toNotify.delete(topic);
    if (last) await this.settleRemoval(last, state.bytes);
  }

  /** Waits for the pending commits (their durable promises settle first), then closes LMDB. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    // The durable handlers were attached to these promises earlier, so they run first.
    await this.lastWrite.then(
      () => undefined,
      () => undefined,
    );
    await this.root.close();
  }

  /**
   * What `maxBytes` bounds: the bytes of the pages that hold records (LMDB's own count, read
   * after commits), plus the stored bytes of appends not committed yet, minus those of removals
   * not committed yet.
   */
  usedBytes(): number {
    if (this.pagesStale && !this.closed) {
      const stats = this.db.getStats() as { treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number; pageSize: number };
      this.pagesBytes = (stats.treeBranchPageCount + stats.treeLeafPageCount + stats.overflowPages) * stats.pageSize;
      this.pagesStale = false;
    }
    return Math.max(0, this.pagesBytes + this.unsettledAppended - this.unsettledRemoved);
  }

  /** Stored bytes of one topic, as counted against `maxBytesPerTopic`. */
  topicBytes(topic: string): number {
    return this.topics.get(topic)?.bytes ?? 0;
  }

  /** Names of the topics that hold (or held since open) records. */
  topicNames(): string[] {
    return [...this.topics.keys()];
  }

  private state(topic: string): TopicState {
    let state = this.topics.get(topic);
    if (!state) {
      state = { next: 0, durable: 0, tail: 1, bytes: 0 };
      this.topics.set(topic, state);
    }
    return state;
  }

  private recover(): void {
    let current: TopicState | undefined;
    let currentTopic: string | undefined;
    for (const { key, value } of this.sizes.getRange({})) {
      const [topic, offset] = key;
      if (topic !== currentTopic) {
        current = { next: offset, durable: offset, tail: offset, bytes: 0 };
        currentTopic = topic;
        this.topics.set(topic, current);
      }
      current!.next = current!.durable = offset;
      current!.bytes += value.size + Buffer.byteLength(topic) + KEY_OVERHEAD;
    }
  }

  /** Handles the outcome of a batch of removes (retention, dropTopic) freeing `bytes`. */
  private settleRemoval(last: Promise<boolean>, bytes: number): Promise<void> {
    this.afterWrite();
    this.refuseUntil = 0;
    this.unsettledRemoved += bytes;
    const done = last.then(
      () => {
        this.unsettledRemoved -= bytes;
        this.pagesStale = true;
      },
      async (err: unknown) => {
        this.unsettledRemoved -= bytes;
        const cause = await commitCause(err);
        throw new Error(`event log: removing records failed: ${describe(cause)}`, { cause });
      },
    );
    this.lastWrite = last;
    return done;
  }

  /**
   * lmdb-js ends each event-turn batch by writing one more instruction whose commit promise
   * nobody holds; when that commit fails, the promise rejects unhandled (which ends a Node
   * process). Once per turn, after lmdb-js's own end-of-turn task, this attaches a handler to
   * it through `committed` (the current commit promise).
   */
  private afterWrite(): void {
    if (this.guardScheduled) return;
    this.guardScheduled = true;
    setImmediate(() => {
      this.guardScheduled = false;
      this.db.committed.then(undefined, () => undefined);
    });
  }

  private scheduleNotify(topic: string): void {
    if (!this.listeners.has(topic)) return;
    this.toNotify.add(topic);
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    // Queued behind the durable handlers of the same commit: one notification per topic and commit.
    queueMicrotask(() => {
      this.notifyScheduled = false;
      const topics = [...this.toNotify];
      this.toNotify.clear();
      for (const topic of topics) {
        const head = this.headOffset(topic);
        for (const listener of this.listeners.get(topic) ?? []) {
          try {
            listener(head);
          } catch {
            // A listener's failure is its own; the others are still told.
          }
        }
      }
    });
  }
}

/**
 * lmdb-js rejects the writes of a failed commit with a generic error whose `commitError` is a
 * promise rejected with lmdb's error (message and numeric `code`: errno or MDB_* code).
 */
async function commitCause(err: unknown): Promise<unknown> {
  const commitError = (err as { commitError?: Promise<unknown> } | null)?.commitError;
  if (!commitError || typeof commitError.then !== 'function') return err;
  // lmdb-js rejects it in the same callback that rejects the writes; the timer is a safety net.
  const cause = await Promise.race([
    commitError.then(
      () => err,
      (e: unknown) => e,
    ),
    new Promise<unknown>((resolve) => setTimeout(() => resolve(err), 50).unref()),
  ]);
  return cause;
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return code !== undefined ? `${err.message} (code ${String(code)})` : err.message;
  }
  return String(err);
}

/**
 * Value layout (little endian): u8 format version, f64 receivedAt (epoch ms), u8 signal code,
 * u16 ip length, ip (utf8), u32 headers length, headers (JSON), body (the rest).
 */
export function encodeRecord(record: IngestRecord): Buffer {
  const headers = JSON.stringify(record.headers);
  const ipLength = Buffer.byteLength(record.ip);
  const headersLength = Buffer.byteLength(headers);
  const out = Buffer.allocUnsafe(FIXED_HEADER + ipLength + headersLength + record.body.length);
  out[0] = FORMAT_VERSION;
  out.writeDoubleLE(record.receivedAt.getTime(), 1);
  out[9] = SIGNAL_CODES[record.signal] ?? 0;
  out.writeUInt16LE(ipLength, 10);
  let pos = 12 + out.write(record.ip, 12, 'utf8');
  out.writeUInt32LE(headersLength, pos);
  pos += 4;
  pos += out.write(headers, pos, 'utf8');
  record.body.copy(out, pos);
  return out;
}

/** Decodes a value; `bytes` may be lmdb-js's reused buffer, so the body is copied. */
export function decodeRecord(bytes: Uint8Array, size?: unknown): IngestRecord {
  const length = typeof size === 'number' ? size : bytes.length;
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, length);
  if (b[0] !== FORMAT_VERSION) throw new Error(`event log: unknown record format ${b[0]}`);
  const receivedAt = new Date(b.readDoubleLE(1));
  const signal = SIGNALS_BY_CODE[b[9]] ?? '';
  const ipLength = b.readUInt16LE(10);
  const ip = b.toString('utf8', 12, 12 + ipLength);
  let pos = 12 + ipLength;
  const headersLength = b.readUInt32LE(pos);
  pos += 4;
  const headers = JSON.parse(b.toString('utf8', pos, pos + headersLength)) as Record<string, string>;
  pos += headersLength;
  const body = Buffer.from(b.subarray(pos, length));
  return { receivedAt, ip, headers, body, signal };
}

function decodeMeta(bytes: Uint8Array, size?: unknown): RecordMeta {
  const length = typeof size === 'number' ? size : bytes.length;
  const receivedAt = new DataView(bytes.buffer, bytes.byteOffset + 1, 8).getFloat64(0, true);
  return { size: length, receivedAt };
}
