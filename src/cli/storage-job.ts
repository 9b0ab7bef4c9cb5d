/**
 * Following a Storage job (`GET /v2/storage/jobs/{id}`) until it ends, as Keboola's clients do.
 * The job's own `url` holds the server's public URL, which the CLI may not reach (a proxy, a
 * docker port mapping), so the job is read through the CLI's base URL instead.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { StorageClient } from './client.js';

export const POLL_INTERVAL_MS = 300;

export interface StorageJob {
  id: number;
  status: 'waiting' | 'processing' | 'success' | 'error';
  url: string;
  tableId?: string;
  progress?: { rows: number; totalRows: number | null };
  results?: { file?: { id: number }; totalRowsCount?: number } | null;
  error?: { code?: string; message?: string };
}

export function jobEnded(job: StorageJob): boolean {
  return job.status === 'success' || job.status === 'error';
}

/** Polls until the job succeeds or fails; `onUpdate` sees every state read, the first included. */
export async function waitForJob(
  client: StorageClient,
  started: StorageJob,
  onUpdate: (job: StorageJob) => void,
  signal?: AbortSignal,
): Promise<StorageJob> {
  let job = started;
  onUpdate(job);
  while (!jobEnded(job)) {
    await sleep(POLL_INTERVAL_MS, undefined, { signal });
    job = await client.json<StorageJob>('GET', `/v2/storage/jobs/${encodeURIComponent(String(started.id))}`, undefined, signal);
    onUpdate(job);
  }
  return job;
}
