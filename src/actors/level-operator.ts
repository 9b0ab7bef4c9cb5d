import { join } from 'node:path';
import type { MetadataStore } from '../connectors/metadata/store.js';
import type { Logger } from '../logger.js';
import { retryDelayMs } from '../levels/conditions.js';
import type { TableService } from '../storage/tables.js';
import { SinkClaimedError } from '../storage/target.js';
import { levelKeys, type FileEntry, type SliceEntry } from '../levels/model.js';
import type { FilesRepository } from '../levels/files-repository.js';
import { REFERENCE_RETENTION, type FileExpiry } from '../levels/expiry.js';
import { removeSliceFiles, stagedPaths, type Staging } from '../levels/staging.js';
import { importFile } from '../levels/import.js';
import { removeLocalFiles } from '../levels/local.js';
import { Actor } from './actor.js';
import type { Metrics } from '../observability/metrics.js';
import { parseInstanceId } from '../levels/instances.js';

export interface LevelOperatorDeps {
  store: MetadataStore;
  /** The files and slices it moves on (their states, retries). */
  files: FilesRepository;
  /** Retention: what it deletes after each round. */
  expiry: FileExpiry;
  tables: TableService;
  /** The local level's root: the data directory. */
  dataDir: string;
  staging: Staging;
  retryBaseMs: number;
  stagingRetentionMs: number;
  logger: Logger;
  /**
   * Cluster mode: this node, the owner its imports are made for. An import for a sink another
   * node has claimed since is refused by the target; the file is then dropped here (the other
   * node reads its records again from the event log).
   */
  owner?: string;
  /** Upload and import times, failed imports, rows per table, fencing refusals. */
  metrics?: Metrics;
}

type Message = { type: 'tick'; now: number };

/**
 * Moves closed data on (reference §17.5, §17.6): closed slices are gzipped to staging, files
 * whose slices are all staged are imported into their table in one transaction carrying the
 * file's import id (a retried import is a no-op). A failed upload or import is retried with the
 * reference backoff; a file that could not be imported is kept for the staging retention
 * (7 days) and then expired with a logged event.
 */
export class LevelOperator extends Actor<Message> {
  constructor(private readonly deps: LevelOperatorDeps) {
    super('level operator', deps.logger.child({ component: 'level-operator' }));
  }

  tick(now = Date.now()): void {
    this.send({ type: 'tick', now });
  }

  protected async handle(message: Message): Promise<void> {
    await this.uploadClosedSlices(message.now);
    await this.importClosedFiles(message.now);
    this.expire(message.now);
  }

  private due(entry: { retryAfter?: string }, now: number): boolean {
    return entry.retryAfter === undefined || Date.parse(entry.retryAfter) <= now;
  }

  private async uploadClosedSlices(now: number): Promise<void> {
    const { store, files: levels, dataDir, staging } = this.deps;
    const waiting = store.list<SliceEntry>('storage/slice/').map((e) => e.value).filter((s) => (s.state === 'closing' || s.state === 'uploading') && this.due(s, now));
    for (const slice of waiting) {
      const key = { branchId: slice.branchId, sourceId: slice.sourceId, sinkId: slice.sinkId, fileOpenedAt: slice.fileOpenedAt, openedAt: slice.openedAt };
      try {
        if (slice.state === 'closing') levels.sliceUploading(key);
        const started = performance.now();
        const staged = await staging.stage(slice, join(dataDir, slice.localPath));
        this.deps.metrics?.uploadDuration.observe((performance.now() - started) / 1000);
        levels.sliceUploaded(key, staged);
        await removeLocalFiles(dataDir, [slice]);
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        const current = levels.getSlice(key);
        if (current) {
          const attempt = (current.retryAttempt ?? 0) + 1;
          levels.markFailed(current, `Slice upload failed: ${reason}`, new Date(now + retryDelayMs(attempt, this.deps.retryBaseMs)));
        }
        this.log.warn({ err, slice: key }, 'slice upload failed; will retry');
      }
    }
  }

  private async importClosedFiles(now: number): Promise<void> {
    const { store, files: levels, tables, staging } = this.deps;
    const files = store.list<FileEntry>('storage/file/').map((e) => e.value).filter((f) => (f.state === 'closing' || f.state === 'importing') && this.due(f, now));
    for (const file of files) {
      const key = { branchId: file.branchId, sourceId: file.sourceId, sinkId: file.sinkId, openedAt: file.openedAt };
      const slices = levels.listSlices(key);
      if (slices.some((s) => s.state !== 'uploaded' && s.state !== 'imported')) continue; // still uploading
      try {
        if (file.state === 'closing') levels.fileImporting(key);
        const started = performance.now();
        const result = await importFile(tables, staging, file, slices, this.deps.owner);
        this.deps.metrics?.importDuration.observe((performance.now() - started) / 1000);
        if (result.inserted > 0) this.deps.metrics?.rowsImported.inc({ table: file.tableId }, result.inserted);
        levels.fileImported(key);
        this.log.info({ file: key, tableId: file.tableId, rows: result.inserted, duplicate: result.duplicate, skipped: result.skipped }, 'file imported');
        await staging.remove(stagedPaths(slices));
      } catch (err) {
        if (err instanceof SinkClaimedError) {
          this.deps.metrics?.fencingRefusals.inc();
          await removeSliceFiles(this.deps.dataDir, staging, levels.discardFile(key));
          this.log.warn({ file: key, tableId: file.tableId, claimedBy: err.claimedBy }, 'file not imported: another node took its sink over and reads its records again from the event log');
          continue;
        }
        const reason = err instanceof Error ? err.message : String(err);
        this.deps.metrics?.importsFailed.inc({ source: file.sourceId, sink: parseInstanceId(file.sinkId).sinkId });
        const current = levels.getFile(key);
        if (current) {
          const attempt = (current.retryAttempt ?? 0) + 1;
          const retryAfter = new Date(now + retryDelayMs(attempt, this.deps.retryBaseMs));
          levels.markFailed(current, `File import failed: ${reason}`, retryAfter);
          this.log.warn({ file: key, tableId: file.tableId, attempt, retryAfter, reason }, 'file import failed; staged data kept, will retry');
        }
      }
    }
  }

  private expire(now: number): void {
    const { files, slices } = this.deps.expiry.deleteExpired(new Date(now), { ...REFERENCE_RETENTION, activeFileExpirationMs: this.deps.stagingRetentionMs });
    for (const f of files) {
      if (f.state !== 'imported') {
        this.log.error({ file: levelKeys.file(f, f.openedAt), tableId: f.tableId, reason: f.retryReason }, 'file expired before it could be imported: its staged data is deleted');
      }
    }
    void removeSliceFiles(this.deps.dataDir, this.deps.staging, slices).catch((err: unknown) => this.log.warn({ err }, 'could not remove the files of expired slices'));
  }
}
