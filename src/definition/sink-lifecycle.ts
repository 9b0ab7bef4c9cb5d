import type { MetadataStore, MetadataTx } from '../ports/metadata-store.js';
import { TargetUnavailableError, type ColumnDefinition, type TargetTable } from '../ports/target.js';
import type { TokenService } from '../storage/tokens.js';
import type { Column, Sink, Source } from '../model/definition.js';
import { primaryKeyOf } from '../model/columns.js';
import { DomainError } from '../domain-errors.js';
import { keys } from './repository.js';
import { tableConflict } from './table-conflicts.js';

/** What sinks need from the table storage (implemented by storage/tables.ts). */
export interface SinkTables {
  /** Creates the table (types, key) or adds the mapping's new columns to it; 400 tableSchemaMismatch on a type or key it cannot take. */
  ensureTable(
    tableId: string,
    columns: readonly ColumnDefinition[],
    options: { primaryKey?: readonly string[]; metadata: Record<string, string> },
  ): Promise<{ created: boolean; added: string[] }>;
  /** The table as the target has it, or undefined. */
  findTable(tableId: string): Promise<TargetTable | undefined>;
  dropTable(tableId: string): Promise<void>;
  dropBucket(bucketId: string): Promise<void>;
}

/** A mapping's columns as its table has them: names and base types. */
export function columnDefinitions(columns: readonly Column[]): ColumnDefinition[] {
  return columns.map((c) => (c.dataType === undefined ? { name: c.name } : { name: c.name, type: c.dataType }));
}

const tokenKey = (s: Pick<Sink, 'branchId' | 'sourceId' | 'sinkId'>) => `definition/sinkToken/${s.branchId}/${s.sourceId}/${s.sinkId}`;

export function bucketOf(tableId: string): string {
  return tableId.split('.').slice(0, 2).join('.');
}

/**
 * The storage side effects of a sink's life: its destination table (created with the mapping's
 * types and primary key; an existing one gets the mapping's new columns, keeps those the
 * mapping no longer has, and refuses a type or key change) and its own token (write on the
 * table's bucket, read of all file uploads), which exists only while the sink is active.
 */
export class SinkLifecycle {
  constructor(
    private readonly store: MetadataStore,
    private readonly tokens: TokenService,
    private readonly tables: SinkTables,
  ) {}

  async ensureTable(sink: Sink): Promise<void> {
    const { columns } = sink.table.mapping;
    await this.tables.ensureTable(sink.table.tableId, columnDefinitions(columns), {
      primaryKey: primaryKeyOf(columns),
      metadata: { 'KBC.stream.source.id': sink.sourceId, 'KBC.stream.sink.id': sink.sinkId },
    });
  }

  /**
   * Refuses now (400 tableSchemaMismatch) a mapping that an existing table cannot take: a
   * column of another type, another primary key (table-conflicts.ts). Nothing is changed. When
   * the target cannot be reached the check is left to the task's ensureTable, which has the last
   * word anyway: the task then fails with the reason, as every sink change did before this check.
   */
  async checkTable(tableId: string, columns: readonly Column[]): Promise<void> {
    let table: TargetTable | undefined;
    try {
      table = await this.tables.findTable(tableId);
    } catch (err) {
      if (err instanceof TargetUnavailableError) return;
      throw err;
    }
    const conflict = table && tableConflict(table, columnDefinitions(columns), primaryKeyOf(columns));
    if (conflict) throw new DomainError('invalid', 'tableSchemaMismatch', conflict);
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

  /** Cascade delete: the sinks deactivated (tokens), their tables and the emptied buckets dropped; the definitions go with deleteSinkDefinitions. */
  async purgeSinksOfSource(branchId: number, source: Source, sinks: Sink[]): Promise<void> {
    await this.deactivate(sinks, 'deleted');
    const buckets = new Set<string>();
    for (const sink of sinks) {
      await this.tables.dropTable(sink.table.tableId);
      buckets.add(bucketOf(sink.table.tableId));
    }
    for (const bucket of buckets) await this.tables.dropBucket(bucket);
  }

  /**
   * Removes the definitions of a source's sinks, in the caller's transaction: the one that
   * removes the source too, so that no reconcile ever sees the sinks gone and the source still
   * there (it would purge their data but keep the topic, and a source created again under the
   * same id would read the old records).
   */
  deleteSinkDefinitions(tx: MetadataTx, branchId: number, sourceId: string, sinks: readonly Sink[]): void {
    for (const sink of sinks) {
      tx.delete(keys.sink(branchId, sourceId, sink.sinkId));
      for (const v of tx.list(keys.sinkVersions(branchId, sourceId, sink.sinkId))) tx.delete(v.key);
    }
  }
}
