/** When to send a refused batch again: the server's Retry-After, else jittered exponential back-off. */

export interface RetryOptions {
  /** The first back-off, before jitter (ms). Default 250. */
  initialDelayMs?: number;
  /** The longest back-off, before jitter (ms). Default 30 000. A Retry-After is honoured beyond it. */
  maxDelayMs?: number;
  /**
   * How long a batch is tried, from its first request (ms): a retry that would start later is
   * not made, and the batch's records are reported rejected. Default 120 000; Infinity retries
   * for ever (the bounded queue then holds the producer back).
   */
  giveUpAfterMs?: number;
}

export type RetryPolicy = Required<RetryOptions>;

export const DEFAULT_RETRY: RetryPolicy = { initialDelayMs: 250, maxDelayMs: 30_000, giveUpAfterMs: 120_000 };

/** A Retry-After waited out is stretched by up to this share, so that refused clients do not all come back at once. */
const RETRY_AFTER_SPREAD = 0.2;

/**
 * A Retry-After header in milliseconds: delay-seconds (`1`, also a fraction) or an HTTP date,
 * relative to `now`; undefined when absent or unreadable (the back-off applies then).
 */
export function parseRetryAfter(value: string | null, now: number): number | undefined {
  if (value === null) return undefined;
  const text = value.trim();
  if (/^\d+(\.\d+)?$/.test(text)) return Number(text) * 1000;
  // An HTTP date names its day and month; Date.parse alone would read "-1" as a year.
  if (!/[a-z]/i.test(text)) return undefined;
  const date = Date.parse(text);
  if (Number.isNaN(date)) return undefined;
  return Math.max(0, date - now);
}

/**
 * The wait before attempt `attempt + 1` (attempt counts from 1): the server's Retry-After when
 * it gave one, plus up to a fifth of it; else the exponential back-off
 * `min(maxDelayMs, initialDelayMs * 2^(attempt-1))`, of which a random half is waited ("equal jitter":
 * never less than half the step, so that the waits still grow).
 */
export function retryDelay(attempt: number, retryAfterMs: number | undefined, policy: RetryPolicy, random: () => number): number {
  if (retryAfterMs !== undefined && retryAfterMs > 0) return retryAfterMs * (1 + RETRY_AFTER_SPREAD * random());
  const step = Math.min(policy.maxDelayMs, policy.initialDelayMs * 2 ** Math.min(attempt - 1, 52));
  return step / 2 + (step / 2) * random();
}
