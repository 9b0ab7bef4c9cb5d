/**
 * The API contract (see stream-sources.ts for why the types are the source): the Queue API's
 * jobs (src/queue/job-json.ts jobJson builds them; POST /jobs, GET /jobs/{jobId},
 * GET /search/jobs, POST /jobs/{jobId}/kill). src/queue/job-model.ts keeps the statuses and
 * modes declared here.
 */

export type JobStatus =
  | 'created' | 'waiting' | 'processing' | 'terminating'
  | 'success' | 'error' | 'warning' | 'terminated' | 'cancelled';

export type JobMode = 'run' | 'debug' | 'forceRun';

/** A job's result object, as far as it is set (an empty one is answered as `[]`, see JobJson). */
export interface JobResultJson {
  message?: string;
  configVersion?: string;
  images?: unknown[];
  input?: { tables: unknown[] };
  output?: { tables: { id: string; name: string; columns: string[]; rows: number }[] };
  /** The variables the configuration was rendered with. */
  variables?: { name: string; value: string }[];
  error?: { type: 'user' | 'application'; exceptionId: string };
}

/**
 * The job object of the Queue API. Empty objects are serialised as PHP does,
 * as `[]` (`configData`, `result`); the reference's fields Sluice has no use for are answered
 * empty or null, as constants.
 */
export interface JobJson {
  id: string;
  runId: string;
  parentRunId: string;
  project: { id: string; name: string };
  token: { id: string; description: string };
  status: JobStatus;
  desiredStatus: 'processing' | 'terminating';
  mode: JobMode;
  component: string;
  config: string | null;
  configData: Record<string, unknown> | [];
  configRowIds: string[];
  tag: string | null;
  /** Queue API dates: "2022-01-25T16:34:40+00:00". */
  createdTime: string;
  startTime: string | null;
  endTime: string | null;
  /** Seconds spent processing, live while it runs. */
  durationSeconds: number;
  result: JobResultJson | [];
  usageData: [];
  isFinished: boolean;
  url: string;
  branchId: string | null;
  variableValuesId: string | null;
  variableValuesData: { values: { name: string; value: string }[] };
  backend: [];
  metrics: [];
  behavior: { onError: null };
  parallelism: null;
  type: 'standard';
  orchestrationJobId: null;
  orchestrationTaskId: null;
  onlyOrchestrationTaskIds: null;
  previousJobId: null;
}
