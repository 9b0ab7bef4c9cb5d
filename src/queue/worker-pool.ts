/**
 * Starts queued jobs with bounded parallelism: at most `size` jobs process at once, oldest
 * first, and two jobs of the same configuration never run together (the later one `waiting`).
 * Each running job has an AbortController: a kill request aborts it, which stops its process.
 */
import type { Logger } from '../logger.js';
import type { Job } from './job-model.js';
import type { JobRunner } from './job-runner.js';
import type { JobService } from './job-service.js';

interface Running {
  job: Job;
  controller: AbortController;
  done: Promise<void>;
}

const configKey = (job: Job) => (job.config === null ? `job:${job.id}` : `${job.component}/${job.config}`);

export class WorkerPool {
  private readonly running = new Map<string, Running>();
  private stopped = false;
  private scheduled = false;

  constructor(
    private readonly jobs: JobService,
    private readonly runner: JobRunner,
    private readonly size: number,
    private readonly logger: Logger,
  ) {
    jobs.onCreated(() => this.schedule());
    jobs.onKill((job) => this.running.get(job.id)?.controller.abort(new Error('killed')));
  }

  /** Starts what is queued (after a restart: the jobs created before it). */
  start(): void {
    this.schedule();
  }

  /** How many jobs are running now. */
  get active(): number {
    return this.running.size;
  }

  /** Stops taking jobs and aborts the running ones; they end `error` (interrupted). */
  async stop(): Promise<void> {
    this.stopped = true;
    for (const r of this.running.values()) r.controller.abort(new Error('shutdown'));
    await Promise.allSettled([...this.running.values()].map((r) => r.done));
  }

  /** Coalesces bursts of creations into one pass; never runs inside the caller's stack. */
  private schedule(): void {
    if (this.scheduled || this.stopped) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      try {
        this.fill();
      } catch (err) {
        this.logger.error({ err }, 'job scheduling failed');
      }
    });
  }

  private fill(): void {
    if (this.stopped) return;
    const busy = new Set([...this.running.values()].map((r) => configKey(r.job)));
    for (const job of this.jobs.pending()) {
      if (this.running.has(job.id)) continue;
      const canStart = this.running.size < this.size && !busy.has(configKey(job));
      if (!canStart) {
        if (job.status === 'created') this.jobs.transition(job.id, 'waiting');
        continue;
      }
      busy.add(configKey(job));
      this.launch(job);
    }
  }

  private launch(job: Job): void {
    const controller = new AbortController();
    const done = this.runner.run(job.id, controller.signal)
      .catch((err) => this.logger.error({ err, jobId: job.id }, 'job runner failed'))
      .finally(() => {
        this.running.delete(job.id);
        this.schedule();
      });
    this.running.set(job.id, { job, controller, done });
  }
}
