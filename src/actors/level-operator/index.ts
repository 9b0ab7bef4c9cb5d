import { join } from 'node:path';
import type { MetadataStore } from '../../ports/metadata-store.js';
import type { Logger } from '../../logger.js';
import { retryDelayMs } from '../../levels/triggers.js';
import type { TableService } from '../../storage/tables.js';
import { SinkClaimedError } from '../../ports/target.js';
import type { FileEntry, SliceEntry } from '../../model/levels.js';
import type { FilesRepository } from '../../levels/files-repository.js';
import { REFERENCE_RETENTION, type FileExpiry } from '../../levels/expiry.js';
import { removeSliceFiles, stagedPaths } from '../../levels/staging.js';
import type { Staging } from '../../ports/staging.js';
import { importFile } from '../../levels/import.js';
import { removeLocalFiles } from '../../levels/local.js';
import { Actor } from '../actor.js';
import type { Metrics } from '../../observability/metrics.js';
import { LevelOperatorEvents } from './events.js';

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
  /** Upload and import times, failed imports, rows per table, fencing refusals (events.ts). */
  metrics?: Metrics;
}

type Message = { type: 'tick'; now: number };

/**
 * Moves closed data on: closed slices are gzipped to staging, files
 * whose slices are all staged are imported into their table in one transaction carrying the
 * file's import id (a retried import is a no-op). A failed upload or import is retried with the
 * reference backoff; a file that could not be imported is kept for the staging retention
 * (7 days) and then expired with a logged event.
 */
export class LevelOperator extends Actor<Message> {
  private readonly events: LevelOperatorEvents;

  constructor(private readonly deps: LevelOperatorDeps) {
    super('level operator', deps.logger.child({ component: 'level-operator' }));
    this.events = new LevelOperatorEvents(this.log, deps.metrics);
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
    const { store, files, dataDir, staging } = this.deps;
    const waiting = store.list<SliceEntry>('storage/slice/').map((e) => e.value).filter((s) => (s.state === 'closing' || s.state === 'uploading') && this.due(s, now));
    for (const slice of waiting) {
      const key = { branchId: slice.branchId, sourceId: slice.sourceId, sinkId: slice.sinkId, fileOpenedAt: slice.fileOpenedAt, openedAt: slice.openedAt };
      try {
        if (slice.state === 'closing') files.sliceUploading(key);
        const started = performance.now();
        const staged = await staging.stage(slice, join(dataDir, slice.localPath));
        this.events.sliceUploaded((performance.now() - started) / 1000);
        files.sliceUploaded(key, staged);
        await removeLocalFiles(dataDir, [slice]);
      } catch (err) {
        const reason = err instanceof Error ? err.message : String(err);
        const current = files.getSlice(key);
        if (current) {
          const attempt = (current.retryAttempt ?? 0) + 1;
          files.markFailed(current, `Slice upload failed: ${reason}`, new Date(now + retryDelayMs(attempt, this.deps.retryBaseMs)));
        }
        this.events.sliceUploadFailed(key, err);
      }
    }
  }

  private async importClosedFiles(now: number): Promise<void> {
    const { store, files, tables, staging } = this.deps;
    const closed = store.list<FileEntry>('storage/file/').map((e) => e.value).filter((f) => (f.state === 'closing' || f.state === 'importing') && this.due(f, now));
    for (const file of closed) {
      const key = { branchId: file.branchId, sourceId: file.sourceId, sinkId: file.sinkId, openedAt: file.openedAt };
      const slices = files.listSlices(key);
      if (slices.some((s) => s.state !== 'uploaded' && s.state !== 'imported')) continue; // still uploading
      try {
        if (file.state === 'closing') files.fileImporting(key);
        const started = performance.now();
        const result = await importFile(tables, staging, file, slices, this.deps.owner);
        // The rows are in the table from here on (the target's transaction): counted and logged
        // now, whatever happens to the bookkeeping below.
        this.events.fileImported(key, file.tableId, result, (performance.now() - started) / 1000);
        files.fileImported(key);
        await staging.remove(stagedPaths(slices));
      } catch (err) {
        if (err instanceof SinkClaimedError) {
          this.events.fileFenced(key, file.tableId, err.claimedBy);
          await removeSliceFiles(this.deps.dataDir, staging, files.discardFile(key));
          continue;
        }
        const reason = err instanceof Error ? err.message : String(err);
        const current = files.getFile(key);
        const attempt = (current?.retryAttempt ?? 0) + 1;
        const retry = current && { attempt, retryAfter: new Date(now + retryDelayMs(attempt, this.deps.retryBaseMs)) };
        this.events.fileImportFailed(key, file.tableId, reason, retry);
        if (current && retry) files.markFailed(current, `File import failed: ${reason}`, retry.retryAfter);
      }
    }
  }

  private expire(now: number): void {
    const { files, slices } = this.deps.expiry.deleteExpired(new Date(now), { ...REFERENCE_RETENTION, activeFileExpirationMs: this.deps.stagingRetentionMs });
    for (const f of files) {
      if (f.state !== 'imported') this.events.fileExpiredUnimported(f);
    }
    void removeSliceFiles(this.deps.dataDir, this.deps.staging, slices).catch((err: unknown) => this.events.expiredFilesNotRemoved(err));
  }
}
