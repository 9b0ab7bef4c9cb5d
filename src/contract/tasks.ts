/**
 * The API contract (see stream-sources.ts for why the types are the source): the Stream API's
 * asynchronous tasks (src/definition/tasks.ts runs them; GET /v1/tasks/{taskId}).
 */

export type TaskStatus = 'processing' | 'success' | 'error';

/** A task as the Stream API shows it; `Outputs`: what the kind of task reports. */
export interface Task<Outputs = Record<string, unknown>> {
  taskId: string;
  type: string;
  url: string;
  status: TaskStatus;
  isFinished: boolean;
  createdAt: string;
  finishedAt?: string;
  duration?: number;
  result?: string;
  error?: string;
  outputs?: Outputs;
}
