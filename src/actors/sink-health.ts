/**
 * When a sink's writes keep failing (its local slice cannot be written, its rendering breaks,
 * its file's columns do not compile: anything but a mapping failure of a record, which is kept
 * as a failed record and is no failure of the sink), the sink writer gives up after bounded
 * retries and the sink is *failing*: the source router goes on with the source's other sinks
 * and leaves the failing one at its own position, and the writer tries again now and then with
 * a longer backoff. Nothing is lost: the failing sink's committed position stays where it was,
 * and when its writes work again the router has it catch up from there (each record once).
 */
import type { SinkKey } from '../model/levels.js';
import type { KeySpace, MetadataTx } from '../ports/metadata-store.js';

/** Attempts of one write (a batch, opening the sink's file, a trigger check) before the sink is marked failing. */
export const SINK_WRITE_ATTEMPTS = 5;
/**
 * First delay between two attempts, doubled after each: with 5 attempts, 2 + 4 + 8 + 16 s, so a
 * sink is marked failing about 30 s after its first failed write (`--sink-retry-base`).
 */
export const SINK_RETRY_BASE_MS = 2_000;
/** A failing sink is tried again after this many times the base (60 s by default), doubled after each failed try... */
export const FAILING_RETRY_FACTOR = 30;
/** ... up to this many times the base (10 min by default). */
export const FAILING_RETRY_MAX_FACTOR = 300;

/** The bounds of a writer's retries (tests shorten them through the base). */
export interface SinkRetryPolicy {
  attempts: number;
  baseMs: number;
}

export const DEFAULT_SINK_RETRY: SinkRetryPolicy = { attempts: SINK_WRITE_ATTEMPTS, baseMs: SINK_RETRY_BASE_MS };

/** A failing sink (one writer: a sink on one partition of its source's topic). */
export interface SinkFailing {
  /** The last error, as a user reads it. */
  reason: string;
  /** When the writer gave up (ISO time). */
  since: string;
  /** Tries since it gave up (0 until the first periodic retry). */
  retries: number;
  /** When it is tried again (epoch ms); a changed definition makes it due at once. */
  retryAt: number;
}

/** Delay before the periodic retry number `retries + 1` of a failing sink. */
export function failingRetryDelayMs(retries: number, baseMs: number): number {
  return Math.min(baseMs * FAILING_RETRY_FACTOR * 2 ** retries, baseMs * FAILING_RETRY_MAX_FACTOR);
}

/** The error the writer answers the router with when it gives up (and while it is failing). */
export class SinkFailingError extends Error {
  constructor(readonly sinkId: string, readonly reason: string) {
    super(`sink ${sinkId} is failing: ${reason}`);
  }
}

/**
 * Node-local marker (like the sink's offset) kept while a sink is failing: a sink disabled and
 * enabled again, or started again by a restart, resumes from its own committed position instead
 * of starting with its peers, so that what it missed while failing is written.
 */
export function failingKey(key: SinkKey): string {
  return `${FAILING}${key.branchId}/${key.sourceId}/${key.sinkId}`;
}

const FAILING = 'storage/failing/';
/** The failing markers: node-local, like the sink's offset. */
export const SINK_HEALTH_KEY_SPACES: readonly KeySpace[] = [{ prefix: FAILING, shared: false }];

/** Removes a sink instance's failing marker (a sink deleted for good). */
export function clearFailing(tx: MetadataTx, key: SinkKey): void {
  tx.delete(failingKey(key));
}

export function reasonOf(err: unknown): string {
  return err instanceof SinkFailingError ? err.reason : err instanceof Error ? err.message : String(err);
}
