import type { KeySpace, MetadataStore, MetadataTx } from '../ports/metadata-store.js';
import { isDomainError } from '../domain-errors.js';
import type { Secrets } from '../storage/secrets.js';
import type { ConfigurationService } from '../storage/configurations/service.js';
import type { Token } from '../storage/token-model.js';
import { sequenceIds } from '../storage/id-sequence.js';
import type { IdAllocator } from '../ports/id-allocator.js';
import { runnableComponent } from '../components/registry.js';
import { QueueError, jobNotFound } from './errors.js';
import { canTransition, INTERRUPTED, isFinished, KILLABLE_STATUSES, type Job, type JobStatus } from './job-model.js';
import { jobVariableSource, parseJobRequest } from './job-request.js';

const JOB = 'queue/job/';
/** Index of the jobs not started yet (created, waiting): the scheduler reads only these. */
const PENDING = 'queue/pending/';
/** The jobs and the index of those waiting: node-local (jobs run where they were created). */
export const JOB_KEY_SPACES: readonly KeySpace[] = [
  { prefix: JOB, shared: false },
  { prefix: PENDING, shared: false },
];
/** Ids are numeric strings; keys are padded so that key order is id order. */
const jobKey = (id: string) => JOB + id.padStart(15, '0');
const pendingKey = (id: string) => PENDING + id.padStart(15, '0');
const isPending = (status: JobStatus) => status === 'created' || status === 'waiting';

/**
 * The queue's jobs in the metadata store: creation with the Queue API's checks, reads, search,
 * kill requests and every status change. Only this class writes jobs, and every write is a
 * transition the reference's state diagram allows. A job's inline `configData` is stored with its
 * `#` values encrypted, as configurations are.
 */
export class JobService {
  private readonly createdListeners = new Set<(job: Job) => void>();
  private readonly killListeners = new Set<(job: Job) => void>();

  constructor(
    private readonly store: MetadataStore,
    private readonly configurations: ConfigurationService,
    private readonly defaultBranchId: number,
    private readonly secrets: Secrets,
    private readonly ids: IdAllocator = sequenceIds,
  ) {}

  /** Called after a job is stored as created (the worker pool starts it when it can). */
  onCreated(listener: (job: Job) => void): void {
    this.createdListeners.add(listener);
  }

  /** Called when a processing job is asked to terminate. */
  onKill(listener: (job: Job) => void): void {
    this.killListeners.add(listener);
  }

  create(body: unknown, token: Token, parentRunId = ''): Job {
    const request = parseJobRequest(body);
    if (request.branchId !== null && request.branchId !== 'default' && request.branchId !== String(this.defaultBranchId)) {
      throw new QueueError('invalid', `Cannot resolve job parameters: Branch "${request.branchId}" not found`);
    }
    if (!runnableComponent(request.component)) throw new QueueError('invalid', `The component "${request.component}" is not runnable.`);
    let storedConfiguration: Record<string, unknown> | undefined;
    if (request.configData === null) {
      if (request.config === null) {
        throw new QueueError('invalid', 'Cannot resolve job parameters: Provide "config" (a configuration id) or "configData".');
      }
      const config = this.configurations.find(request.component, request.config);
      if (!config) throw new QueueError('invalid', `Cannot resolve job parameters: Configuration "${request.config}" not found`);
      if (config.isDisabled && request.mode === 'run') {
        throw new QueueError('invalid', `Configuration "${request.config}" of component "${request.component}" is disabled.`);
      }
      const unknownRow = request.configRowIds.find((id) => !config.rows.some((r) => r.id === id));
      if (unknownRow !== undefined) throw new QueueError('invalid', `Cannot resolve job parameters: Row "${unknownRow}" not found`);
      storedConfiguration = config.configuration;
    }
    const variables = jobVariableSource(request, request.configData, storedConfiguration);
    const configData = request.configData === null ? null : this.sealConfigData(request.configData);
    const job = this.store.transact((tx) => {
      const id = this.ids.next(tx, 'storage');
      const created: Job = {
        id,
        runId: parentRunId ? `${parentRunId}.${id}` : id,
        parentRunId,
        token: { id: token.id, description: token.description },
        status: 'created',
        desiredStatus: 'processing',
        mode: request.mode,
        component: request.component,
        config: request.config,
        configData,
        configRowIds: request.configRowIds,
        tag: request.tag,
        branchId: null,
        variableValuesId: variables.variableValuesId,
        variableValuesData: { values: variables.variableValuesData },
        createdTime: new Date().toISOString(),
        startTime: null,
        endTime: null,
        processingMs: 0,
        result: {},
      };
      tx.put(jobKey(id), created);
      tx.put(pendingKey(id), id);
      return created;
    });
    for (const listener of this.createdListeners) listener(job);
    return job;
  }

  /** The Queue API's envelope for the encryption's refusals (a bad encrypted value, no key). */
  private sealConfigData(configData: Record<string, unknown>): Record<string, unknown> {
    try {
      return this.secrets.seal(configData, 'configData');
    } catch (err) {
      if (isDomainError(err)) throw new QueueError(err.kind, err.message, err.code);
      throw err;
    }
  }

  /**
   * Applies `fn` to every job's `configData` in one transaction and stores what it changed (see
   * ConfigurationService.rewriteSecrets); returns how many jobs changed; with `apply` false
   * nothing is written.
   */
  rewriteSecrets(fn: (value: Record<string, unknown>, label: string) => Record<string, unknown>, apply = true): number {
    return this.store.transact((tx) => {
      let changed = 0;
      for (const { key, value } of tx.list<Job>(JOB)) {
        if (value.configData === null) continue;
        const configData = fn(value.configData, `jobs/${value.id}/configData`);
        if (configData === value.configData) continue;
        if (apply) tx.put(key, { ...value, configData });
        changed++;
      }
      return changed;
    });
  }

  get(id: string): Job | undefined {
    return /^\d{1,15}$/.test(id) ? this.store.get<Job>(jobKey(id)) : undefined;
  }

  /** The job whose run id is `runId` (`<id>`, or `<parent run id>.<id>`), or undefined. */
  byRunId(runId: string): Job | undefined {
    const job = this.get(runId.slice(runId.lastIndexOf('.') + 1));
    return job?.runId === runId ? job : undefined;
  }

  require(id: string): Job {
    const job = this.get(id);
    if (!job) throw jobNotFound(id);
    return job;
  }

  all(): Job[] {
    return this.store.list<Job>(JOB).map((e) => e.value);
  }

  /** Jobs waiting to run, oldest first. */
  pending(): Job[] {
    return this.store.list<string>(PENDING)
      .map((e) => this.store.get<Job>(jobKey(e.value)))
      .filter((j): j is Job => j !== undefined && isPending(j.status));
  }

  /**
   * Kill: a job not started yet is cancelled at once; a processing job becomes
   * `terminating` and its worker is stopped; a terminating job is left as it is.
   */
  kill(id: string): Job {
    const job = this.store.transact((tx) => {
      const current = this.read(tx, id);
      if (current.status === 'terminating') return current;
      if (!KILLABLE_STATUSES.includes(current.status)) {
        throw new QueueError('invalid', `Job "${id}" cannot be killed: it has already finished with status "${current.status}".`, 'job.statusTerminal');
      }
      const now = new Date().toISOString();
      const next: Job = current.status === 'processing'
        ? { ...current, status: 'terminating', desiredStatus: 'terminating' }
        : { ...current, status: 'cancelled', desiredStatus: 'terminating', endTime: now, result: { message: 'Job was cancelled.' } };
      tx.put(jobKey(id), next);
      if (!isPending(next.status)) tx.delete(pendingKey(id));
      return next;
    });
    if (job.status === 'terminating') for (const listener of this.killListeners) listener(job);
    return job;
  }

  /** Applies a status change (and other fields) if the transition is allowed; returns the stored job. */
  transition(id: string, status: JobStatus, patch: Partial<Job> = {}): Job {
    return this.store.transact((tx) => {
      const current = this.read(tx, id);
      if (current.status === status) {
        const same = { ...current, ...patch, status };
        tx.put(jobKey(id), same);
        return same;
      }
      if (!canTransition(current.status, status)) {
        throw new QueueError('conflict', `Invalid status transition of job "${id}" from "${current.status}" to "${status}".`, 'statusTransitionForbidden');
      }
      const next: Job = { ...current, ...patch, status };
      tx.put(jobKey(id), next);
      if (!isPending(status)) tx.delete(pendingKey(id));
      return next;
    });
  }

  /**
   * At startup: a job that was processing (or terminating) when the process stopped cannot be
   * resumed, so it ends `error` (or `terminated`) with the reason. Created and waiting jobs are
   * kept and run. Returns how many jobs were ended.
   */
  recoverInterrupted(now = new Date()): number {
    return this.store.transact((tx) => {
      let n = 0;
      for (const { key, value } of tx.list<Job>(JOB)) {
        if (value.status !== 'processing' && value.status !== 'terminating') continue;
        const killed = value.status === 'terminating';
        const startedAt = value.startTime ? Date.parse(value.startTime) : now.getTime();
        tx.put(key, {
          ...value,
          status: killed ? 'terminated' : 'error',
          endTime: now.toISOString(),
          processingMs: value.processingMs + Math.max(0, now.getTime() - startedAt),
          result: killed
            ? { ...value.result, message: 'Job was terminated: the service stopped while the job was being killed.' }
            : {
              ...value.result,
              message: INTERRUPTED,
              error: { type: 'application', exceptionId: `exception-interrupted-${value.id}` },
            },
        } satisfies Job);
        n++;
      }
      return n;
    });
  }

  isFinished(id: string): boolean {
    const job = this.get(id);
    return job !== undefined && isFinished(job.status);
  }

  private read(tx: MetadataTx, id: string): Job {
    const job = /^\d{1,15}$/.test(id) ? tx.get<Job>(jobKey(id)) : undefined;
    if (!job) throw jobNotFound(id);
    return job;
  }
}
