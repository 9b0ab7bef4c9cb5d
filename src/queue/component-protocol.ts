/** Messages between the queue (parent) and a component's worker process (child), over IPC. */

export type ParentMessage =
  /**
   * `config` and `state`: the job's configuration and state with their `#` values decrypted;
   * they travel only over IPC, never through a file.
   */
  | { type: 'run'; componentId: string; dataDir: string; config: Record<string, unknown>; state: Record<string, unknown> }
  | { type: 'abort' };

export type ChildMessage =
  | { type: 'log'; message: string; level: 'info' | 'warning' | 'error' }
  | { type: 'done'; message?: string; counters?: { pages?: number; items?: number } }
  | { type: 'failed'; kind: 'user' | 'application'; message: string; stack?: string };
