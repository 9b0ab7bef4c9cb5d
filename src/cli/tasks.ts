/**
 * Waiting for a Stream API task (the answer of every write to a source or a sink), for the
 * commands that write: `sluice wait` (a task piped in) and `sluice push`.
 */
import type { Task } from '../contract/tasks.js';
import type { StorageClient } from './client.js';
import { CliError } from './errors.js';

export type { Task };

/** What a command says when a task outlasts its wait: the task, its path to GET, and the wait in seconds. */
export type TaskTimeoutMessage = (task: Task, path: string, seconds: number) => string;

/**
 * GET /v1/tasks/{taskId} until the task is finished: every 50 ms at first, then at most every
 * 500 ms, at most `timeoutMs` (then a CliError with `timeoutMessage`). Resolves to the finished
 * task, whatever its status.
 */
export async function waitForTask(
  client: Pick<StorageClient, 'json'>,
  task: Task,
  timeoutMs: number,
  timeoutMessage: TaskTimeoutMessage,
  sleep = (ms: number) => new Promise((r) => setTimeout(r, ms)),
): Promise<Task> {
  const path = `/v1/tasks/${task.taskId.split('/').map(encodeURIComponent).join('/')}`;
  const deadline = Date.now() + timeoutMs;
  let current = task;
  let pause = 50;
  while (!current.isFinished && current.status === 'processing') {
    if (Date.now() >= deadline) throw new CliError(timeoutMessage(task, path, timeoutMs / 1000));
    await sleep(pause);
    pause = Math.min(pause * 2, 500);
    current = await client.json<Task>('GET', path);
  }
  return current;
}
