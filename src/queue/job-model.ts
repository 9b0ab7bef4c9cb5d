/** Jobs of the queue as stored, their statuses and transitions. */
import type { ReplacedValue } from './mustache-renderer.js';
import type { VariableValue } from './variables-validation.js';
import type { JobMode, JobStatus } from '../contract/queue-jobs.js';

/** The statuses and modes are the API contract's (src/contract/queue-jobs.ts). */
export type { JobMode, JobStatus } from '../contract/queue-jobs.js';

export const FINISHED_STATUSES: readonly JobStatus[] = ['success', 'error', 'warning', 'terminated', 'cancelled'];
export const KILLABLE_STATUSES: readonly JobStatus[] = ['created', 'waiting', 'processing'];

/** The end of a job that was running when the service stopped (found at stop or at the next start). */
export const INTERRUPTED = 'Job was interrupted: the service stopped while the job was running. Please run it again.';

export const isFinished = (status: JobStatus): boolean => FINISHED_STATUSES.includes(status);

/** The transitions of the reference's state diagram; anything else is a bug in the queue. */
const TRANSITIONS: Record<JobStatus, readonly JobStatus[]> = {
  created: ['waiting', 'processing', 'terminating', 'cancelled'],
  waiting: ['processing', 'terminating', 'created', 'cancelled'],
  processing: ['success', 'error', 'terminating', 'created'],
  terminating: ['terminated', 'cancelled', 'error'],
  success: [], error: [], warning: [], terminated: [], cancelled: [],
};

export function canTransition(from: JobStatus, to: JobStatus): boolean {
  return TRANSITIONS[from].includes(to);
}

export interface JobResult {
  message?: string;
  configVersion?: string;
  images?: unknown[];
  input?: { tables: unknown[] };
  output?: { tables: { id: string; name: string; columns: string[]; rows: number }[] };
  variables?: ReplacedValue[];
  error?: { type: 'user' | 'application'; exceptionId: string };
}

export interface Job {
  id: string;
  runId: string;
  parentRunId: string;
  token: { id: string; description: string };
  status: JobStatus;
  desiredStatus: 'processing' | 'terminating';
  mode: JobMode;
  component: string;
  config: string | null;
  configData: Record<string, unknown> | null;
  configRowIds: string[];
  tag: string | null;
  branchId: string | null;
  variableValuesId: string | null;
  variableValuesData: { values: VariableValue[] };
  createdTime: string;
  startTime: string | null;
  endTime: string | null;
  /** Milliseconds spent processing, summed (a job that was restarted counts each attempt). */
  processingMs: number;
  result: JobResult;
}
