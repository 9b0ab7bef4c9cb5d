/**
 * Metadata port: an ordered key-value store with atomic, durable transactions.
 * Keys are '/'-separated paths; listing by prefix returns keys in ascending order, which is
 * the order the APIs page in.
 */
/**
 * A part of the metadata's keys, declared next to the module that owns them (its repository):
 * every key that module writes starts with `prefix`, and no other space's prefix starts like
 * it. The composition root collects the declarations (server.ts KEY_SPACES) and passes them to
 * the store; cluster mode replicates the shared ones (replicated-store.ts) and keeps the others
 * on the node.
 */
export interface KeySpace {
  /** The start of every key of the space (a whole key for a space of one key). */
  prefix: string;
  /** Replicated between the cluster's nodes (cluster mode); otherwise node-local. */
  shared: boolean;
  /**
   * Shared keys written in the background, not by API calls (the nodes' coordination, what the
   * sink writers record): no call waits for them or fails because of them, and other nodes'
   * changes of them are not announced to onRemoteChange listeners.
   */
  background?: boolean;
}

export interface Entry<T> {
  key: string;
  value: T;
}

export interface ListOptions {
  /** Only keys strictly greater than prefix + after. */
  after?: string;
  limit?: number;
}

export interface MetadataReader {
  get<T>(key: string): T | undefined;
  list<T>(prefix: string, options?: ListOptions): Entry<T>[];
  count(prefix: string): number;
}

export interface MetadataTx extends MetadataReader {
  put(key: string, value: unknown): void;
  delete(key: string): void;
}

export interface MetadataStore extends MetadataReader {
  /**
   * Runs fn in one transaction: reads see the committed state plus the transaction's own
   * writes, and all writes are committed together and durably before this returns. Node runs
   * fn without interleaving, so check-then-write inside fn is race-free within the process.
   */
  transact<R>(fn: (tx: MetadataTx) => R): R;
  /**
   * The same, but the durable commit (the disk flush) happens off the event loop: fn runs when
   * the store is ready to write, and the promise resolves with its result once the commit is
   * durable. For the hot path (a sink's batch commits), where a synchronous flush would stall
   * ingestion on the same thread.
   */
  transactAsync<R>(fn: (tx: MetadataTx) => R): Promise<R>;
  /** A position in this store's writes, to pass to settled() later (0 for a store of one node). */
  writeMark(): number;
  /**
   * Resolves once every write so far is durable wherever this store shares it (cluster mode:
   * the metadata log all nodes read); at once for a store of one node. Rejects when a write
   * made after `mark` was not taken there. A write API answers after this, so that another
   * node can see what the answer confirms.
   */
  settled(mark?: number): Promise<void>;
  /**
   * Resolves once this node has applied what the shared log held when called (cluster mode; at
   * most `timeoutMs`, then it resolves anyway); at once for a store of one node. A lookup that
   * found nothing asks this before it answers "not found": a task, token or definition another
   * node has just confirmed may not have reached this node yet.
   */
  caughtUp(timeoutMs?: number): Promise<void>;
  /** Calls the listener with the keys of changes other nodes made, after they were applied here (not for the background key spaces: the nodes' coordination, `cluster/...`, and mapping failures). */
  onRemoteChange(listener: (keys: string[]) => void): () => void;
  close(): Promise<void>;
}

/**
 * `find`, and when it finds nothing, `find` again once the store caught up (cluster mode: what
 * another node has just written and confirmed may not have reached this node yet).
 */
export async function findCaughtUp<T>(store: MetadataStore, find: () => T | undefined): Promise<T | undefined> {
  const found = find();
  if (found !== undefined) return found;
  await store.caughtUp();
  return find();
}
