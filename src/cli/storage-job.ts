/**
 * Following a Storage job (`GET /v2/storage/jobs/{id}`) until it ends, as Keboola's clients do.
 * The job's own `url` holds the server's public URL, which the CLI may not reach (a proxy, a
 * docker port mapping), so the job is read through the CLI's base URL instead. The job's shape:
 * the API contract's (src/contract/storage-jobs.ts).
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { StorageJobJson } from '../contract/storage-jobs.js';
import type { StorageClient } from './client.js';

export const POLL_INTERVAL_MS = 300;

export function jobEnded(job: StorageJobJson): boolean {
  return job.status === 'success' || job.status === 'error';
}

/** Polls until the job succeeds or fails; `onUpdate` sees every state read, the first included. */
export async function waitForJob(
  client: StorageClient,
  started: StorageJobJson,
  onUpdate: (job: StorageJobJson) => void,
  signal?: AbortSignal,
): Promise<StorageJobJson> {
  let job = started;
  onUpdate(job);
  while (!jobEnded(job)) {
    await sleep(POLL_INTERVAL_MS, undefined, { signal });
    job = await client.json<StorageJobJson>('GET', `/v2/storage/jobs/${encodeURIComponent(String(started.id))}`, undefined, signal);
    onUpdate(job);
  }
  return job;
}
