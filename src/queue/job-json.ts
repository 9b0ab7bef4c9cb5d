import type { JobJson } from '../contract/queue-jobs.js';
import { isFinished, type Job } from './job-model.js';

/** Queue API dates: "2022-01-25T16:34:40+00:00". */
export function queueDate(iso: string): string;
export function queueDate(iso: string | null): string | null;
export function queueDate(iso: string | null): string | null {
  return iso === null ? null : new Date(iso).toISOString().slice(0, 19) + '+00:00';
}

/** Seconds spent processing (reference: only processing time counts), live while it runs. */
export function durationSeconds(job: Job, now = Date.now()): number {
  const running = job.status === 'processing' || job.status === 'terminating';
  const live = running && job.startTime ? Math.max(0, now - Date.parse(job.startTime)) : 0;
  return Math.round((job.processingMs + live) / 1000);
}

/** Empty PHP arrays serialise as []: the reference's clients expect `[]` for an empty result. */
const orEmptyList = <T extends object>(v: T | null): T | [] =>
  v === null || Object.keys(v).length === 0 ? [] : v;

/** The job object of the Queue API: the API contract's (src/contract/queue-jobs.ts). */
export function jobJson(job: Job, ctx: { queueUrl: string; projectId: number }): JobJson {
  return {
    id: job.id,
    runId: job.runId,
    parentRunId: job.parentRunId,
    project: { id: String(ctx.projectId), name: `Project ${ctx.projectId}` },
    token: job.token,
    status: job.status,
    desiredStatus: job.desiredStatus,
    mode: job.mode,
    component: job.component,
    config: job.config,
    configData: orEmptyList(job.configData),
    configRowIds: job.configRowIds,
    tag: job.tag,
    createdTime: queueDate(job.createdTime),
    startTime: queueDate(job.startTime),
    endTime: queueDate(job.endTime),
    durationSeconds: durationSeconds(job),
    result: orEmptyList(job.result),
    usageData: [],
    isFinished: isFinished(job.status),
    url: `${ctx.queueUrl}/jobs/${job.id}`,
    branchId: job.branchId,
    variableValuesId: job.variableValuesId,
    variableValuesData: job.variableValuesData,
    backend: [],
    metrics: [],
    behavior: { onError: null },
    parallelism: null,
    type: 'standard',
    orchestrationJobId: null,
    orchestrationTaskId: null,
    onlyOrchestrationTaskIds: null,
    previousJobId: null,
  };
}
