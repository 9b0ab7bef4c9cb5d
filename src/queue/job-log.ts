import type { EventService, NewEvent } from '../storage/events.js';

/** The runner's level -> the event type. */
const TYPES = { info: 'info', warning: 'warn', error: 'error', success: 'success' } as const;

/** A component that logs more lines than this keeps running, but its further lines are dropped. */
const MAX_COMPONENT_LINES = 10_000;

/**
 * A job's log lines as Storage events. Lines are buffered and written in one transaction every
 * `flushMs` (a chatty component must not cost a synced commit per line); `flush()` at the end.
 */
export class JobLog {
  private buffer: NewEvent[] = [];
  private timer: NodeJS.Timeout | undefined;
  private componentLines = 0;

  constructor(
    private readonly events: EventService,
    private readonly job: { runId: string; configId: string | null; componentId: string },
    private readonly flushMs = 200,
  ) {}

  /** A line of the job runner itself (variables, start, end): component "job-runner". */
  runner(message: string, level: keyof typeof TYPES = 'info'): void {
    this.add('job-runner', message, level);
  }

  /** A progress line of the component. */
  component(message: string, level: keyof typeof TYPES = 'info'): void {
    this.componentLines++;
    if (this.componentLines === MAX_COMPONENT_LINES + 1) {
      this.runner(`The component logged more than ${MAX_COMPONENT_LINES} lines; further lines are not kept.`, 'warning');
    }
    if (this.componentLines > MAX_COMPONENT_LINES) return;
    this.add(this.job.componentId, message, level);
  }

  flush(): void {
    clearTimeout(this.timer);
    this.timer = undefined;
    const batch = this.buffer;
    this.buffer = [];
    this.events.record(batch);
  }

  private add(component: string, message: string, level: keyof typeof TYPES): void {
    this.buffer.push({
      component,
      message: message.slice(0, 64 * 1024),
      type: TYPES[level],
      runId: this.job.runId,
      configurationId: this.job.configId,
    });
    this.timer ??= setTimeout(() => this.flush(), this.flushMs);
  }
}
