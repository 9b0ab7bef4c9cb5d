/**
 * How many files this process may hold open (the soft RLIMIT_NOFILE, `ulimit -n`; Node raises it
 * to the hard limit at start), which sizes the default cap on HTTP connections: each one is a
 * file descriptor, and LMDB, DuckDB, Kafka, the PostgreSQL pool, staging files and the jobs'
 * pipes need theirs too.
 */
import { readFileSync } from 'node:fs';

/** Where /proc/self/limits is missing (not Linux) or unreadable: the common default of `ulimit -n`. */
export const FALLBACK_OPEN_FILES = 1024;

/** The "Max open files" soft limit of /proc/self/limits, or undefined when it says "unlimited" or cannot be read. */
export function parseOpenFilesLimit(limits: string): number | undefined {
  const line = limits.split('\n').find((l) => l.startsWith('Max open files'));
  const soft = line?.slice('Max open files'.length).trim().split(/\s+/)[0];
  const n = Number(soft);
  return soft !== undefined && /^\d+$/.test(soft) && n > 0 ? n : undefined;
}

export function openFilesLimit(): number {
  try {
    return parseOpenFilesLimit(readFileSync('/proc/self/limits', 'utf8')) ?? FALLBACK_OPEN_FILES;
  } catch {
    return FALLBACK_OPEN_FILES;
  }
}

/**
 * The default of --max-connections: three quarters of the open-files limit, the last quarter
 * left to the stores, Kafka, the target's pool, staging files and jobs.
 */
export function defaultMaxConnections(limit: number = openFilesLimit()): number {
  return Math.max(1, Math.floor((limit * 3) / 4));
}
