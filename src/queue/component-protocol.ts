/** Messages between the queue (parent) and a component's worker process (child), over IPC. */

export type ParentMessage =
  | { type: 'run'; componentId: string; dataDir: string }
  | { type: 'abort' };

export type ChildMessage =
  | { type: 'log'; message: string; level: 'info' | 'warning' | 'error' }
  | { type: 'done'; message?: string; counters?: { pages?: number; items?: number } }
  | { type: 'failed'; kind: 'user' | 'application'; message: string; stack?: string };
