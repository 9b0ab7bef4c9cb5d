/**
 * Everything the job runner logs and counts in the process (the job's own lines go to its
 * Storage events, job-log.ts), one definition per happening that writes the log line and
 * updates the metric together (as actors/sink-writer/events.ts). The messages, fields, metric
 * names and labels are read by dashboards and tests: change them here, knowingly.
 */
import type { Logger } from '../logger.js';
import type { Metrics } from '../observability/metrics.js';
import type { JobStatus } from '../contract/queue-jobs.js';

export class JobRunnerEvents {
  constructor(
    private readonly log: Logger,
    /** None in tests that do not look. */
    private readonly metrics: Metrics | undefined,
  ) {}

  /** A job could not start (another runner took it, or it was killed meanwhile): not a failure. */
  notStarted(jobId: string, err: unknown): void {
    this.log.debug({ err, jobId }, 'job not started');
  }

  /** A job failed for a reason of the service, not of its input: logged with the id its answer shows. */
  applicationError(jobId: string, exceptionId: string, err: unknown): void {
    this.log.error({ err, jobId, exceptionId }, 'job failed with an application error');
  }

  /** A component reported what it fetched (the generic extractor: pages and items). */
  extracted(counters: { pages?: number; items?: number } | undefined): void {
    if (counters?.pages) this.metrics?.extractorPages.inc(counters.pages);
    if (counters?.items) this.metrics?.extractorItems.inc(counters.items);
  }

  /** A job ended: counted by component and final status, its run time observed. `component` is a bounded label. */
  finished(component: string, status: JobStatus, processingMs: number): void {
    this.metrics?.jobs.inc({ component, status });
    this.metrics?.jobDuration.observe({ component }, processingMs / 1000);
  }

  /** The end of a job could not be stored: it stays as it was and is retried or collected later. */
  endNotStored(jobId: string, err: unknown): void {
    this.log.error({ err, jobId }, 'could not store the end of a job');
  }
}
