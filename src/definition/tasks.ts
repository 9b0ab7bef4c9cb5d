import { randomBytes } from 'node:crypto';
import type { KeySpace, MetadataStore } from '../ports/metadata-store.js';
import type { Logger } from '../logger.js';
import type { Task, TaskStatus } from '../contract/tasks.js';

/** A task as the Stream API shows it (GET /v1/tasks/{taskId}): the API contract's (src/contract/tasks.ts). */
export type { Task, TaskStatus };

export interface TaskOutcome {
  result: string;
  outputs: Record<string, unknown>;
}

/** A task's work; `progress` shows intermediate outputs on the running task. */
export type TaskWork = (progress: (outputs: Record<string, unknown>) => void) => Promise<TaskOutcome>;

export interface TaskOptions {
  /** The task fails with "Task timeout." after this long (default 5 minutes). */
  timeoutMs?: number;
}

/** Work that fails with this error ends the task with its message (no stack in the log). */
export class TaskFailure extends Error {}

const KEY = 'task/';
/**
 * Node-local marker of a task this node runs (cluster mode shares `task/` with every node, so
 * a node that restarts must tell its own interrupted tasks from those other nodes still run).
 */
const RUNNING_HERE = 'node/runningTask/';
/** The tasks (shared: a task created on one node is polled on another) and this node's markers. */
export const TASK_KEY_SPACES: readonly KeySpace[] = [
  { prefix: KEY, shared: true },
  { prefix: RUNNING_HERE, shared: false },
];
const TIMEOUT_MS = 5 * 60_000;
const ALPHANUM = 'abcdefghijklmnopqrstuvwxyz0123456789';

function randomSuffix(n: number): string {
  const bytes = randomBytes(n);
  let s = '';
  for (const b of bytes) s += ALPHANUM[b % ALPHANUM.length];
  return s;
}

/**
 * Runs the asynchronous tasks of the management API. A task is stored as `processing` before
 * the API answers 202, runs in the background, and is stored again when it finishes. Tasks on
 * the same object (source or sink) run one at a time, in order. A task that was running when
 * the process stopped is marked `error` at the next start, so none stays processing forever.
 */
export class TaskRunner {
  private readonly chains = new Map<string, Promise<void>>();
  private readonly running = new Set<Promise<void>>();
  private readonly finishedListeners = new Set<(task: Task) => void>();

  constructor(
    private readonly store: MetadataStore,
    private readonly logger: Logger,
    private readonly publicApiUrl: string,
  ) {}

  /** Marks every task this node left `processing` when it stopped as failed. Returns how many. */
  recoverInterrupted(now = new Date()): number {
    return this.store.transact((tx) => {
      let n = 0;
      for (const { key } of tx.list<true>(RUNNING_HERE)) {
        tx.delete(key);
        const taskKey = KEY + key.slice(RUNNING_HERE.length);
        const task = tx.get<Task>(taskKey);
        if (task?.status !== 'processing') continue;
        tx.put(taskKey, finish(task, now, { status: 'error', error: 'Task was interrupted: the service stopped before the task finished. Please retry the operation.' }));
        n++;
      }
      return n;
    });
  }

  /**
   * Creates a task and schedules `work` after the earlier tasks of the same `lockKey`.
   * `objectPath` is the task id's middle part, e.g. "<branchId>/<sourceId>[/<sinkId>]".
   */
  start(type: string, objectPath: string, lockKey: string, work: TaskWork, options: TaskOptions = {}): Task {
    const createdAt = new Date();
    const taskId = `${type}/${objectPath}/${createdAt.toISOString()}_${randomSuffix(5)}`;
    const task: Task = {
      taskId,
      type,
      url: `${this.publicApiUrl}/v1/tasks/${taskId}`,
      status: 'processing',
      isFinished: false,
      createdAt: createdAt.toISOString(),
    };
    this.store.transact((tx) => {
      tx.put(KEY + taskId, task);
      tx.put(RUNNING_HERE + taskId, true);
    });

    const previous = this.chains.get(lockKey) ?? Promise.resolve();
    const run = previous.then(() => this.execute(task, work, options.timeoutMs ?? TIMEOUT_MS));
    const tail = run.finally(() => {
      if (this.chains.get(lockKey) === tail) this.chains.delete(lockKey);
      this.running.delete(tail);
    });
    this.chains.set(lockKey, tail);
    this.running.add(tail);
    return task;
  }

  /** Called after each task is stored as finished (definitions may have changed). */
  onFinished(listener: (task: Task) => void): void {
    this.finishedListeners.add(listener);
  }

  get(taskId: string): Task | undefined {
    return this.store.get<Task>(KEY + taskId);
  }

  /** Whether a task of this object is queued or running. */
  isBusy(lockKey: string): boolean {
    return this.chains.has(lockKey);
  }

  /** Waits for every scheduled task (graceful shutdown). */
  async drain(): Promise<void> {
    while (this.running.size > 0) await Promise.allSettled([...this.running]);
  }

  private async execute(task: Task, work: TaskWork, timeoutMs: number): Promise<void> {
    const log = this.logger.child({ taskId: task.taskId });
    let timer: NodeJS.Timeout | undefined;
    let done: Task;
    let finished = false;
    // Progress of a running task is visible in its outputs; stored at most every 500 ms.
    let lastProgressAt = 0;
    const progress = (outputs: Record<string, unknown>) => {
      const now = Date.now();
      if (finished || now - lastProgressAt < 500) return;
      lastProgressAt = now;
      this.store.transact((tx) => tx.put(KEY + task.taskId, { ...task, outputs }));
    };
    try {
      const timeout = new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new TaskFailure('Task timeout.')), timeoutMs);
      });
      const outcome = await Promise.race([work(progress), timeout]);
      done = finish(task, new Date(), { status: 'success', result: outcome.result, outputs: outcome.outputs });
    } catch (err) {
      const message = err instanceof Error ? err.message : String(err);
      if (!(err instanceof TaskFailure)) log.warn({ err }, 'task failed');
      done = finish(task, new Date(), { status: 'error', error: message });
    } finally {
      finished = true;
      clearTimeout(timer);
    }
    this.store.transact((tx) => {
      tx.put(KEY + task.taskId, done);
      tx.delete(RUNNING_HERE + task.taskId);
    });
    for (const listener of this.finishedListeners) {
      try {
        listener(done);
      } catch (err) {
        log.error({ err }, 'task listener failed');
      }
    }
  }
}

function finish(task: Task, now: Date, patch: Partial<Task>): Task {
  return {
    ...task,
    ...patch,
    isFinished: true,
    finishedAt: now.toISOString(),
    duration: Math.max(0, now.getTime() - Date.parse(task.createdAt)),
  };
}
