/**
 * Everything the level operator logs and counts: uploads to staging, imports into the tables,
 * their failures, fencing refusals and expiry, one definition per happening (after Vector's
 * internal events; see actors/sink-writer/events.ts). Each writes its log line and updates its
 * metric together. The messages, fields, levels, metric names and labels are read by
 * dashboards, alerts and tests (docs/observability.md, "Observability", test/helpers/cluster.ts reads
 * 'file imported'): change them here, knowingly.
 */
import type { Logger } from '../../logger.js';
import type { FileImportResult } from '../../levels/import.js';
import { parseInstanceId } from '../../levels/instances.js';
import { levelKeys, type FileEntry, type FileKey, type SliceKey } from '../../model/levels.js';
import type { Metrics } from '../../observability/metrics.js';

export class LevelOperatorEvents {
  constructor(
    private readonly log: Logger,
    /** None in tests that do not look. */
    private readonly metrics: Metrics | undefined,
  ) {}

  /** A closed slice was staged (gzipped to the staging level): timed only. */
  sliceUploaded(seconds: number): void {
    this.metrics?.uploadDuration.observe(seconds);
  }

  /** A slice could not be staged; it is retried with the backoff. */
  sliceUploadFailed(slice: SliceKey, err: unknown): void {
    this.log.warn({ err, slice }, 'slice upload failed; will retry');
  }

  /**
   * The target imported a file (its rows, the import id and the sink's position in one
   * transaction): timed, its rows counted per table, and logged (a retried import that finds
   * its id already there is `duplicate`, with no rows).
   */
  fileImported(file: FileKey, tableId: string, outcome: Pick<FileImportResult, 'inserted' | 'duplicate' | 'skipped'>, seconds: number): void {
    this.metrics?.importDuration.observe(seconds);
    if (outcome.inserted > 0) this.metrics?.rowsImported.inc({ table: tableId }, outcome.inserted);
    this.log.info({ file, tableId, rows: outcome.inserted, duplicate: outcome.duplicate, skipped: outcome.skipped }, 'file imported');
  }

  /**
   * An import failed: counted per configured sink; logged with when it is tried again. A file
   * gone meanwhile (purged: no `retry`) is counted, not logged: nothing is retried.
   */
  fileImportFailed(file: FileKey, tableId: string, reason: string, retry: { attempt: number; retryAfter: Date } | undefined): void {
    this.metrics?.importsFailed.inc({ source: file.sourceId, sink: parseInstanceId(file.sinkId).sinkId });
    if (retry) this.log.warn({ file, tableId, attempt: retry.attempt, retryAfter: retry.retryAfter, reason }, 'file import failed; staged data kept, will retry');
  }

  /** The target refused the import: another node claimed the sink since (cluster mode); the file is dropped here. */
  fileFenced(file: FileKey, tableId: string, claimedBy: string): void {
    this.metrics?.fencingRefusals.inc();
    this.log.warn({ file, tableId, claimedBy }, 'file not imported: another node took its sink over and reads its records again from the event log');
  }

  /** Retention deleted a file that was never imported (the import give-up): its staged data is gone. */
  fileExpiredUnimported(file: FileEntry): void {
    this.log.error({ file: levelKeys.file(file, file.openedAt), tableId: file.tableId, reason: file.retryReason }, 'file expired before it could be imported: its staged data is deleted');
  }

  /** The local or staged files of expired slices could not be removed. */
  expiredFilesNotRemoved(err: unknown): void {
    this.log.warn({ err }, 'could not remove the files of expired slices');
  }
}
