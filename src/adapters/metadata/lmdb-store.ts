import { open, type RootDatabase } from 'lmdb';
import type { Entry, ListOptions, MetadataStore, MetadataTx } from '../../ports/metadata-store.js';

/** Upper bound of every key that starts with a prefix (keys never contain U+FFFF). */
const END = '\uffff';

/** The embedded Metadata adapter: one LMDB environment in the data directory. */
export class LmdbMetadataStore implements MetadataStore {
  private readonly db: RootDatabase<unknown, string>;

  constructor(path: string) {
    this.db = open<unknown, string>({ path, compression: false });
  }

  get<T>(key: string): T | undefined {
    return this.db.get(key) as T | undefined;
  }

  list<T>(prefix: string, options: ListOptions = {}): Entry<T>[] {
    const start = options.after !== undefined ? prefix + options.after + '\u0000' : prefix;
    const out: Entry<T>[] = [];
    for (const { key, value } of this.db.getRange({ start, end: prefix + END, limit: options.limit })) {
      out.push({ key, value: value as T });
    }
    return out;
  }

  count(prefix: string): number {
    return this.db.getKeysCount({ start: prefix, end: prefix + END });
  }

  private readonly tx: MetadataTx = {
    get: (k) => this.get(k),
    list: (p, o) => this.list(p, o),
    count: (p) => this.count(p),
    put: (k, v) => void this.db.put(k, v),
    delete: (k) => void this.db.remove(k),
  };

  transact<R>(fn: (tx: MetadataTx) => R): R {
    return this.db.transactionSync(() => fn(this.tx));
  }

  transactAsync<R>(fn: (tx: MetadataTx) => R): Promise<R> {
    // lmdb runs fn inside the write transaction (reads see its own writes) and resolves after
    // the commit, flushed by its write thread.
    return this.db.transaction(() => fn(this.tx)) as Promise<R>;
  }

  /** A store of one node shares nothing: every write is settled once committed. */
  writeMark(): number {
    return 0;
  }

  settled(): Promise<void> {
    return Promise.resolve();
  }

  caughtUp(): Promise<void> {
    return Promise.resolve();
  }

  onRemoteChange(): () => void {
    return () => undefined;
  }

  async close(): Promise<void> {
    await this.db.close();
  }
}
