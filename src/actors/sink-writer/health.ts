/**
 * Whether a sink writer's writes work (sink-health.ts has the policy): healthy, or *failing*
 * from the writer's give-up until a write works again. The state outlives the process through
 * a node-local marker (sink-health.ts failingKey), so that a sink disabled and enabled again,
 * or a node restarted, resumes from its own position and tries at once.
 */
import type { MetadataStore } from '../../ports/metadata-store.js';
import type { SinkKey } from '../../model/levels.js';
import { failingKey, failingRetryDelayMs, reasonOf, SinkFailingError, type SinkFailing } from '../sink-health.js';
import type { SinkWriterEvents } from './events.js';

export class WriterHealth {
  /**
   * Set from the writer's give-up until a write works again. `resumed`: the router took the sink
   * back (it had nothing to catch up) before a write proved it healthy: not reported as failing,
   * but its next write is tried once and a failure continues this record (no new give-up).
   */
  private state?: SinkFailing & { resumed?: boolean };

  constructor(
    private readonly store: MetadataStore,
    /** The writer's instance: the marker is per partition. */
    private readonly key: SinkKey,
    /** The base of the failing sink's retry backoff (sink-health.ts failingRetryDelayMs). */
    private readonly retryBaseMs: number,
    private readonly events: SinkWriterEvents,
  ) {
    // Failing when it stopped (disabled, or the process stopped): still failing, tried again at once.
    const marker = store.get<{ reason: string; since: string }>(failingKey(key));
    if (marker) this.state = { reason: marker.reason, since: marker.since, retries: 0, retryAt: Date.now() };
  }

  /** Set while the sink is failing and not resumed (what the router and the metrics see). */
  get failing(): SinkFailing | undefined {
    return this.state && !this.state.resumed ? this.state : undefined;
  }

  /** Failing, resumed or not: each write is tried once, and a failure is no new give-up. */
  get isFailing(): boolean {
    return this.state !== undefined;
  }

  /** The router took the failing sink back with nothing to catch up: it is not reported as failing any more. */
  resumed(committedOffset: number): void {
    if (this.state && !this.state.resumed) {
      this.state = { ...this.state, resumed: true };
      this.events.resumed(committedOffset);
    }
  }

  /** A changed definition may be the fix: a failing sink is tried again at once. */
  retryNow(): void {
    if (this.state) this.state.retryAt = Date.now();
  }

  /**
   * The writer gives up: the sink is failing (logged once as an error, counted, kept as a
   * marker so that it resumes from its own position after a disable or a restart), or, if it
   * was failing already, its next retry is later. Returns the error the router is answered with.
   */
  gaveUp(err: unknown, attempts: number, committedOffset: number): SinkFailingError {
    const reason = reasonOf(err);
    const now = Date.now();
    const before = this.state;
    const retries = before ? before.retries + 1 : 0;
    const retryAt = now + failingRetryDelayMs(retries, this.retryBaseMs);
    this.state = { reason, since: before?.since ?? new Date(now).toISOString(), retries, retryAt };
    if (before) {
      this.events.stillFailing({ reason, committedOffset, retryAt }, retries);
    } else {
      this.events.gaveUp({ reason, committedOffset, retryAt }, attempts);
      this.keepMarker({ reason, since: this.state.since });
    }
    return new SinkFailingError(this.key.sinkId, reason);
  }

  /** A write worked: a failing sink is healthy again. */
  recovered(committedOffset: number): void {
    const before = this.state;
    if (!before) return;
    this.state = undefined;
    this.events.recovered(committedOffset, before.since);
    this.keepMarker(undefined);
  }

  private keepMarker(value: { reason: string; since: string } | undefined): void {
    try {
      this.store.transact((tx) => (value ? tx.put(failingKey(this.key), value) : tx.delete(failingKey(this.key))));
    } catch (err) {
      this.events.markerNotKept(err);
    }
  }
}
