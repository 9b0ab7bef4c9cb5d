/**
 * The target level: a file's staged slices go into its table in one target
 * transaction, with the file's key as import id, so a retried import (after a crash between the
 * target's commit and the `imported` state) is a no-op.
 */
import type { TableImporter } from '../ports/target.js';
import { typesOf } from '../ports/target-columns.js';
import { sinkPath, type FileEntry, type FileKey, type SliceEntry } from '../model/levels.js';
import type { Staging } from '../ports/staging.js';

/** The import id of a file: "<branchId>/<sourceId>/<sinkId>/<openedAt>". */
export function fileImportId(file: FileKey): string {
  return `${file.branchId}/${file.sourceId}/${file.sinkId}/${file.openedAt}`;
}

export interface FileImportResult {
  importId: string;
  /** Rows written by this call (0 when skipped or a duplicate). */
  inserted: number;
  /** The import id was already recorded in the table: an earlier attempt did the import. */
  duplicate: boolean;
  /** The file has no records: nothing was sent to the table (which need not exist). */
  skipped: boolean;
}

/** The prefix of the paths of a source's sinks (their positions in the target). */
export function sourceSinksPrefix(branchId: number, sourceId: string): string {
  return `${branchId}/${sourceId}/`;
}

/**
 * Loads every staged slice of the file (all slices must be `uploaded`, or `imported` on a
 * retry) into the file's table in one transaction, checking that the table still has the
 * file's columns with their types (else 400 tableSchemaMismatch and nothing changes: the table
 * was changed behind the sink's back) and that exactly the file's record count is inserted.
 * The table may have more columns than the file (added to the mapping after the file was
 * opened, or taken out of it): they get their default, NULL or ''. A file without records is skipped. The caller then commits
 * `fileImported`. In cluster mode `owner` is this node: the import is refused (SinkClaimedError)
 * when another node has claimed the sink since.
 */
export async function importFile(tables: TableImporter, staging: Staging, file: FileEntry, slices: readonly SliceEntry[], owner?: string): Promise<FileImportResult> {
  const importId = fileImportId(file);
  for (const s of slices) {
    if (s.branchId !== file.branchId || s.sourceId !== file.sourceId || s.sinkId !== file.sinkId || s.fileOpenedAt !== file.openedAt) {
      throw new Error(`slice ${s.fileOpenedAt}/${s.openedAt} of ${s.sinkId} is not a slice of file ${importId}`);
    }
    if (s.state !== 'uploaded' && s.state !== 'imported') {
      throw new Error(`slice ${s.openedAt} of file ${importId} is ${s.state}; only uploaded slices can be imported`);
    }
    if (s.recordsCount > 0 && s.stagingPath === undefined) {
      throw new Error(`slice ${s.openedAt} of file ${importId} has no staged file`);
    }
  }
  const withRecords = [...slices].filter((s) => s.recordsCount > 0).sort((a, b) => (a.openedAt < b.openedAt ? -1 : 1));
  if (withRecords.length === 0) return { importId, inserted: 0, duplicate: false, skipped: true };

  const paths = withRecords.map((s) => staging.readablePath(s.stagingPath!));
  const expectedRows = withRecords.reduce((n, s) => n + s.recordsCount, 0);
  const through = Math.max(0, ...withRecords.map((s) => s.lastOffset ?? 0));
  const result = await tables.importCsv(file.tableId, paths, {
    importId,
    newlineOnly: true,
    columns: file.columns.map((c) => c.name),
    // Always given: an untyped column must be untyped in the table too ('' is not NULL there).
    types: typesOf(file.columns.map((c) => ({ name: c.name, type: c.dataType }))),
    expectedRows,
    position: through > 0 ? { sink: sinkPath(file), through, owner } : undefined,
  });
  return { importId, inserted: result.inserted, duplicate: result.duplicate, skipped: false };
}
