/**
 * The figures the source pages compute from what they read from the Stream API (the shapes:
 * src/contract/stream-sources.ts, statistics.ts).
 */
import { api, BRANCH } from '../api';
import type { FileStatistics } from '../../contract/statistics';
import type { Task } from '../../contract/tasks';

export const HOUR_MS = 3600_000;

/** An API time ("...Z" or "...+0000") in milliseconds; NaN when it is none. */
export function timeMs(iso: string | undefined): number {
  return iso ? Date.parse(iso.replace(/\+0000$/, 'Z')) : NaN;
}

/**
 * Records in the last hour. The API has no per-hour counter; what it has are the sink's files
 * (`statistics/files`, also in the aggregation endpoint) with each file's record count and the
 * arrival time of its first and last record. So this counts the records of the files whose LAST
 * record arrived within the hour. A file whose first record is older counts whole (files are
 * short: the import trigger closes one at least every minute by default), and files that
 * retention removed are gone anyway. A file with no figures yet (no `statistics`: none were
 * recorded for it) counts nothing. For a source it is summed over its sinks, i.e. the rows
 * its sinks wrote: a record that two sinks take counts twice.
 */
export function recordsInLastHour(files: FileStatistics[] | undefined, now = Date.now()): number {
  let n = 0;
  for (const f of files ?? []) {
    const total = f.statistics?.total;
    if (!total) continue;
    if (now - timeMs(total.lastRecordAt) <= HOUR_MS) n += total.recordsCount;
  }
  return n;
}

/** The hint beside a "Last hour" column of sinks. */
export const LAST_HOUR_HINT =
  'Last hour: records of the sink\'s files whose last record arrived within the hour (a file that began earlier counts whole; one with no figures yet, nothing).';

/** The hint beside a "Last hour" column of sources. */
export const SOURCE_LAST_HOUR_HINT =
  'Last hour: records of the sinks\' files whose last record arrived within the hour (a file that began earlier counts whole; one with no figures yet, nothing), summed over the source\'s sinks.';

export function isDisabled(e: { disabled?: unknown }): boolean {
  return Boolean(e.disabled);
}

/** Waits for a task the API answered (runTask posts itself; this is for answers that carry tasks). */
export async function waitForTask(task: Task): Promise<Task> {
  const path = new URL(task.url, location.href).pathname;
  let current = task;
  for (let delay = 100; current.status === 'processing'; delay = Math.min(delay * 1.5, 1000)) {
    await new Promise((r) => setTimeout(r, delay));
    current = await api<Task>('GET', path);
  }
  if (current.status !== 'success') throw new Error(current.error ?? `The task ended ${current.status}.`);
  return current;
}

/** `a/b` -> `a%2Fb`: ids in API paths. */
export const seg = encodeURIComponent;

/** The Stream API path of a source. */
export function sourcePath(sourceId: string): string {
  return `${BRANCH}/sources/${seg(sourceId)}`;
}
