/**
 * Table exports (`POST /v2/storage/tables/{tableId}/export-async`): a Storage job that writes
 * the table's chosen rows into a Storage file (gzip CSV with a header by default, or Parquet)
 * on this node, with its progress on the job. At most two run at once per node; the others
 * wait their turn (`waiting`).
 */
import { mkdir, rename, rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { Logger } from '../logger.js';
import { parseExportOptions, type ExportOptionsInput } from './export-options.js';
import type { FileService, StoredFile } from './files.js';
import { HEARTBEAT_MS, type StorageJob, type StorageJobs } from './storage-jobs.js';
import type { TableService } from './tables.js';
import { TargetUnavailableError, type ExportSpec } from '../ports/target.js';

const CONCURRENT_EXPORTS = 2;
/** Progress is written to the job at most this often. */
const PROGRESS_EVERY_MS = 1_000;

export interface ExportDeps {
  tables: TableService;
  jobs: StorageJobs;
  files: FileService;
  dataDir: string;
  retentionMs: number;
  logger: Logger;
}

export class ExportService {
  private running = 0;
  private readonly queue: (() => void)[] = [];
  private readonly inFlight = new Set<Promise<void>>();

  constructor(private readonly deps: ExportDeps) {}

  /**
   * Checks the options against the table (400 for a bad option, 404 for a missing table) and
   * starts the export; answers its job at once.
   */
  async start(tableId: string, input: ExportOptionsInput, creator: { id: string; description: string }): Promise<StorageJob> {
    const table = await this.deps.tables.getTable(tableId);
    const spec = parseExportOptions(input, table.columns);
    const job = this.deps.jobs.create({
      operationName: 'tableExport',
      tableId,
      operationParams: { ...definedOnly(input), export: describe(spec) },
      creatorToken: creator,
    });
    const run = this.whenFree(() => this.run(job, spec, creator)).finally(() => this.inFlight.delete(run));
    this.inFlight.add(run);
    return job;
  }

  /** Waits for the exports in flight (graceful stop). */
  async drain(): Promise<void> {
    await Promise.allSettled([...this.inFlight]);
  }

  private async whenFree(fn: () => Promise<void>): Promise<void> {
    if (this.running >= CONCURRENT_EXPORTS) await new Promise<void>((resolve) => this.queue.push(resolve));
    this.running++;
    try {
      await fn();
    } finally {
      this.running--;
      this.queue.shift()?.();
    }
  }

  private async run(job: StorageJob, spec: ExportSpec, creator: { id: string; description: string }): Promise<void> {
    const { tables, jobs, files, dataDir, logger } = this.deps;
    const started = new Date().toISOString();
    jobs.update(job.id, (j) => ({ ...j, status: 'processing', startTime: started }));
    const { id: fileId, dir } = files.reserve();
    const extension = spec.format === 'parquet' ? 'parquet' : spec.gzip ? 'csv.gz' : 'csv';
    const name = `${job.tableId}.${extension}`;
    const folder = join(dataDir, dir);
    const partial = join(folder, `${name}.part`);
    let lastWrite = 0;
    // The heartbeat keeps the job alive while a long step reports nothing (a count, a conversion).
    const heartbeat = setInterval(() => jobs.update(job.id, (j) => j), HEARTBEAT_MS);
    try {
      await mkdir(folder, { recursive: true });
      const result = await tables.exportRows(job.tableId, spec, partial, (progress) => {
        const now = Date.now();
        if (now - lastWrite < PROGRESS_EVERY_MS && progress.rows !== progress.totalRows) return;
        lastWrite = now;
        jobs.update(job.id, (j) => ({ ...j, progress: { rows: progress.rows, totalRows: progress.totalRows ?? null } }));
      });
      await rename(partial, join(folder, name));
      const file: StoredFile = files.record({
        id: fileId,
        name,
        sizeBytes: result.bytes,
        contentType: spec.format === 'parquet' ? 'application/vnd.apache.parquet' : spec.gzip ? 'application/gzip' : 'text/csv',
        tags: ['table-export', `table-export-${job.tableId}`],
        expires: new Date(Date.now() + this.deps.retentionMs).toISOString(),
        creatorToken: creator,
        path: join(dir, name),
      });
      jobs.update(job.id, (j) => ({
        ...j,
        status: 'success',
        endTime: new Date().toISOString(),
        results: { file: { id: Number(file.id) }, totalRowsCount: result.rows },
        metrics: { outCompressed: spec.format === 'csv' && spec.gzip, outBytes: result.bytes },
        progress: { rows: result.rows, totalRows: result.rows },
      }));
      logger.info({ jobId: job.id, tableId: job.tableId, fileId: file.id, rows: result.rows, bytes: result.bytes }, 'table exported');
    } catch (err) {
      await rm(folder, { recursive: true, force: true }).catch(() => undefined);
      const message = err instanceof Error ? err.message : String(err);
      const code = err instanceof TargetUnavailableError ? 'storage.targetUnavailable' : 'storage.tableExportFailed';
      jobs.update(job.id, (j) => ({ ...j, status: 'error', endTime: new Date().toISOString(), error: { code, message: `The export of table "${job.tableId}" failed: ${message}` } }));
      logger.warn({ jobId: job.id, tableId: job.tableId, reason: message }, 'table export failed');
    } finally {
      clearInterval(heartbeat);
    }
  }
}

function definedOnly(input: ExportOptionsInput): Record<string, unknown> {
  return Object.fromEntries(Object.entries(input).filter(([, v]) => v !== undefined));
}

/** The export as resolved (times as ISO), for the job's operationParams. */
function describe(spec: ExportSpec): Record<string, unknown> {
  return {
    columns: spec.columns,
    ...(spec.where ? { where: spec.where } : {}),
    ...(spec.changedSince ? { changedSince: spec.changedSince.toISOString() } : {}),
    ...(spec.changedUntil ? { changedUntil: spec.changedUntil.toISOString() } : {}),
    ...(spec.limit !== undefined ? { limit: spec.limit } : {}),
    format: spec.format,
    gzip: spec.gzip,
  };
}
