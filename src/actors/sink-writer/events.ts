/**
 * Everything a sink writer logs and counts, one definition per happening (after Vector's
 * internal events: one type per event, whose emit writes the log line and the metric together).
 * A call site says what happened; the definition here says how that reads in the log and in the
 * metrics, so the line and the counter of one happening cannot drift apart, and this file is
 * the answer to "what does a sink writer say". The messages, fields, levels, metric names and
 * labels are read by dashboards, alerts and tests (docs/observability.md, "Observability"): change them here,
 * knowingly.
 *
 * The log is the writer's own (the actor's child logger: sinkId, sourceId, partition); the
 * metrics are labelled by the configured sink, not the partition's instance, so that the
 * writers of a sink's partitions add up in one series.
 */
import type { Logger } from '../../logger.js';
import { failureKind, type Metrics } from '../../observability/metrics.js';
import type { RenderFailure } from '../../pipeline/batch-render.js';
import { failedColumn, type FailureLogLimiter } from './failure-log.js';

/** The configured sink (its plain sink id, not the partition's instance id). */
export interface SinkIdentity {
  branchId: number;
  sourceId: string;
  sinkId: string;
}

/** Where a give-up or a retry of a failing sink stands, as logged. */
export interface FailingState {
  reason: string;
  committedOffset: number;
  /** When the sink is tried again (epoch ms). */
  retryAt: number;
}

export class SinkWriterEvents {
  constructor(
    private readonly log: Logger,
    /** None in tests that do not look. */
    private readonly metrics: Metrics | undefined,
    private readonly sink: SinkIdentity,
    /** Rate limit of the mapping failure lines (failure-log.ts), shared by the writers of the node. */
    private readonly failureLog: FailureLogLimiter,
  ) {}

  // ---- the records of a committed batch (or of a replay) ----

  /** Records the sink mapped into rows: counted only (one line per record would flood the log). */
  recordsMapped(count: number): void {
    if (this.metrics && count > 0) this.metrics.recordsMapped.inc(this.labels, count);
  }

  /** Records the sink's filter skipped: counted only, like the records mapped. */
  recordsFiltered(count: number): void {
    if (this.metrics && count > 0) this.metrics.recordsFiltered.inc(this.labels, count);
  }

  /**
   * A record the sink could not map, kept as a mapping failure: always counted (by reason
   * kind); logged with where it is and why, rate-limited per sink (failure-log.ts), never with
   * its body or headers (they may hold secrets). `rendered` is the renderer's failure of the
   * record, when it has one (its kind and column).
   */
  recordNotMapped(kept: { offset: number; reason: string }, rendered: RenderFailure | undefined): void {
    this.metrics?.recordsFailed.inc({ ...this.labels, reason: failureKind(kept.reason, rendered?.kind) }, 1);
    const decision = this.failureLog.failed(this.failureLogKey);
    if (decision.moreBefore !== undefined) this.moreNotMapped(decision.moreBefore);
    if (decision.logThis) {
      this.log.warn(
        { branchId: this.sink.branchId, offset: kept.offset, column: failedColumn(rendered ?? kept), reason: kept.reason },
        'record not mapped, kept as a mapping failure (more failures of the sink within a minute are counted, not logged one by one)',
      );
    }
  }

  /** On ticks: the failures not logged one by one, once their minute has ended. */
  failureWindowChecked(): void {
    const more = this.failureLog.ended(this.failureLogKey);
    if (more !== undefined) this.moreNotMapped(more);
  }

  private moreNotMapped(more: number): void {
    this.log.warn({ branchId: this.sink.branchId, more }, `${more} more records not mapped within a minute, kept as mapping failures`);
  }

  // ---- the sink's health (health.ts) ----

  /** The writer gave up after its bounded attempts: the sink is failing. Logged once as an error, and counted. */
  gaveUp(state: FailingState, attempts: number): void {
    this.log.error(
      { ...this.failingFields(state), attempts },
      'sink failing: its writes keep failing; the other sinks of its source go on without it, and it resumes from its own position once its writes work again',
    );
    this.metrics?.sinkGiveUps.inc({ ...this.labels, branch: String(this.sink.branchId) });
  }

  /** A failing sink was tried again and failed again: its next retry is later. */
  stillFailing(state: FailingState, retries: number): void {
    this.log.warn({ ...this.failingFields(state), retries }, 'failing sink: tried again, still failing');
  }

  /** A trigger check, a reload or a close failed too while the sink is failing (its retries are the router's). */
  stepFailedWhileFailing(err: unknown, message: string): void {
    this.log.debug({ err, message }, 'failing sink: a housekeeping step failed too');
  }

  /** A write worked: the failing sink is healthy again. */
  recovered(committedOffset: number, failingSince: string): void {
    this.log.info({ branchId: this.sink.branchId, committedOffset, failingSince }, 'failing sink recovered: its writes work again');
  }

  /** The router took the failing sink back with nothing to catch up (not reported as failing any more). */
  resumed(committedOffset: number): void {
    this.log.info({ committedOffset }, 'failing sink resumed: its file opens again and it has caught up with its source');
  }

  /** The failing marker (sink-health.ts failingKey) could not be written or removed. */
  markerNotKept(err: unknown): void {
    this.log.warn({ err }, 'could not keep the failing marker of the sink');
  }

  // ---- rotation and replays ----

  /** The import trigger fired: the file is closed (then imported) and a new one opened. */
  fileRotated(reason: string, records: number): void {
    this.log.info({ reason, records }, 'file rotation: importing');
  }

  /** The upload trigger fired: the slice is closed (then uploaded) and a new one opened. */
  sliceRotated(reason: string, records: number): void {
    this.log.debug({ reason, records }, 'slice rotation: uploading');
  }

  /** The sink's table, columns or settings changed: the file rotates so that waiting data is imported under the old ones. */
  definitionChanged(): void {
    this.log.info('sink definition changed: rotating the file so that waiting data is imported now');
  }

  resumedFileStale(): void {
    this.log.info('the file resumed after a stop was opened with an earlier definition of the sink: rotating it so that its data is imported now and new data uses the current definition');
  }

  /** Records whose mapping stopped the process were tried in the sandbox before a replay maps them. */
  triedApart(tried: number, stillStopping: number): void {
    this.log.info({ tried, stillStopping }, 'records whose mapping stopped the process were tried apart before being mapped again');
  }

  private failingFields(state: FailingState): Record<string, unknown> {
    return { branchId: this.sink.branchId, reason: state.reason, committedOffset: state.committedOffset, retryAt: new Date(state.retryAt).toISOString() };
  }

  /** The configured sink: the writers of a sink's partitions add up in one series. */
  private get labels(): { source: string; sink: string } {
    return { source: this.sink.sourceId, sink: this.sink.sinkId };
  }

  /** The sink, not the instance: the writers of a sink's partitions share one window. */
  private get failureLogKey(): string {
    return `${this.sink.branchId}/${this.sink.sourceId}/${this.sink.sinkId}`;
  }
}
