/**
 * Everything the partition hand-over logs and counts (cluster mode), one definition per
 * happening that writes the log line and updates the metric together (as
 * actors/sink-writer/events.ts). The messages, fields, metric names and labels are read by
 * dashboards and tests: change them here, knowingly.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../observability/metrics.js';

export class HandOverEvents {
  constructor(
    private readonly log: Logger,
    /** None in tests that do not look. */
    private readonly metrics: Metrics | undefined,
  ) {}

  /** This node took a partition up (its first sink there started). */
  taken(): void {
    this.metrics?.handOvers.inc({ direction: 'taken' });
  }

  /** This node released a partition it worked on. */
  released(): void {
    this.metrics?.handOvers.inc({ direction: 'released' });
  }

  /** The previous owner's heartbeat stopped: the partition is taken up without its release. */
  previousOwnerGone(partitionId: string, previous: string): void {
    this.log.info({ partitionId, previous }, 'hand-over: the previous owner is gone; taking the partition up');
  }

  /** The previous owner is alive but did not release the partition within the wait. */
  releaseTimedOut(partitionId: string, previous: string, waitedMs: number): void {
    this.log.warn({ partitionId, previous, waitedMs }, 'hand-over: the previous owner did not release the partition in time; taking it up');
  }
}
