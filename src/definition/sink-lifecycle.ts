import type { MetadataStore } from '../connectors/metadata/store.js';
import type { TokenService } from '../storage/tokens.js';
import type { Sink, Source } from './model.js';
import { keys } from './repository.js';

/** What sinks need from the table storage (implemented by storage/tables.ts). */
export interface SinkTables {
  ensureTable(tableId: string, columns: string[], metadata: Record<string, string>): Promise<{ created: boolean }>;
  dropTable(tableId: string): Promise<void>;
  dropBucket(bucketId: string): Promise<void>;
}

const tokenKey = (s: Pick<Sink, 'branchId' | 'sourceId' | 'sinkId'>) => `definition/sinkToken/${s.branchId}/${s.sourceId}/${s.sinkId}`;

export function bucketOf(tableId: string): string {
  return tableId.split('.').slice(0, 2).join('.');
}

/**
 * The storage side effects of a sink's life: its destination table (rule 1: an existing table
 * must match the mapping, otherwise it is created) and its own token (write on the table's
 * bucket, read of all file uploads), which exists only while the sink is active.
 */
export class SinkLifecycle {
  constructor(
    private readonly store: MetadataStore,
    private readonly tokens: TokenService,
    private readonly tables: SinkTables,
  ) {}

  async ensureTable(sink: Sink): Promise<void> {
    await this.tables.ensureTable(
      sink.table.tableId,
      sink.table.mapping.columns.map((c) => c.name),
      { 'KBC.stream.source.id': sink.sourceId, 'KBC.stream.sink.id': sink.sinkId },
    );
  }

  /** Creates (or re-creates) the sinks' tokens; the old token is deleted after the new one is saved. */
  async activate(sinks: Sink[]): Promise<void> {
    for (const sink of sinks) {
      this.store.transact((tx) => {
        const old = tx.get<string>(tokenKey(sink));
        const { token } = this.tokens.create({
          description: `[_internal] Stream Sink ${sink.sourceId}/${sink.sinkId}`,
          bucketPermissions: { [bucketOf(sink.table.tableId)]: 'write' },
          canReadAllFileUploads: true,
        }, tx);
        tx.put(tokenKey(sink), token.id);
        if (old !== undefined) this.tokens.delete(old, tx);
      });
    }
  }

  /** Deletes the sinks' tokens (disable, delete). Data flow stops with the token. */
  async deactivate(sinks: Sink[], _reason: 'disabled' | 'deleted'): Promise<void> {
    for (const sink of sinks) {
      this.store.transact((tx) => {
        const old = tx.get<string>(tokenKey(sink));
        if (old !== undefined) this.tokens.delete(old, tx);
        tx.delete(tokenKey(sink));
      });
    }
  }

  tokenIdOf(sink: Sink): string | undefined {
    return this.store.get<string>(tokenKey(sink));
  }

  /** Cascade delete: sinks, their versions and tokens, their tables, and the emptied buckets. */
  async purgeSinksOfSource(branchId: number, source: Source, sinks: Sink[]): Promise<void> {
    await this.deactivate(sinks, 'deleted');
    const buckets = new Set<string>();
    for (const sink of sinks) {
      await this.tables.dropTable(sink.table.tableId);
      buckets.add(bucketOf(sink.table.tableId));
      this.store.transact((tx) => {
        tx.delete(keys.sink(branchId, source.sourceId, sink.sinkId));
        for (const v of tx.list(keys.sinkVersions(branchId, source.sourceId, sink.sinkId))) tx.delete(v.key);
      });
    }
    for (const bucket of buckets) await this.tables.dropBucket(bucket);
  }
}
