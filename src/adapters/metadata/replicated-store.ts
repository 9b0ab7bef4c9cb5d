/**
 * Cluster mode's metadata (docs/architecture.md "One process, every role; many processes, one Kafka"):
 * every node keeps its own LMDB view, and the keys the cluster shares (definitions, settings,
 * tasks, tokens, configurations, mapping failures, the nodes' coordination) travel through one
 * shared, ordered change log (a compacted Kafka topic, kafka-metadata-log.ts). Node-local keys
 * (the sink's files and slices on this node's disk, its positions, its jobs) never leave the
 * node. Which keys are which, the module that owns them declares (a KeySpace next to each
 * repository, collected by the composition root, server.ts KEY_SPACES).
 *
 * Writes apply locally at once (the synchronous MetadataStore contract holds: a transaction's
 * reads see its writes, the next read sees them) and are appended to the change log; `settled()`
 * resolves once the log has them durably, which the API awaits before it answers a write. Every
 * node applies every change of the log in log order, its own included, so all views converge
 * to the log's last value per key (last writer in log order wins). Two rules keep a node's own
 * view from going backwards meanwhile:
 *  - a change this node made is skipped when the node has written the key again since (the
 *    newer write is on its way through the log);
 *  - at start the node replays the whole log before it serves; keys the log does not know are
 *    removed from the local view (they were written while the log did not take them, or
 *    deleted by other nodes while this one was down), unless the log is empty: then the node
 *    seeds the log with its local view (a single node becoming the first cluster node).
 */
import { randomUUID } from 'node:crypto';
import type { Entry, KeySpace, ListOptions, MetadataStore, MetadataTx } from '../../ports/metadata-store.js';

/** One key's change as the change log carries it. */
export interface MetadataChange {
  key: string;
  /** The new value; undefined = the key was deleted. */
  value: unknown;
  /** The node process that made the change (a random id per start). */
  origin: string;
  /** Per origin, increasing: orders a node's own changes of one key. */
  seq: number;
}

/** The shared, ordered change log (Kafka in production, memory in unit tests). */
export interface MetadataChangeLog {
  /** Appends changes in order; resolves once they are durable in the log. */
  append(changes: MetadataChange[]): Promise<void>;
  /**
   * Delivers every change of the log from its start, in order, batch by batch, then follows
   * new ones. Resolves once the changes that were in the log when it was called are delivered.
   */
  follow(deliver: (changes: MetadataChange[]) => void): Promise<void>;
  /** A number no other call, on any node, ever gets again (cluster ids: block-ids.ts). */
  reserve(): Promise<number>;
  /** Resolves once what the log holds now was delivered (at most `timeoutMs`; then it resolves anyway). */
  caughtUp(timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

/**
 * Which keys travel through the change log: those of the shared key spaces the repositories
 * declare (KeySpace, collected by the composition root). Everything else stays on the node
 * (this node's files, slices and positions, its jobs, markers of its own work).
 */
export class KeyClassifier {
  private readonly shared: readonly string[];
  private readonly background: readonly string[];

  constructor(spaces: readonly KeySpace[]) {
    this.shared = spaces.filter((s) => s.shared).map((s) => s.prefix);
    this.background = spaces.filter((s) => s.shared && s.background).map((s) => s.prefix);
  }

  /** The prefixes of the shared keys. */
  get sharedPrefixes(): readonly string[] {
    return this.shared;
  }

  isShared(key: string): boolean {
    for (const p of this.shared) if (key.startsWith(p)) return true;
    return false;
  }

  /** A shared key written in the background (KeySpace.background). */
  isBackground(key: string): boolean {
    return this.background.some((p) => key.startsWith(p));
  }
}

export class ReplicatedMetadataStore implements MetadataStore {
  private seq = 0;
  /** The seq of the last change outside the background key spaces (writeMark). */
  private foregroundSeq = 0;
  /** Last seq this process wrote per key (own log changes older than it are skipped). */
  private readonly lastOwnWrite = new Map<string, number>();
  private readonly listeners = new Set<(keys: string[]) => void>();
  /** The append of everything written so far (appends are chained: the log keeps their order). */
  private appended: Promise<void> = Promise.resolve();
  /** The last append the log refused, and the seq of its last change. */
  private lastFailure: { through: number; error: Error } | undefined;
  /** Keys met while replaying the log at start (undefined once caught up). */
  private replayed: Set<string> | undefined = new Set();
  private closed = false;

  private constructor(
    private readonly local: MetadataStore,
    private readonly log: MetadataChangeLog,
    /** This node process (its changes carry it; the server's node id). */
    readonly origin: string,
    private readonly keys: KeyClassifier,
  ) {}

  /**
   * Replays the change log into the local view (at most `replayTimeoutMs`), then follows it.
   * `keySpaces`: every repository's keys (the shared ones are replicated).
   */
  static async open(local: MetadataStore, log: MetadataChangeLog, keySpaces: readonly KeySpace[], options: { origin?: string; replayTimeoutMs?: number } = {}): Promise<ReplicatedMetadataStore> {
    const { origin = randomUUID(), replayTimeoutMs = 60_000 } = options;
    const store = new ReplicatedMetadataStore(local, log, origin, new KeyClassifier(keySpaces));
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`the cluster metadata log was not replayed within ${replayTimeoutMs} ms`)), replayTimeoutMs);
    });
    try {
      await Promise.race([log.follow((changes) => store.apply(changes)), timeout]);
    } catch (err) {
      await log.close().catch(() => undefined);
      throw err;
    } finally {
      clearTimeout(timer);
    }
    store.finishReplay();
    return store;
  }

  get<T>(key: string): T | undefined {
    return this.local.get<T>(key);
  }

  list<T>(prefix: string, options?: ListOptions): Entry<T>[] {
    return this.local.list<T>(prefix, options);
  }

  count(prefix: string): number {
    return this.local.count(prefix);
  }

  transact<R>(fn: (tx: MetadataTx) => R): R {
    const changes: MetadataChange[] = [];
    const result = this.local.transact((tx) => fn(this.recording(tx, changes)));
    this.publish(changes);
    return result;
  }

  async transactAsync<R>(fn: (tx: MetadataTx) => R): Promise<R> {
    const changes: MetadataChange[] = [];
    const result = await this.local.transactAsync((tx) => fn(this.recording(tx, changes)));
    this.publish(changes);
    return result;
  }

  /**
   * The seq of the last change an API call could have made: the nodes' own coordination keys
   * (`cluster/...`: heartbeats, hand-over marks, statistics, orders; KeySpace.background) are written in the background
   * and neither make a call wait nor fail it (see publish).
   */
  writeMark(): number {
    return this.foregroundSeq;
  }

  /** Resolves once every shared change written so far is durable in the change log. */
  settled(mark = 0): Promise<void> {
    return this.appended.then(() => {
      if (this.lastFailure && this.lastFailure.through > mark) throw this.lastFailure.error;
    });
  }

  /** See MetadataStore.caughtUp: waits for the log's consumer to pass the log's head of now. */
  caughtUp(timeoutMs = 2000): Promise<void> {
    return this.log.caughtUp(timeoutMs).catch(() => undefined);
  }

  /** See MetadataChangeLog.reserve. */
  reserveBlock(): Promise<number> {
    return this.log.reserve();
  }

  /** Called with the keys after changes of other nodes were applied to the local view (background keys left out). */
  onRemoteChange(listener: (keys: string[]) => void): () => void {
    this.listeners.add(listener);
    return () => this.listeners.delete(listener);
  }

  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    await this.appended.catch(() => undefined);
    await this.log.close();
    await this.local.close();
  }

  private recording(tx: MetadataTx, changes: MetadataChange[]): MetadataTx {
    return {
      get: (k) => tx.get(k),
      list: (p, o) => tx.list(p, o),
      count: (p) => tx.count(p),
      put: (k, v) => {
        tx.put(k, v);
        if (this.keys.isShared(k)) changes.push(this.change(k, v));
      },
      delete: (k) => {
        tx.delete(k);
        if (this.keys.isShared(k)) changes.push(this.change(k, undefined));
      },
    };
  }

  private change(key: string, value: unknown): MetadataChange {
    const seq = ++this.seq;
    this.lastOwnWrite.set(key, seq);
    return { key, value, origin: this.origin, seq };
  }

  private publish(changes: MetadataChange[]): void {
    if (changes.length === 0) return;
    const through = changes[changes.length - 1].seq;
    const foreground = changes.some((c) => !this.keys.isBackground(c.key));
    if (foreground) this.foregroundSeq = through;
    this.appended = this.appended.then(() =>
      this.log.append(changes).catch((err: unknown) => {
        // Kept for settled(): the API answers the write with an error; the local view has it,
        // and the next start's replay removes it again (the log never took it). A background
        // write that fails is written again on its next round (heartbeat, statistics).
        if (foreground) this.lastFailure = { through, error: err instanceof Error ? err : new Error(String(err)) };
      }),
    );
  }

  /** Applies a batch of the log in one local transaction. */
  private apply(changes: MetadataChange[]): void {
    if (this.closed) return;
    const remote: string[] = [];
    this.local.transact((tx) => {
      for (const c of changes) {
        this.replayed?.add(c.key);
        if (c.origin === this.origin) {
          const last = this.lastOwnWrite.get(c.key);
          if (last !== undefined && last > c.seq) continue;
          if (last === c.seq) this.lastOwnWrite.delete(c.key);
        } else if (!this.keys.isBackground(c.key)) {
          // Other nodes' heartbeats, statistics and orders are read when needed, not announced.
          remote.push(c.key);
        }
        if (c.value === undefined) tx.delete(c.key);
        else tx.put(c.key, c.value);
      }
    });
    if (remote.length === 0 || this.replayed) return;
    for (const listener of this.listeners) {
      try {
        listener(remote);
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  /** After the start's replay: drop local shared keys the log does not know, or seed an empty log. */
  private finishReplay(): void {
    const replayed = this.replayed!;
    this.replayed = undefined;
    const local: Entry<unknown>[] = [];
    for (const prefix of this.keys.sharedPrefixes) local.push(...this.local.list<unknown>(prefix));
    if (replayed.size === 0) {
      this.publish(local.map((e) => this.change(e.key, e.value)));
      return;
    }
    const unknown = local.filter((e) => !replayed.has(e.key));
    if (unknown.length > 0) this.local.transact((tx) => unknown.forEach((e) => tx.delete(e.key)));
  }
}
