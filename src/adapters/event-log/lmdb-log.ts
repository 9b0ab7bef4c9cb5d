import { statfsSync } from 'node:fs';
import { statfs } from 'node:fs/promises';
import { open, type Database, type RootDatabase } from 'lmdb';
import type { IngestRecord } from '../../model/record.js';
import { decodeRecord, encodeRecords, encodedReceivedAt } from '../../pipeline/record-codec.js';
import { EventLogFullError, type AppendResult, type EventLog, type LoggedRecord, type RetentionPolicy } from '../../ports/event-log.js';

/**
 * The embedded EventLog adapter (docs/architecture.md "Ports and adapters"): an LMDB environment of its
 * own (the service gives it `<dataDir>/log`) with one LMDB database per topic, named
 * `t/<topic>`, keyed by offset, and a database `floors` that keeps, per topic, the highest
 * offset removed (so that offsets are never reused, even when retention emptied a topic and the
 * process restarts: consumers keep their offsets elsewhere).
 *
 * Durability and group commit. Every record is one lmdb-js `put`. lmdb-js puts every write
 * issued in one event-loop turn into one transaction, and writes that arrive while a commit is
 * in flight wait for the next one, so thousands of single-record appends share a few commits.
 * The environment is opened with `overlappingSync: false` (and never `noSync`): a put promise
 * then resolves only after `mdb_txn_commit` returned, fdatasync included, so `durable` (derived
 * from it) means "synced to disk", and a failed write or sync rejects it.
 *
 * Why a database per topic, with MDB_APPEND puts: every record then goes at the end of its
 * B-tree, and LMDB splits a full page there without moving anything, so pages stay full. In one
 * shared B-tree the topics' records interleave, and each split of a page where one topic ends
 * and the next begins leaves half-empty pages: pages took 1.5-2.7x the records' bytes with 10
 * interleaved topics, against 1.03-1.1x now for records of 0.2-3 KB (16 KiB pages; records of
 * 5-8 KB, two to a page, take ~1.35x, larger ones go to overflow pages rounded up to 16 KiB).
 * A topic's first append creates its database in a synchronous transaction (the event loop
 * waits about one commit, once per topic). `maxTopics` bounds the topics (LMDB's maxdbs).
 *
 * Capacity. lmdb-js grows the memory map on demand, so LMDB's map size bounds nothing and
 * MDB_MAP_FULL does not occur. `maxBytes` is a budget the adapter keeps itself, on the pages
 * that hold records (B-tree and overflow pages, LMDB's own count, read after commits) plus the
 * stored bytes of appends in flight; `append` throws EventLogFullError synchronously when a
 * batch would pass it. The data file is that plus LMDB's free pages (kept for copy-on-write and
 * reused; the file never shrinks).
 *
 * Full disk. Appends are also refused (EventLogFullError, synchronously) while the file system
 * has less than `minFreeDiskBytes` free (statfs every `diskCheckIntervalMs`, minus what was
 * appended since). This matters beyond a clean 503: in lmdb-js 3.5 the error path of a page
 * write that fails outright (pwrite returning -1: ENOSPC, EFBIG, EDQUOT) sprintf's its message
 * into a 100-byte malloc that it can overflow, corrupting the heap (observed: glibc aborts with
 * "corrupted size vs. prev_size"). A short write (reported as EIO) is handled cleanly. And
 * LMDB needs free pages to delete (copy-on-write): on a really full file system removals fail
 * too, so retention could not make room.
 *
 * A commit that fails anyway rejects `durable` of every append in it with EventLogFullError
 * (`cause`: lmdb's error, with its numeric `code`); for `failureBackoffMs` afterwards `append`
 * throws EventLogFullError synchronously (cleared early when retention or dropTopic runs).
 *
 * Per-topic sizes (`maxBytesPerTopic`, `topicBytes`) count the stored bytes of the records
 * (encoded value + key), recomputed by one scan over keys and value sizes at open.
 *
 * Removals are visible at once (tail offsets, reads, sizes). Retention commits them in the
 * background, at most 5000 records per transaction, so that it never holds up the appends'
 * commits for long; if that fails repeatedly the records stay hidden below the tail and are
 * counted again at the next open. dropTopic empties the topic's database in one transaction
 * (mdb_drop); at the next open, emptied databases are deleted.
 *
 * Offsets come from an in-memory counter per topic, initialised at open from the last key (or
 * the floor). A failed commit leaves a gap: its offsets are never reused. After dropTopic the
 * topic goes on after its last offset.
 */
export interface LmdbEventLogOptions {
  /** Budget of the log's pages in use, all topics together (default 64 GiB). */
  maxBytes?: number;
  /** How many topics the log can hold (LMDB databases; default 10000). */
  maxTopics?: number;
  /** After a failed commit, appends are refused synchronously for this long (default 1000 ms). */
  failureBackoffMs?: number;
  /** Appends are refused while the log's file system has less free space (default 256 MiB). */
  minFreeDiskBytes?: number;
  /** How often the free disk space is read (default 1000 ms). */
  diskCheckIntervalMs?: number;
}

/** The two handles of a topic's database: records decoded, or only their sizes. */
interface TopicStore {
  db: Database<Buffer, number>;
  sizes: Database<RecordMeta, number>;
}

interface TopicState {
  /** Opened on the first append (a topic known only from its floor has none). */
  store: TopicStore | undefined;
  /** Last assigned offset. */
  next: number;
  /** Highest durable offset. */
  durable: number;
  /** Lowest offset still kept (durable + 1 when no durable record is kept). */
  tail: number;
  /** Stored bytes of the topic's records (encoded value + key), in flight ones included. */
  bytes: number;
  /** Bytes of the pages of the topic's database at the last look (see usedBytes). */
  pages: number;
  /** Highest offset removed (stored in `floors` with each removal; never goes down). */
  floor: number;
}

/** What a range scan over the `sizes` handle yields per record. */
interface RecordMeta {
  size: number;
  receivedAt: number;
}

/** Retention's removal of a topic's records below offset `below`; `bytes` were counted for them. */
interface RemovalJob {
  topic: string;
  state: TopicState;
  below: number;
  bytes: number;
}

const DEFAULT_MAX_BYTES = 64 * 1024 ** 3;
const PAGE_SIZE = 16 * 1024;
const TOPIC_PREFIX = 't/';
const FLOORS_DB = 'floors';
/** Per-record bytes counted on top of the value (key, LMDB node header). */
const RECORD_OVERHEAD = 16;
/** LMDB database names are keys (~1978 bytes at most); topics are short ids. */
const MAX_TOPIC_BYTES = 1024;
/** Records deleted per transaction by retention. */
const REMOVAL_CHUNK = 5000;
/** A removal chunk whose commit failed is tried this often in all (failureBackoffMs apart). */
const REMOVAL_ATTEMPTS = 5;
/** MDB_APPEND: lmdb-js reads `append` from put's third argument (its typings only declare a version number there). */
const APPEND = { append: true } as unknown as number;
const passThrough = (value: Buffer): Buffer => value;
/** Reads hand out a copy of the stored bytes; they are decoded only if someone asks (see StoredRecord). */
const RECORD_CODEC = { encoder: { encode: passThrough, decode: copyOf } } as object;
const SIZE_CODEC = { encoder: { encode: passThrough, decode: decodeMeta } } as object;

export class LmdbEventLog implements EventLog {
  private readonly topics = new Map<string, TopicState>();
  private readonly listeners = new Map<string, Set<(headOffset: number) => void>>();
  /** Topics whose durable head moved since the last notification round. */
  private readonly toNotify = new Set<string>();
  private notifyScheduled = false;
  /** Sum of the topics' `pages`, and the topics whose pages changed since (see usedBytes). */
  private pagesBytes = 0;
  private readonly stalePages = new Set<TopicState>();
  private pagesReadAt = 0;
  /** Stored bytes committed since the pages were read (appends less removals). */
  private committedSincePages = 0;
  /** Stored bytes of appends, and of removals, whose commit has not settled yet. */
  private unsettledAppended = 0;
  private unsettledRemoved = 0;
  /** lmdb-js promise of the last write of appends and drops; close() waits until it settles. */
  private lastWrite: Promise<unknown> = Promise.resolve();
  private readonly removals: RemovalJob[] = [];
  private removing: Promise<void> | undefined;
  private openStores = 0;
  private guardScheduled = false;
  private refuseUntil = 0;
  private closed = false;
  /** Free bytes of the file system at the last statfs, and stored bytes appended since. */
  private diskFree = Infinity;
  private appendedSinceStatfs = 0;
  private diskTimer: NodeJS.Timeout | undefined;
  private diskCheckRunning = false;

  private constructor(
    private readonly root: RootDatabase,
    private readonly floors: Database<number, string>,
    private readonly path: string,
    private readonly maxBytes: number,
    private readonly maxTopics: number,
    private readonly failureBackoffMs: number,
    private readonly minFreeDiskBytes: number,
  ) {}

  /**
   * Opens (creating if needed) the log in directory `path` and recovers every topic's head and
   * tail offsets and byte count by one scan over the records' keys and value sizes. Databases
   * of topics left empty are deleted (their floors stay).
   */
  static open(path: string, options: LmdbEventLogOptions = {}): LmdbEventLog {
    const maxBytes = options.maxBytes ?? DEFAULT_MAX_BYTES;
    if (!(maxBytes > 0)) throw new Error(`maxBytes must be positive, got ${maxBytes}`);
    const maxTopics = options.maxTopics ?? 10_000;
    const root = open({
      path,
      // Put promises resolve after the synced commit; never noSync.
      overlappingSync: false,
      noSync: false,
      compression: false,
      // Initial address space only: lmdb-js grows the map when it fills.
      mapSize: Math.min(Math.max(2 * maxBytes, 16 * 1024 ** 2), 2 ** 40),
      maxDbs: maxTopics + 1,
      pageSize: PAGE_SIZE,
    });
    try {
      const floors = root.openDB<number, string>(FLOORS_DB, { encoding: 'json' });
      const log = new LmdbEventLog(root, floors, path, maxBytes, maxTopics, options.failureBackoffMs ?? 1000, options.minFreeDiskBytes ?? 256 * 1024 ** 2);
      log.recover();
      log.diskFree = freeBytes(statfsSync(path));
      log.diskTimer = setInterval(() => log.checkDisk(), options.diskCheckIntervalMs ?? 1000);
      log.diskTimer.unref();
      return log;
    } catch (err) {
      void root.close();
      throw err;
    }
  }

  append(topic: string, records: IngestRecord[]): AppendResult {
    if (this.closed) throw new Error('event log is closed');
    const state = this.state(topic);
    if (records.length === 0) return { firstOffset: state.next + 1, lastOffset: state.next, durable: Promise.resolve() };
    if (this.refuseUntil > 0) {
      if (Date.now() < this.refuseUntil) throw new EventLogFullError('event log: the last commit failed (disk full or I/O error); try again later');
      this.refuseUntil = 0;
    }
    const values = encodeRecords(records);
    let bytes = 0;
    for (const v of values) bytes += v.length + RECORD_OVERHEAD;
    const used = this.usedBytes();
    if (used + bytes > this.maxBytes) {
      throw new EventLogFullError(`event log is full: ${used} of ${this.maxBytes} bytes used, ${bytes} more requested`);
    }
    const free = this.diskFree - this.appendedSinceStatfs - bytes;
    if (free < this.minFreeDiskBytes) {
      throw new EventLogFullError(`event log: disk nearly full (${Math.max(0, free)} bytes free, ${this.minFreeDiskBytes} kept free)`);
    }
    const store = (state.store ??= this.openStore(topic));

    const firstOffset = state.next + 1;
    const lastOffset = firstOffset + values.length - 1;
    // MDB_APPEND: each put is its own conditional write, resolving false if its key were not
    // the topic's greatest (which the offset counter rules out).
    let written: Promise<boolean | boolean[]>;
    if (values.length === 1) {
      written = store.db.put(firstOffset, values[0], APPEND);
    } else {
      const puts: Promise<boolean>[] = [];
      for (let i = 0; i < values.length; i++) puts.push(store.db.put(firstOffset + i, values[i], APPEND));
      written = Promise.all(puts);
    }
    state.next = lastOffset;
    state.bytes += bytes;
    this.unsettledAppended += bytes;
    this.appendedSinceStatfs += bytes;
    this.afterWrite();
    const durable = written.then(
      (ok) => {
        this.unsettledAppended -= bytes;
        this.committedSincePages += bytes;
        this.stalePages.add(state);
        if (ok !== true && !(Array.isArray(ok) && ok.every((r) => r === true))) {
          throw new Error(`event log: offsets ${firstOffset}-${lastOffset} of ${topic} were not above the topic's last key`);
        }
        if (lastOffset > state.durable) {
          state.durable = lastOffset;
          this.scheduleNotify(topic);
        }
      },
      async (err: unknown) => {
        this.unsettledAppended -= bytes;
        const cause = await commitCause(err);
        if (state.tail <= lastOffset) {
          state.bytes -= bytes;
          // The batch's offsets stay empty; if it began at the tail, the tail moves past it.
          if (state.tail === firstOffset) state.tail = lastOffset + 1;
        }
        this.refuseUntil = Date.now() + this.failureBackoffMs;
        throw new EventLogFullError(`event log: commit failed: ${describe(cause)}`, { cause });
      },
    );
    // The caller may not wait (sync.wait=false): a failure must not become an unhandled rejection.
    durable.catch(() => undefined);
    this.lastWrite = written;
    return { firstOffset, lastOffset, durable };
  }

  read(topic: string, afterOffset: number, limit: number): LoggedRecord[] {
    const state = this.topics.get(topic);
    if (!state?.store || limit <= 0) return [];
    const from = Math.max(afterOffset + 1, state.tail);
    if (from > state.durable) return [];
    const out: LoggedRecord[] = [];
    for (const { key, value } of state.store.db.getRange({ start: from, end: state.durable + 1, limit })) {
      out.push(new StoredRecord(key, value));
    }
    return out;
  }

  async fetch(topic: string, afterOffset: number, limit: number): Promise<LoggedRecord[]> {
    return this.read(topic, afterOffset, limit);
  }

  /** Nothing to do: every record is at hand, and consumers keep their own positions. */
  acknowledge(): void {}

  release(): void {}

  /** One node has every topic. */
  readonly coordinated = false;

  claim(): void {}

  onOwnership(): () => void {
    return () => undefined;
  }

  headOffset(topic: string): number {
    return this.topics.get(topic)?.durable ?? 0;
  }

  tailOffset(topic: string): number {
    const state = this.topics.get(topic);
    return state ? Math.min(state.tail, state.durable + 1) : 1;
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
   * Per topic, from its tail on: removes the durable records received before `now - maxAgeMs`
   * (the scan stops at the first younger record; receive times ascend with offsets up to clock
   * steps), then the oldest ones while the topic holds more than `maxBytesPerTopic`.
   */
  applyRetention(policy: RetentionPolicy, now = Date.now()): Map<string, number> {
    if (this.closed) throw new Error('event log is closed');
    const removed = new Map<string, number>();
    const cutoff = now - policy.maxAgeMs;
    for (const [topic, state] of this.topics) {
      if (!state.store || state.tail > state.durable) continue;
      let count = 0;
      let freed = 0;
      let newTail = state.durable + 1;
      for (const { key, value } of state.store.sizes.getRange({ start: state.tail, end: state.durable + 1 })) {
        if (!(value.receivedAt < cutoff) && state.bytes - freed <= policy.maxBytesPerTopic) {
          newTail = key;
          break;
        }
        freed += value.size + RECORD_OVERHEAD;
        count++;
      }
      if (count === 0) continue;
      state.tail = newTail;
      state.bytes -= freed;
      removed.set(topic, count);
      this.refuseUntil = 0;
      this.unsettledRemoved += freed;
      this.removals.push({ topic, state, below: newTail, bytes: freed });
      this.removing ??= this.runRemovals();
    }
    return removed;
  }

  /**
   * Removes every record of the topic, in one transaction (with the appends still in flight:
   * the removal is queued behind them); resolves once that is committed. Reads see an empty
   * topic at once; appends go on after the last offset.
   */
  async dropTopic(topic: string): Promise<void> {
    if (this.closed) throw new Error('event log is closed');
    const state = this.topics.get(topic);
    if (!state?.store || state.tail > state.next) return;
    const bytes = state.bytes;
    state.tail = state.next + 1;
    state.durable = Math.max(state.durable, state.next);
    state.bytes = 0;
    this.toNotify.delete(topic);
    this.refuseUntil = 0;
    this.unsettledRemoved += bytes;
    state.floor = Math.max(state.floor, state.next);
    const cleared = handled(this.floors.put(topic, state.floor), state.store.db.clearAsync() as Promise<unknown> as Promise<boolean>);
    this.afterWrite();
    this.lastWrite = cleared;
    try {
      await cleared;
      this.committedSincePages -= bytes;
      this.stalePages.add(state);
    } catch (err) {
      const cause = await commitCause(err);
      throw new Error(`event log: dropping ${topic} failed: ${describe(cause)}`, { cause });
    } finally {
      this.unsettledRemoved -= bytes;
    }
  }

  /** Waits for the pending commits (appends' durable promises settle first), then closes LMDB. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    clearInterval(this.diskTimer);
    await this.removing;
    await settled(this.lastWrite);
    await this.root.close();
  }

  /**
   * What `maxBytes` bounds: the bytes of the pages that hold records (LMDB's count), plus the
   * stored bytes written since (appends less removals, committed or not). The pages of the
   * topics written to are read again at most once a second, every 50 ms above 90% of the
   * budget (reading one topic's costs some 15-50 µs).
   */
  usedBytes(): number {
    const estimate = (): number => Math.max(0, this.pagesBytes + this.committedSincePages + this.unsettledAppended - this.unsettledRemoved);
    if (this.stalePages.size > 0 && !this.closed) {
      const now = Date.now();
      if (now - this.pagesReadAt >= (estimate() > 0.9 * this.maxBytes ? 50 : 1000)) {
        for (const state of this.stalePages) {
          if (!state.store) continue;
          const s = state.store.db.getStats() as { treeBranchPageCount: number; treeLeafPageCount: number; overflowPages: number; pageSize: number };
          const pages = (s.treeBranchPageCount + s.treeLeafPageCount + s.overflowPages) * s.pageSize;
          this.pagesBytes += pages - state.pages;
          state.pages = pages;
        }
        this.stalePages.clear();
        this.committedSincePages = 0;
        this.pagesReadAt = now;
      }
    }
    return estimate();
  }

  /** Readiness: the checks `append` makes, for a record of no size. */
  async ready(): Promise<string | undefined> {
    if (this.closed) return 'the event log is closed';
    if (this.refuseUntil > Date.now()) return 'the last commit of the event log failed (disk full or I/O error)';
    const used = this.usedBytes();
    if (used >= this.maxBytes) return `the event log is full (${used} of ${this.maxBytes} bytes)`;
    const free = this.diskFree - this.appendedSinceStatfs;
    if (free < this.minFreeDiskBytes) return `the disk of the event log is nearly full (${Math.max(0, free)} bytes free, ${this.minFreeDiskBytes} kept free)`;
    return undefined;
  }

  bytesHeld(): Map<string, number> {
    return new Map(this.topicNames().map((t) => [t, this.topicBytes(t)]));
  }

  /** Stored bytes of one topic's records, as retention's `maxBytesPerTopic` counts them. */
  topicBytes(topic: string): number {
    return this.topics.get(topic)?.bytes ?? 0;
  }

  /** Names of the topics that hold records (or have appends in flight). */
  topicNames(): string[] {
    return [...this.topics].filter(([, s]) => s.tail <= s.next).map(([name]) => name);
  }

  private state(topic: string): TopicState {
    let state = this.topics.get(topic);
    if (!state) {
      if (Buffer.byteLength(topic) > MAX_TOPIC_BYTES) throw new Error(`topic name longer than ${MAX_TOPIC_BYTES} bytes`);
      state = { store: undefined, next: 0, durable: 0, tail: 1, bytes: 0, pages: 0, floor: 0 };
      this.topics.set(topic, state);
    }
    return state;
  }

  private openStore(topic: string): TopicStore {
    if (this.openStores >= this.maxTopics) throw new EventLogFullError(`event log: too many topics (maxTopics ${this.maxTopics})`);
    const name = TOPIC_PREFIX + topic;
    const store = { db: this.root.openDB<Buffer, number>(name, RECORD_CODEC), sizes: this.root.openDB<RecordMeta, number>(name, SIZE_CODEC) };
    this.openStores++;
    return store;
  }

  private recover(): void {
    const names: string[] = [];
    for (const key of this.root.getKeys()) {
      if (typeof key === 'string' && key.startsWith(TOPIC_PREFIX)) names.push(key.slice(TOPIC_PREFIX.length));
    }
    for (const topic of names) {
      const store = this.openStore(topic);
      let state: TopicState | undefined;
      for (const { key, value } of store.sizes.getRange({})) {
        state ??= { store, next: key, durable: key, tail: key, bytes: 0, pages: 0, floor: 0 };
        state.next = state.durable = key;
        state.bytes += value.size + RECORD_OVERHEAD;
      }
      if (state) {
        this.topics.set(topic, state);
        this.stalePages.add(state);
      } else {
        // Emptied by retention or dropTopic: give its handle back (the floor keeps its offsets).
        store.db.dropSync();
        this.openStores--;
      }
    }
    for (const { key: topic, value: floor } of this.floors.getRange({})) {
      const state = this.topics.get(topic);
      if (!state) this.topics.set(topic, { store: undefined, next: floor, durable: floor, tail: floor + 1, bytes: 0, pages: 0, floor });
      else {
        state.floor = floor;
        if (floor > state.next) state.next = state.durable = floor;
      }
    }
  }

  /** Works through retention's removals, one chunk per transaction; close() waits for it. */
  private async runRemovals(): Promise<void> {
    try {
      for (let job = this.removals.shift(); job; job = this.removals.shift()) {
        try {
          await this.runRemoval(job);
        } catch {
          // Given up: the records stay hidden below the tail until the next open.
        }
      }
    } finally {
      // No await between the last shift() and here: a job queued later starts a new run.
      this.removing = undefined;
    }
  }

  private async runRemoval(job: RemovalJob): Promise<void> {
    const store = job.state.store!;
    let left = job.bytes;
    try {
      let attempts = 0;
      for (;;) {
        const keys: number[] = [];
        let chunkBytes = 0;
        for (const { key, value } of store.sizes.getRange({ start: 0, end: job.below, limit: REMOVAL_CHUNK })) {
          keys.push(key);
          chunkBytes += value.size + RECORD_OVERHEAD;
        }
        if (keys.length === 0) return;
        // The floor goes with the removal: a topic emptied and reopened goes on after it.
        job.state.floor = Math.max(job.state.floor, job.below - 1);
        let last = this.floors.put(job.topic, job.state.floor);
        for (const key of keys) last = handled(last, store.db.remove(key));
        this.afterWrite();
        try {
          await last;
        } catch (err) {
          const cause = await commitCause(err);
          if (++attempts >= REMOVAL_ATTEMPTS || this.closed) throw new Error(`event log: removing records of ${job.topic} failed: ${describe(cause)}`, { cause });
          await new Promise((resolve) => setTimeout(resolve, this.failureBackoffMs));
          continue;
        }
        attempts = 0;
        this.stalePages.add(job.state);
        const counted = Math.min(left, chunkBytes);
        left -= counted;
        this.unsettledRemoved -= counted;
        this.committedSincePages -= counted;
      }
    } finally {
      this.unsettledRemoved -= left;
    }
  }

  /**
   * lmdb-js ends each event-turn batch with one more instruction whose commit promise nobody
   * holds; when that commit fails, the promise rejects unhandled (which ends a Node process).
   * Once per turn, after lmdb-js's own end-of-turn task, this attaches a handler to it through
   * `committed` (the current commit promise).
   */
  private afterWrite(): void {
    if (this.guardScheduled) return;
    this.guardScheduled = true;
    setImmediate(() => {
      this.guardScheduled = false;
      this.floors.committed.then(undefined, () => undefined);
    });
  }

  private checkDisk(): void {
    if (this.diskCheckRunning || this.closed) return;
    this.diskCheckRunning = true;
    const counted = this.appendedSinceStatfs;
    statfs(this.path)
      .then((stats) => {
        this.diskFree = freeBytes(stats);
        this.appendedSinceStatfs = Math.max(0, this.appendedSinceStatfs - counted);
      })
      .catch(() => undefined)
      .finally(() => {
        this.diskCheckRunning = false;
      });
  }

  private scheduleNotify(topic: string): void {
    if (!this.listeners.has(topic)) return;
    this.toNotify.add(topic);
    if (this.notifyScheduled) return;
    this.notifyScheduled = true;
    // Queued behind the durable handlers of the same commit: one call per topic and commit.
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
 * Writes of one turn share one transaction and usually one lmdb-js commit promise, but not
 * always. The caller handles the last one; any other is marked handled here, so that a failed
 * commit never rejects a promise nobody listens to.
 */
function handled(previous: Promise<boolean> | undefined, next: Promise<boolean>): Promise<boolean> {
  if (previous && previous !== next) previous.catch(() => undefined);
  return next;
}

function settled(p: Promise<unknown> | undefined): Promise<void> {
  return Promise.resolve(p).then(
    () => undefined,
    () => undefined,
  );
}

/**
 * lmdb-js rejects the writes of a failed commit with a generic error whose `commitError` is a
 * promise rejected with lmdb's error (message and numeric `code`: errno or MDB_* code).
 */
async function commitCause(err: unknown): Promise<unknown> {
  const commitError = (err as { commitError?: Promise<unknown> } | null)?.commitError;
  if (!commitError || typeof commitError.then !== 'function') return err;
  // lmdb-js rejects it in the callback that rejects the writes; the timer is a safety net.
  return Promise.race([
    commitError.then(
      () => err,
      (e: unknown) => e,
    ),
    new Promise<unknown>((resolve) => setTimeout(() => resolve(err), 50).unref()),
  ]);
}

function freeBytes(stats: { bavail: number | bigint; bsize: number | bigint }): number {
  return Number(stats.bavail) * Number(stats.bsize);
}

function describe(err: unknown): string {
  if (err instanceof Error) {
    const code = (err as { code?: unknown }).code;
    return code !== undefined ? `${err.message} (code ${String(code)})` : err.message;
  }
  return String(err);
}

function decodeMeta(bytes: Uint8Array, size?: unknown): RecordMeta {
  const length = typeof size === 'number' ? size : bytes.length;
  return { size: length, receivedAt: encodedReceivedAt(bytes) };
}

/** lmdb-js hands decoders a buffer it reuses: the value's bytes are copied out. */
function copyOf(bytes: Uint8Array, size?: unknown): Buffer {
  const length = typeof size === 'number' ? size : bytes.length;
  return Buffer.from(bytes.subarray(0, length));
}

/**
 * A record read from the log: its stored bytes, decoded on first use. The sinks' path never
 * decodes on the event loop: the render worker gets the bytes (LoggedRecord.encoded).
 */
class StoredRecord implements LoggedRecord {
  private decoded: IngestRecord | undefined;

  constructor(
    readonly offset: number,
    readonly encoded: Buffer,
  ) {}

  get record(): IngestRecord {
    return (this.decoded ??= decodeRecord(this.encoded));
  }
}
